//go:build unix && !linux

package ptyrun

import (
	"os"
	"strconv"
	"syscall"
)

// closeInheritedOnExec marks every descriptor above 2 close-on-exec, so
// that what the caller left open reaches no command.
func closeInheritedOnExec() {
	d, err := os.Open("/dev/fd")
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		if fd, err := strconv.Atoi(n); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}
