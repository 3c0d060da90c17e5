//go:build !unix

package unifiedexec

import "syscall"

// sigCont continues a stopped process (0 where there is none).
const sigCont = syscall.Signal(0)
