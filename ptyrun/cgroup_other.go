//go:build unix && !linux

package ptyrun

import (
	"fmt"
	"os/exec"
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

func (*procLimit) members() []int   { return nil }
func (*procLimit) setMax(int) error { return nil }

// spare: no threads are prepared here (see Forker).
type spare struct{ limit *procLimit }

func (f *Forker) take(bool, []byte) *spare { return nil }
func (s *spare) discardTaken()             {}
func (*procLimit) hitMax() int             { return 0 }
func (*procLimit) close() error            { return nil }
func (*procLimit) kill()                   {}

// fork starts cmd; thread sandboxes are Linux-only.
func (p *Process) fork(cmd *exec.Cmd, prepare func() error) error {
	if prepare != nil {
		return fmt.Errorf("thread sandboxes need Linux: %w", ErrUnsupported)
	}
	return cmd.Start()
}
