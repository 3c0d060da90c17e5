//go:build unix && !linux

package ptyrun

import (
	"fmt"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

func platformAttr(attr *syscall.SysProcAttr, isolate bool) error {
	if isolate {
		return fmt.Errorf("process isolation needs Linux namespaces: %w", ErrUnsupported)
	}
	return nil
}

// IsolationAvailable reports false: namespaces are Linux-only.
func IsolationAvailable() (bool, error) {
	return false, fmt.Errorf("PID namespaces are Linux-only: %w", ErrUnsupported)
}

// findMarked cannot read other processes' environments here; the kill
// relies on the process group.
func findMarked(string, string) []int { return nil }

func runHelper(Apply) int {
	fmt.Fprintln(os.Stderr, "unified-exec helper: not supported on this platform")
	return 125
}

func reapOrphans([]int) {}

func sessionMembers(int) []int { return nil }

func waitExited(int) bool { return false }

type seenProc struct {
	pid   int
	start uint64
}

func procStart(int) uint64 { return 0 }

func (seenProc) same() bool { return false }

// WaitingForInput is false: only Linux exposes what a process waits on.
func (p *Process) WaitingForInput() bool { return false }

// EnterNamespace returns false: namespaces are Linux-only.
func EnterNamespace() bool { return false }

// EndStrays reports false: namespaces are Linux-only.
func EndStrays() bool { return false }

// InOwnNamespace reports false: namespaces are Linux-only.
func InOwnNamespace() bool { return false }

func becomeSubreaper() {}

var subreaperSet atomic.Bool

func startChild(cmd *exec.Cmd) error { return cmd.Start() }

func reaped(int) {}

// terminalSocket: helpers with namespaces are Linux-only.
func terminalSocket() (*os.File, *os.File, error) { return nil, nil, ErrUnsupported }

// insideOwn: no program namespace here.
var insideOwn bool

func unshareMountNS() error { return ErrUnsupported }

// threadMountNS: no namespaces here.
func threadMountNS() (string, *os.File) { return "", nil }

// RunOwned is cmd.Run: no reaper here.
func RunOwned(cmd *exec.Cmd) error { return cmd.Run() }

// Relayed does nothing: namespaces are Linux-only.
func Relayed(relay int, background bool) {}

// StartedInBackground reports whether the program was started in the
// background of the session of the terminal on its stdin.
func StartedInBackground() bool {
	fg, err := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	return err == nil && fg != syscall.Getpgrp()
}

// RelayEnded does nothing: namespaces are Linux-only.
func RelayEnded() {}
