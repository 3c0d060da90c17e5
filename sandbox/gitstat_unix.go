//go:build unix

package sandbox

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// changeMark is what of f's inode tells a write that its content's hash
// may not (see contentOf): its number, its change time (which every
// write moves, and no one can set back) and how many names it has (one
// more is one more way to write what a read-only mount covers by path).
func changeMark(f *os.File) (mark string, links uint64, ok bool) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return "", 0, false
	}
	sec, nsec := st.Ctim.Unix()
	return fmt.Sprintf("inode %d changed %d.%09d", st.Ino, sec, nsec), uint64(st.Nlink), true
}

// changedAt is the change time of path itself (not followed), in
// nanoseconds: what no one can set back. ok is false where it cannot be
// read.
func changedAt(path string) (int64, bool) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return 0, false
	}
	return st.Ctim.Nano(), true
}
