//go:build !unix

package sandbox

import "os"

// changeMark: no inode to tell here (see the unix one).
func changeMark(f *os.File) (mark string, links uint64, ok bool) { return "", 0, false }

// changedAt: the modification time here (see the unix one).
func changedAt(path string) (int64, bool) {
	info, err := os.Lstat(path)
	if err != nil {
		return 0, false
	}
	return info.ModTime().UnixNano(), true
}
