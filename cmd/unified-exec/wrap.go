package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/unified-exec/unified-exec/orchestrator"
)

func cmdWrap(f mainFlags, argv []string) int {
	if len(argv) == 0 {
		errorf("no command after --: give the command to run, e.g. unified-exec -- make test")
		return exitInternal
	}
	o, err := newOrchestrator(f, false)
	if err != nil {
		errorf("%v", err)
		return exitInternal
	}
	defer o.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	code, err := o.Run(ctx, orchestrator.RunRequest{Argv: argv, Workdir: f.workspace, Output: os.Stdout})
	if err != nil {
		errorf("%v", err)
		return exitInternal
	}
	return code
}
