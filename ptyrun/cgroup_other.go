//go:build unix && !linux

package ptyrun

import (
	"fmt"
	"syscall"
)

// procLimit needs Linux cgroups; elsewhere no session gets one.
type procLimit struct{}

// ProcessLimitAvailable reports false: process limits use Linux cgroups.
func ProcessLimitAvailable() (bool, error) {
	return false, fmt.Errorf("process limits need Linux cgroups: %w", ErrUnsupported)
}

func newProcLimit(int, string) (*procLimit, error) {
	_, err := ProcessLimitAvailable()
	return nil, err
}

func (*procLimit) startIn(_ *syscall.SysProcAttr, start func() error) error { return start() }
func (*procLimit) hitMax() int                                              { return 0 }
func (*procLimit) close() error                                             { return nil }
