package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/unified-exec/unified-exec/orchestrator"
	"github.com/unified-exec/unified-exec/ptyrun"
	"github.com/unified-exec/unified-exec/sandbox"
)

// cmdSandbox: `unified-exec sandbox status [--policy FILE] [--workspace DIR]`.
func cmdSandbox(args []string) int {
	const sandboxUsage = "usage: unified-exec sandbox status [--policy FILE] [--workspace DIR]\n\n" +
		"What this host enforces for the policy, checked by starting a command the way every command starts (exit 1 when commands would not run).\n"
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help" || args[0] == "help") {
		fmt.Print(sandboxUsage)
		return 0
	}
	// Flags given before "status" (unified-exec --policy F sandbox status).
	var pre []string
	for len(args) > 0 && args[0] != "status" && strings.HasPrefix(args[0], "-") {
		pre, args = append(pre, args[0]), args[1:]
	}
	if len(args) == 0 || args[0] != "status" {
		errorf("sandbox: unknown subcommand\n%s", sandboxUsage)
		return 2
	}
	fs := flag.NewFlagSet("sandbox status", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), sandboxUsage) }
	file := fs.String("policy", "", "policy file (default: the embedded policy)")
	ws := fs.String("workspace", ".", "workspace directory")
	if err := fs.Parse(append(pre, args[1:]...)); err != nil {
		return helpOr2(err)
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
	fmt.Print(report + snapshotReport(o))
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
	st := o.Status()
	plan, err := sandbox.Compile(pol.Sandbox, o.Workspace())
	if err != nil {
		return st.String() + fmt.Sprintf("ENFORCEMENT: refused: the policy's sandbox cannot be set up here: %v\n", err), false
	}
	plan = plan.WithNetwork(pol.NetworkMode())
	report := sandbox.Describe(st, pol.Sandbox, plan) + networkStatus(o) + "spawn: " + o.Strategy() + "\n"
	for _, n := range plan.Notes {
		report += "note: " + n + "\n"
	}
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
