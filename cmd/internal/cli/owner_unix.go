//go:build unix

package cli

import (
	"os"
	"syscall"
)

// fileOwner is the user id that owns the file st describes.
func fileOwner(st os.FileInfo) int {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(s.Uid)
	}
	return -1
}
