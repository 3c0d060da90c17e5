package ptyrun

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// closeInheritedOnExec marks every descriptor above 2 close-on-exec, so
// that what the caller left open (a TCP connection, a file opened for
// writing) reaches neither helpers nor commands: the runtime opens its own
// close-on-exec, and commands get only what Start hands them. This process
// keeps them. close_range (Linux 5.11) does it in one call; older kernels
// go through /proc/self/fd.
func closeInheritedOnExec() {
	if unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		if fd, err := strconv.Atoi(n); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
}
