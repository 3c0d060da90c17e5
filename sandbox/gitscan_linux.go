package sandbox

import (
	"io/fs"
	"syscall"
	"time"
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
