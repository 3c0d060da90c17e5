package cli

import (
	"context"
	"errors"
	"github.com/unified-exec/unified-exec/internal/tracepoint"
	"os"
	"os/signal"
	"syscall"

	"github.com/unified-exec/unified-exec/orchestrator"
	"github.com/unified-exec/unified-exec/ptyrun"
	"github.com/unified-exec/unified-exec/sandbox"
)

// cmdWrap runs one command through the orchestrator and exits with its
// exit code; 126 when refused; 125 for our own errors.
func cmdWrap(f mainFlags, argv []string) int {
	if len(argv) == 0 {
		errorf("no command after --: give the command to run, e.g. unified-exec -- make test")
		return exitInternal
	}
	// One command: the repository search needs no change reports.
	sandbox.WatchDirectories(false)
	o, err := newOrchestrator(f, false)
	if err != nil {
		errorf("%v", err)
		return exitInternal
	}
	defer o.Close()
	tracepoint.Mark("orchestrator ready")
	// The command runs in a session of its own, out of reach of the
	// terminal's Ctrl-C: the orchestrator passes what we receive on to it.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	stdin := os.Stdin
	if ptyrun.StartedInBackground() {
		// `unified-exec -- make test &` in an interactive shell: the
		// terminal is the foreground job's. Not set raw (which stopped
		// the wrapper at once: SIGTTOU), and no input: the command, in a
		// session of its own, would read the keys typed to that job.
		// Its output goes to the terminal as a background job's does.
		stdin = nil
	}
	code, err := o.Run(context.Background(), orchestrator.RunRequest{Argv: argv, Stdin: stdin, Stdout: os.Stdout, Stderr: os.Stderr, Sandbox: f.sandbox, Network: f.network, Signals: sigs})
	tracepoint.Mark("run returned")
	var refused *orchestrator.RefusedError
	switch {
	case errors.As(err, &refused):
		errorf("%v", refused.Reason)
		return exitRefused
	case errors.Is(err, orchestrator.ErrNotFound):
		errorf("%v", err)
		return exitNotFound
	case err != nil:
		errorf("%v", err)
		return exitInternal
	}
	return code
}
