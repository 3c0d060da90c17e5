package sandboxtest

import (
	"syscall"

	"github.com/unified-exec/unified-exec/internal/userns"
)

// isolated starts a child in new PID and mount namespaces (through a user
// namespace for an ordinary user, as unified-exec does); it dies with the
// test.
func isolated() (*syscall.SysProcAttr, error) {
	kind, err := userns.Probe()
	if err != nil {
		return nil, err
	}
	attr := userns.Attr(kind, 0)
	attr.Pdeathsig = syscall.SIGKILL
	return attr, nil
}
