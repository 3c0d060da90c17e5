//go:build unix

package sandbox

import (
	"io/fs"
	"syscall"
)

// statKey is the device and inode of fi, for the directory cache.
func statKey(fi fs.FileInfo) (fileKey, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileKey{}, false
	}
	return fileKey{dev: uint64(st.Dev), ino: uint64(st.Ino)}, true
}
