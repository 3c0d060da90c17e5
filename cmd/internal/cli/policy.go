package cli

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/unified-exec/unified-exec/approval"
	"github.com/unified-exec/unified-exec/policy"
	"github.com/unified-exec/unified-exec/sandbox"
)

// cmdPolicy: `policy check [FILE]` and `policy explain [--policy FILE] -- CMD...`.
func cmdPolicy(args []string) int {
	const policyUsage = "usage: unified-exec policy show | check [FILE] | explain [--policy FILE] [--workspace DIR] [--escalated] -- CMD...\n\n" +
		"  show     print the embedded default policy, to copy and edit\n" +
		"  check    validate a policy file as a run would (exit 1 with file:line on a problem)\n" +
		"  explain  the decision and the sandbox for a command (exit 1 when it would be refused)\n"
	if len(args) == 0 {
		errorf("policy: a subcommand is needed\n%s", policyUsage)
		return 2
	}
	switch args[0] {
	case "-h", "--help", "-help", "help":
		fmt.Print(policyUsage)
		return 0
	case "show":
		// The embedded default, to copy and edit: its comments document
		// every key.
		os.Stdout.Write(policy.DefaultTOML())
		return 0
	case "check":
		fs := flag.NewFlagSet("policy check", flag.ContinueOnError)
		fs.Usage = func() {
			fmt.Fprintln(fs.Output(), "usage: unified-exec policy check [--workspace DIR] [FILE]\n\nValidates a policy file (default: the embedded one) as a run would: keys, types and values, and that its paths exist.")
			fs.PrintDefaults()
		}
		flagFile := fs.String("policy", "", "policy file (same as FILE)")
		ws := fs.String("workspace", ".", "workspace directory the policy is checked against")
		if err := fs.Parse(args[1:]); err != nil {
			return helpOr2(err)
		}
		file := *flagFile
		if fs.NArg() > 0 {
			file = fs.Arg(0)
		}
		pol, err := loadPolicy(file)
		if err != nil {
			errorf("%v", err)
			return 1
		}
		// What a run would refuse: a sandbox that cannot be compiled here
		// (a writable root that does not exist).
		if _, err := sandbox.Compile(pol.Sandbox, *ws); err != nil {
			loc := pol.Source
			if line := pol.Line("sandbox.writable_roots"); line > 0 {
				loc = fmt.Sprintf("%s:%d", pol.Source, line)
			}
			errorf("%s: %v", loc, err)
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
			return helpOr2(err)
		}
		argv := fs.Args()
		if len(argv) == 0 {
			errorf("policy explain: give the command after --")
			return 2
		}
		pol, err := loadPolicy(*file)
		if err != nil {
			errorf("%v", err)
			return 1
		}
		// A single argument is a shell line, as the model sends it.
		if len(argv) == 1 {
			argv = []string{"/bin/bash", "-lc", argv[0]}
		}
		cwd, err := filepath.Abs(*ws)
		if err != nil {
			cwd = *ws
		}
		home, _ := os.UserHomeDir()
		d := approval.Decide(approval.Request{Argv: argv, Cwd: cwd, Home: home, Escalated: *escalate}, pol)
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
				if pol.Source != policy.DefaultSource {
					plan.AddReadOnlyFiles(pol.Source, pol.Audit.Path)
				}
				fmt.Printf("sandbox:\n")
				fmt.Print(indent(plan.WithNetwork(pol.NetworkMode()).String()))
				if plan.Enforced() {
					fmt.Print(networkPolicy(pol))
				}
			}
		}
		if d.Outcome == approval.Forbidden {
			return 1 // a run would refuse it
		}
		return 0
	}
	errorf("policy: unknown subcommand %q", args[0])
	return 2
}

func indent(s string) string {
	var b strings.Builder
	for l := range strings.Lines(s) {
		b.WriteString("  " + strings.TrimSuffix(l, "\n") + "\n")
	}
	return b.String()
}
