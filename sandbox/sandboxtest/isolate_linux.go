package sandboxtest

import "syscall"

// isolated starts a child in new PID and mount namespaces; it dies with
// the test.
func isolated() (*syscall.SysProcAttr, error) {
	return &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}, nil
}
