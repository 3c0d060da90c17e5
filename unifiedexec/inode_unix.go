//go:build unix

package unifiedexec

import (
	"os"
	"syscall"
)

// inode is a file's inode number: a profile file replaced by another
// (an editor's save) gets a new one.
func inode(st os.FileInfo) uint64 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(s.Ino)
	}
	return 0
}
