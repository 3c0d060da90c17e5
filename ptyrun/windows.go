//go:build windows

package ptyrun

import (
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// Commands run on Linux (and, without a sandbox, other Unix systems);
// on Windows the package builds so that hosts can share code, and every
// start fails with ErrUnsupported.

// Start fails: this platform cannot run commands.
func Start(spec Spec) (*Process, error) { return nil, ErrUnsupported }

// Process is never made here.
type Process struct{}

func (p *Process) ForksRefused() int                   { return 0 }
func (p *Process) Pid() int                            { return 0 }
func (p *Process) TTY() bool                           { return false }
func (p *Process) Exited() <-chan struct{}             { return nil }
func (p *Process) Done() <-chan struct{}               { return nil }
func (p *Process) ExitStatus() ExitStatus              { return ExitStatus{} }
func (p *Process) Write(b []byte) (int, error)         { return 0, ErrUnsupported }
func (p *Process) TryWrite(b []byte) (int, error)      { return 0, ErrUnsupported }
func (p *Process) SetWriteDeadline(t time.Time) error  { return ErrUnsupported }
func (p *Process) Resize(rows, cols uint16) error      { return ErrUnsupported }
func (p *Process) Kill(grace time.Duration) ExitStatus { return ExitStatus{} }
func (p *Process) Signal(sig syscall.Signal) error     { return ErrUnsupported }
func closeInheritedOnExec()                            {}
func runHelper(apply Apply) int                        { return 125 }
func EnterNamespace() bool                             { return false }
func Relayed(relay int, background bool)               {}
func StartedInBackground() bool                        { return false }
func RelayEnded()                                      {}
func InOwnNamespace() bool                             { return false }
func EndStrays() bool                                  { return false }
func IsolationAvailable() (bool, error)                { return false, ErrUnsupported }
func ProcessLimitAvailable() (bool, error)             { return false, ErrUnsupported }
func BatchScheduling(on bool) error                    { return nil }
func SignalName(s syscall.Signal) string               { return "SIG" + strconv.Itoa(int(s)) }
func (p *Process) WaitingForInput() bool               { return false }

// RunOwned is cmd.Run: no reaper here.
func RunOwned(cmd *exec.Cmd) error { return cmd.Run() }
