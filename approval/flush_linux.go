package approval

import (
	"os"

	"golang.org/x/sys/unix"
)

// flushInput discards what was typed on the terminal f before the
// question was asked (keys typed ahead while the command ran, which would
// otherwise answer it); an error is ignored, as on a file that is no
// terminal. (Through SyscallConn, not Fd: Fd would put f in blocking
// mode, and closing it then no longer ends a read — cancelling the
// question.)
func flushInput(f *os.File) {
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { unix.IoctlSetInt(int(fd), unix.TCFLSH, unix.TCIFLUSH) })
	}
}
