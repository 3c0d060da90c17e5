// Command unified-exec lets an AI agent run shell commands safely: it
// serves the unified-exec tools over MCP (stdio), or wraps one command.
//
//	unified-exec [--policy FILE] [--workspace DIR] -- CMD [ARG...]
//	unified-exec [--policy FILE] [--workspace DIR]
//	unified-exec policy check [FILE]
//	unified-exec policy explain [--policy FILE] -- CMD...
//	unified-exec sandbox status
//	unified-exec tools [--format mcp|openai]
//	unified-exec version
package main

import (
	"fmt"
	"os"

	"github.com/unified-exec/unified-exec/ptyrun"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// Exit codes of unified-exec itself.
const (
	exitRefused  = 126 // forbidden, or approval refused
	exitInternal = 125 // our own error: bad policy, sandbox unavailable
)

func main() {
	ptyrun.MaybeRunHelper(helperApply)
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "version":
			fmt.Println("unified-exec", version)
			return 0
		case "tools":
			return cmdTools(args[1:])
		case "policy":
			return cmdPolicy(args[1:])
		case "sandbox":
			return cmdSandbox(args[1:])
		case "help", "-h", "--help":
			fmt.Print(usage)
			return 0
		}
	}
	return cmdMain(args)
}

const usage = `unified-exec: run shell commands for AI agents, safely.

  unified-exec [--policy FILE] [--workspace DIR] -- CMD [ARG...]   run one command through the policy
  unified-exec [--policy FILE] [--workspace DIR]                   serve the MCP tools over stdio
  unified-exec policy show                                         print the default policy (to copy and edit)
  unified-exec policy check [FILE]                                 validate a policy file
  unified-exec policy explain [--policy FILE] -- CMD...            show the decision for a command
  unified-exec sandbox status                                      what this host enforces
  unified-exec tools [--format mcp|openai]                         the tool schemas
  unified-exec version

Without --policy the embedded default policy applies.
Exit codes when wrapping: the command's own; 126 refused; 125 unified-exec's own error.
`

func errorf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "unified-exec: "+format+"\n", a...)
}
