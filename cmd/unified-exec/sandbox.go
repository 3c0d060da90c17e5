package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/unified-exec/unified-exec/orchestrator"
	"github.com/unified-exec/unified-exec/ptyrun"
	"github.com/unified-exec/unified-exec/sandbox"
)

// cmdSandbox: `unified-exec sandbox status [--policy FILE] [--workspace DIR]`.
func cmdSandbox(args []string) int {
	if len(args) == 0 || args[0] != "status" {
		errorf("sandbox: unknown subcommand; use: unified-exec sandbox status [--policy FILE] [--workspace DIR]")
		return 2
	}
	fs := flag.NewFlagSet("sandbox status", flag.ContinueOnError)
	file := fs.String("policy", "", "policy file (default: the embedded policy)")
	ws := fs.String("workspace", ".", "workspace directory")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	// The report is made where commands run (the program namespace
	// serve and wrap enter), and checked by starting one.
	ptyrun.EnterNamespace()
	o, err := newOrchestrator(mainFlags{policy: *file, workspace: *ws}, false)
	if err != nil {
		errorf("%v", err)
		return exitInternal
	}
	defer o.Close()
	report, ok := sandboxReport(o)
	fmt.Print(report)
	if !ok {
		return 1
	}
	return 0
}

// sandboxReport says what this host enforces for the policy's sandbox,
// checked by starting `true` through the path every command takes; ok is
// false when that failed.
func sandboxReport(o *orchestrator.Orchestrator) (string, bool) {
	pol := o.Policy()
	st := sandbox.HostStatus()
	plan, err := sandbox.Compile(pol.Sandbox, o.Workspace())
	if err != nil {
		return st.String() + fmt.Sprintf("policy sandbox: %v\n", err), false
	}
	plan = plan.WithNetwork(pol.NetworkMode())
	report := sandbox.Describe(st, pol.Sandbox, plan) + networkStatus(o)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := o.Check(ctx); err != nil {
		if errors.Is(err, orchestrator.ErrSandboxUnavailable) {
			return report + "check: commands are refused: " + err.Error() + "\n", false
		}
		return report + "ENFORCEMENT: BROKEN: a command could not start through the real path: " + err.Error() + "\n", false
	}
	return report + "check: a command started through the real path and exited 0\n", true
}
