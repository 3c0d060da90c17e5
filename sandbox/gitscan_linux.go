package sandbox

import (
	"bytes"
	"encoding/binary"
	"io/fs"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// statKey is the device, inode and change time of fi, for the directory
// cache. The change time, not the modification time: a command may set
// a folder's modification time back to what it was after making an entry
// in it (utimensat), and nothing sets the change time but the clock.
func statKey(fi fs.FileInfo) (fileKey, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileKey{}, false
	}
	return fileKey{dev: st.Dev, ino: st.Ino, ctime: time.Unix(st.Ctim.Unix())}, true
}

// readEntries lists the directory f with each entry's inode number, as
// the directory holds it (getdents64; os.ReadDir keeps no inode).
func readEntries(f *os.File) ([]dirEntry, error) {
	fd := int(f.Fd())
	buf := make([]byte, 8<<10)
	var entries []dirEntry
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "getdents", Path: f.Name(), Err: err}
		}
		if n <= 0 {
			return entries, nil
		}
		// struct linux_dirent64: d_ino u64, d_off s64, d_reclen u16,
		// d_type u8, d_name (NUL-terminated).
		for off := 0; off+19 <= n; {
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
			if reclen < 19 || off+reclen > n {
				return nil, &os.PathError{Op: "getdents", Path: f.Name(), Err: unix.EIO}
			}
			ino := binary.NativeEndian.Uint64(buf[off:])
			typ := buf[off+18]
			name := buf[off+19 : off+reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			off += reclen
			if ino == 0 || string(name) == "." || string(name) == ".." {
				continue
			}
			e := dirEntry{name: string(name), ino: ino}
			switch typ {
			case unix.DT_DIR:
				e.typ = fs.ModeDir
			case unix.DT_REG:
				e.typ = 0
			case unix.DT_LNK:
				e.typ = fs.ModeSymlink
			case unix.DT_UNKNOWN:
				var st unix.Stat_t
				if err := unix.Fstatat(fd, e.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
					continue // gone since
				}
				e.typ = fileType(st.Mode)
			default:
				e.typ = fs.ModeIrregular // a device, pipe or socket: none of these matters
			}
			entries = append(entries, e)
		}
	}
}

// fileType is the type bits of a stat mode.
func fileType(mode uint32) fs.FileMode {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFREG:
		return 0
	case unix.S_IFLNK:
		return fs.ModeSymlink
	}
	return fs.ModeIrregular
}

// hiddenByMode: this program may look names up in the folder dir (as
// git, run as the same user, may) but not list it, and a command run as
// this user could have made it so — the folder is this user's, or one it
// may write in. Another user's private folder in /tmp (mode 0711) is
// none of that: nothing a command made can be in it.
func hiddenByMode(dir string) bool {
	if unix.Access(dir, unix.X_OK) != nil {
		return false
	}
	var st unix.Stat_t
	if unix.Stat(dir, &st) != nil {
		return false
	}
	return int(st.Uid) == os.Geteuid() || unix.Access(dir, unix.W_OK) == nil
}
