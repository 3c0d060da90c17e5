package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"

	"github.com/unified-exec/unified-exec/internal/tracepoint"
	"github.com/unified-exec/unified-exec/orchestrator"
	"github.com/unified-exec/unified-exec/policy"
	"github.com/unified-exec/unified-exec/ptyrun"
)

// mainFlags are the flags of the wrapper and the server.
type mainFlags struct {
	policy    string
	workspace string
	sandbox   string
	network   bool
	// forker is made by cmdMain for the orchestrator (not a flag).
	forker *orchestrator.Forker
	// loaded gives the policy, read by cmdMain beside the rest of the
	// start-up (not a flag); nil: newOrchestrator reads it.
	loaded func() (*policy.Policy, error)
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
	wrap := len(rest) > 0 || dashdash
	if !wrap && mcp == nil {
		// Before any namespace: unified-exec-mcp enters its own.
		return execServer("serving MCP")
	}
	// Parsing the policy takes a millisecond or more at start: beside the
	// namespace and the first forking thread, not before them.
	f.loaded = loadPolicyAhead(f.policy)
	if wrap && !relayed() {
		// No relay made our namespaces: a command for unified-exec-mcp
		// goes to it before any, as serving does.
		if code, ok := handOver(f); ok {
			return code
		}
	}
	// Serve and wrap run in a PID namespace of their own where the host
	// allows: nothing a command starts can outlive unified-exec, even
	// killed with SIGKILL (the process here only waits and relays), and
	// sessions start without a helper, sandboxed on the forking thread.
	// (UNIFIED_EXEC_SPAWN=helper starts every command through the
	// namespace-per-session helper instead: see newOrchestratorWith.)
	ptyrun.EnterNamespace()
	tracepoint.Mark("namespace entered")
	ignoreStraySignals()
	// The first thread commands fork from is prepared from here on, beside
	// the rest of the start-up (see ptyrun.Forker); the manager takes it
	// over, and this Close is only for the ways out before it.
	f.forker = orchestrator.NewForker(wrap)
	tracepoint.Mark("first forking thread under way")
	defer f.forker.Close()
	// Output is read in larger pieces when the server does not preempt
	// the commands that write it (see ptyrun.BatchScheduling); commands
	// themselves still start under the normal policy.
	if err := ptyrun.BatchScheduling(true); err != nil {
		ptyrun.BatchScheduling(false)
		fmt.Fprintf(os.Stderr, "unified-exec: %v; output is read under the normal policy\n", err)
	}
	if relayed() {
		if wrap {
			if code, ok := handOver(f); ok {
				return code
			}
		}
		// No command of ours has run yet: from here on none can reach
		// the hand-over pipe and have itself run again.
		closeHandOver()
	}
	if wrap {
		return cmdWrap(f, rest)
	}
	return cmdServe(f)
}

func cmdServe(f mainFlags) int {
	var srvp atomic.Pointer[Server]
	o, err := newOrchestratorWith(f, true, func(id, code int, last []string) {
		if srv := srvp.Load(); srv != nil {
			(*srv).NotifyExit(id, code, last)
		}
	})
	if err != nil {
		errorf("%v", err)
		return exitInternal
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	defer stop()
	report, _ := sandboxReport(o)
	fmt.Fprint(os.Stderr, "unified-exec: serving MCP on stdio; workspace "+o.Workspace()+"; policy "+o.Policy().Source+"\n"+report)
	srv := mcp.New(o, version)
	srvp.Store(&srv)
	stopStats := serveStats(os.Getenv("UNIFIED_EXEC_STATS"))
	defer stopStats()
	if err := srv.Serve(ctx, os.Stdin, os.Stdout); err != nil && ctx.Err() == nil {
		errorf("server: %v", err)
		return 1
	}
	return 0
}
