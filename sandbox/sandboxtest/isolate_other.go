//go:build !linux

package sandboxtest

import (
	"errors"
	"syscall"
)

func isolated() (*syscall.SysProcAttr, error) {
	return nil, errors.New("sandboxtest: namespaces are Linux-only")
}
