package main

import (
	"flag"
	"fmt"

	"github.com/unified-exec/unified-exec/policy"
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
	pol, err := loadPolicy(*file)
	if err != nil {
		errorf("%v", err)
		return exitInternal
	}
	fmt.Print(sandboxReport(pol, *ws))
	return 0
}

// sandboxReport says what this host enforces for the policy's sandbox.
func sandboxReport(pol *policy.Policy, workspace string) string {
	st := sandbox.HostStatus()
	plan, err := sandbox.Compile(pol.Sandbox, workspace)
	if err != nil {
		return st.String() + fmt.Sprintf("policy sandbox: %v\n", err)
	}
	return sandbox.Describe(st, pol.Sandbox, plan)
}
