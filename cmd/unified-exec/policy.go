package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/unified-exec/unified-exec/approval"
	"github.com/unified-exec/unified-exec/policy"
	"github.com/unified-exec/unified-exec/sandbox"
)

// cmdPolicy: `policy check [FILE]` and `policy explain [--policy FILE] -- CMD...`.
func cmdPolicy(args []string) int {
	if len(args) == 0 {
		errorf("policy: use `unified-exec policy show`, `unified-exec policy check [FILE]` or `unified-exec policy explain [--policy FILE] -- CMD...`")
		return 2
	}
	switch args[0] {
	case "show":
		// The embedded default, to copy and edit: its comments document
		// every key.
		os.Stdout.Write(policy.DefaultTOML())
		return 0
	case "check":
		file := ""
		if len(args) > 1 {
			file = args[1]
		}
		pol, err := loadPolicy(file)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("%s: ok (approval %s, sandbox %s, %d rules)\n", pol.Source, pol.Approval.Mode, pol.Sandbox.Mode, len(pol.Rules))
		return 0
	case "explain":
		fs := flag.NewFlagSet("policy explain", flag.ContinueOnError)
		file := fs.String("policy", "", "policy file (default: the embedded policy)")
		ws := fs.String("workspace", ".", "workspace directory")
		escalate := fs.Bool("escalated", false, "judge it as a request to run without the sandbox")
		if err := fs.Parse(args[1:]); err != nil {
			return 2
		}
		argv := fs.Args()
		if len(argv) == 0 {
			errorf("policy explain: give the command after --")
			return 2
		}
		pol, err := loadPolicy(*file)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		// A single argument is a shell line, as the model sends it.
		if len(argv) == 1 {
			argv = []string{"/bin/bash", "-lc", argv[0]}
		}
		d := approval.Decide(approval.Request{Argv: argv, Cwd: *ws, Escalated: *escalate}, pol)
		fmt.Printf("command:  %s\n", approval.Display(argv))
		fmt.Printf("decision: %s (approval mode %s)\n", d.Outcome, pol.Approval.Mode)
		fmt.Printf("decided by: %s\n", d.By)
		if d.Rule != nil {
			fmt.Printf("rule:     line %d of %s\n", d.Rule.Line, pol.Source)
		}
		fmt.Printf("reason:   %s\n", d.Reason)
		if d.Parsed.Opaque != "" {
			fmt.Printf("not judgeable in advance: %s\n", d.Parsed.Opaque)
		}
		if d.Outcome != approval.Forbidden {
			sp := pol.Sandbox
			sp.Mode = d.Sandbox
			plan, err := sandbox.Compile(sp, *ws)
			if err != nil {
				fmt.Printf("sandbox:  %v\n", err)
			} else {
				fmt.Printf("sandbox:\n")
				fmt.Print(indent(plan.WithNetwork(pol.NetworkMode()).String()))
				if plan.Enforced() {
					fmt.Print(networkPolicy(pol))
				}
			}
		}
		return 0
	}
	errorf("policy: unknown subcommand %q", args[0])
	return 2
}

func indent(s string) string {
	out := ""
	for _, l := range splitLines(s) {
		out += "  " + l + "\n"
	}
	return out
}

func splitLines(s string) []string {
	var lines []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			lines = append(lines, s[start:i])
			start = i + 1
		}
	}
	if start < len(s) {
		lines = append(lines, s[start:])
	}
	return lines
}
