//go:build linux

package cli

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/unified-exec/unified-exec/ptyrun"
)

// straySignals are the signals that end a Go program with a stack dump,
// which nothing legitimate sends to the program inside its namespace: the
// relay passes on only SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and
// SIGUSR2, and the kernel's own (a fault) are handled as faults whatever
// this says. One of them from inside is a command's attack on the server
// (red teams 39 and 40 reached the thread a command was forked from and
// sent SIGABRT; the signal guard closes the ways known, this takes the
// sting out of any other).
var straySignals = []os.Signal{syscall.SIGABRT, syscall.SIGTRAP, syscall.SIGILL, syscall.SIGSYS, syscall.SIGSTKFLT}

// ignoreStraySignals has the program take and drop straySignals, where it
// runs in a namespace of its own. Commands still start with them at their
// default (a signal the runtime takes is reset in the child at fork).
// The drain ends with the program.
func ignoreStraySignals() {
	if !ptyrun.InOwnNamespace() {
		return
	}
	ch := make(chan os.Signal, 8)
	signal.Notify(ch, straySignals...)
	go func() {
		for range ch {
		}
	}()
}
