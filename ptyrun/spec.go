package ptyrun

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
)

// Spec describes a command to start.
type Spec struct {
	// Argv is the command, e.g. ["/bin/bash", "-lc", "make test"].
	Argv []string
	// Dir is the working directory; empty means the current one.
	Dir string
	// Env is the full environment; nil means the current process's.
	Env []string
	// TTY runs the command in a new pseudo-terminal; otherwise stdin is
	// /dev/null and stdout+stderr share one pipe (arrival order kept).
	TTY bool
	// Rows and Cols size the terminal; 0 means 24×80.
	Rows, Cols uint16
	// Output receives every byte the command writes, from the pump
	// goroutine, in order. It should not block for long.
	Output io.Writer
	// MaxProcs caps the processes and threads of the whole session (a
	// fork bomb stops there) with a cgroup of its own; 0 means no limit.
	// Start fails where the limit cannot be set (see
	// [ProcessLimitAvailable]).
	MaxProcs int
	// Pending, when set, counts the session until everything it had is
	// gone, its cgroup included, which is removed after Done is closed
	// (Kill waits for it too): an owner of many sessions waits on it
	// before it reports that nothing is left.
	Pending *sync.WaitGroup
	// Forker, when set, may fork the command from a thread it prepared
	// ahead of need in the session's cgroup (see [Forker]).
	Forker *Forker
	// Helper, when set, starts the command through a re-executed helper
	// that applies restrictions first (see [Helper]).
	Helper *Helper
	// Stdio, when set (pipes only, not TTY), are the command's stdin,
	// stdout and stderr themselves, passed as they are (the wrapper's
	// own): nothing is copied and Output is not used.
	Stdio *Stdio
}

// Stdio are the standard streams a command is given as they are.
type Stdio struct {
	Stdin, Stdout, Stderr *os.File
}

// ExitStatus is how a process ended.
type ExitStatus struct {
	// Code is the exit code, or 128+N for a death by signal N.
	Code int
	// Signal is the signal that killed the process, or 0.
	Signal syscall.Signal
}

// String gives "exit 3" or "signal SIGKILL (137)".
func (s ExitStatus) String() string {
	if s.Signal != 0 {
		return fmt.Sprintf("signal %s (%d)", SignalName(s.Signal), s.Code)
	}
	return fmt.Sprintf("exit %d", s.Code)
}

// Errors.
var (
	// ErrNoStdin: the process runs with pipes and stdin on /dev/null.
	ErrNoStdin = errors.New("stdin is closed (the command runs with pipes); rerun it with tty=true to write to it")
	// ErrNotFound: the program to run is not found, or not executable
	// (a shell's exit status 127).
	ErrNotFound = errors.New("not found or not executable")
	// ErrExited: the process has exited.
	ErrExited = errors.New("the process has exited")
	// ErrHelperNotInstalled: Spec.Helper was set but the binary never
	// called MaybeRunHelper, so re-executing it would run its main.
	ErrHelperNotInstalled = errors.New("the re-exec helper is not installed: call ptyrun.MaybeRunHelper at the start of main (or TestMain)")
	// ErrUnsupported: this platform cannot run commands.
	ErrUnsupported = errors.New("unsupported platform")
)
