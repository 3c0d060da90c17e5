package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/unified-exec/unified-exec/mcpserver"
	"github.com/unified-exec/unified-exec/orchestrator"
)

// mainFlags are the flags of the wrapper and the server.
type mainFlags struct {
	policy    string
	workspace string
	sandbox   string
	network   bool
}

func parseMain(args []string) (mainFlags, []string, error) {
	var f mainFlags
	fs := flag.NewFlagSet("unified-exec", flag.ContinueOnError)
	fs.StringVar(&f.policy, "policy", "", "policy file (default: the embedded policy)")
	fs.StringVar(&f.workspace, "workspace", "", "workspace directory (default: the current directory)")
	fs.StringVar(&f.sandbox, "sandbox", "", "sandbox mode for the wrapped command: read-only, workspace-write, danger-full-access")
	fs.BoolVar(&f.network, "network", false, "allow network access for the wrapped command")
	fs.Usage = func() { fmt.Fprint(os.Stderr, usage) }
	if err := fs.Parse(args); err != nil {
		return f, nil, err
	}
	if f.workspace == "" {
		f.workspace, _ = os.Getwd()
	}
	abs, err := filepath.Abs(f.workspace)
	if err != nil {
		return f, nil, err
	}
	f.workspace = abs
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return f, nil, fmt.Errorf("workspace %q is not a directory", abs)
	}
	return f, fs.Args(), nil
}

func cmdMain(args []string) int {
	f, rest, err := parseMain(args)
	if err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		errorf("%v", err)
		return exitInternal
	}
	dashdash := len(args) > 0 && (len(rest) > 0 || args[len(args)-1] == "--")
	if len(rest) > 0 || dashdash {
		return cmdWrap(f, rest)
	}
	return cmdServe(f)
}

func cmdServe(f mainFlags) int {
	o, err := newOrchestrator(f, true)
	if err != nil {
		errorf("%v", err)
		return exitInternal
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	srv := mcpserver.New(o, version)
	if err := srv.Run(ctx, mcpserver.Transport(os.Stdin, os.Stdout)); err != nil && ctx.Err() == nil {
		errorf("server: %v", err)
		return 1
	}
	return 0
}

func newOrchestrator(f mainFlags, server bool) (*orchestrator.Orchestrator, error) {
	return orchestrator.New(orchestrator.Config{Workspace: f.workspace})
}

// helperApply applies the sandbox plan inside the re-exec helper.
var helperApply func([]byte) error
