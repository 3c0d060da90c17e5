// Package cli is the command line of unified-exec: it serves the
// unified-exec tools over MCP (stdio), or wraps one command. Two programs
// run it: unified-exec, which wraps commands and carries no MCP server
// (its start is the wrapper's, see [Main]), and unified-exec-mcp, which
// carries one; unified-exec starts unified-exec-mcp, next to it, to serve.
//
//	unified-exec [--policy FILE] [--workspace DIR] -- CMD [ARG...]
//	unified-exec [--policy FILE] [--workspace DIR]
//	unified-exec policy check [FILE]
//	unified-exec policy explain [--policy FILE] -- CMD...
//	unified-exec sandbox status
//	unified-exec tools [--format mcp|openai]
//	unified-exec version
package cli

import (
	"errors"
	"flag"
	"fmt"
	"github.com/unified-exec/unified-exec/internal/tracepoint"
	"os"
	"strings"

	"github.com/unified-exec/unified-exec/ptyrun"
)

// version is set at build time with -ldflags
// "-X github.com/unified-exec/unified-exec/cmd/internal/cli.version=...".
var version = "0.1.0-dev"

// Exit codes of unified-exec itself.
const (
	exitRefused  = 126 // forbidden, or approval refused
	exitInternal = 125 // our own error: bad policy, sandbox unavailable
	exitNotFound = 127 // the command is not found, as a shell says
	// exitHandOver is no exit code: run returns it when the relay is to
	// start unified-exec-mcp for the command once this program has
	// exited (see handOver).
	exitHandOver = -1
)

// Main runs the command line with the program's MCP server, m; nil in
// unified-exec itself, whose every initialisation is paid by each wrapped
// command's start: the server's SDK, JSON Schema and the rest are
// unified-exec-mcp's, which serves in its stead (see execServer).
func Main(m *MCP) {
	mcp = m
	if m != nil {
		// Started by unified-exec's execServer, or by hand: either way
		// not for the commands to see.
		os.Unsetenv(serverExecEnv)
	}
	tracepoint.Mark("main")
	relayEntered()
	ptyrun.MaybeRunHelper(helperApply)
	code := run(os.Args[1:])
	if code == exitHandOver {
		code = 0
		if !handOverOnExit() {
			errorf("%s: the relay could not be told to start the MCP server", handOverWhat)
			code = exitInternal
		}
	}
	tracepoint.Mark("exit")
	os.Exit(code)
}

func run(args []string) int {
	// The flags of the wrapper and the server may also come before a
	// subcommand: `unified-exec --policy p.toml sandbox status`.
	globals, rest := leadingFlags(args)
	if len(rest) > 0 {
		if sub := subcommands[rest[0]]; sub != nil {
			return sub(rest[1:], globals)
		}
	}
	return cmdMain(args)
}

// subcommands by name: each gets the words after its name and the flags
// given before it. Any other first word is the command to wrap. (The
// relay, relay_linux.go, knows these names too: TestRelayDecidesAsMain.)
var subcommands = map[string]func(args, globals []string) int{
	"version":   printVersion,
	"--version": printVersion,
	"-version":  printVersion,
	"tools":     func(args, _ []string) int { return cmdTools(args) },
	"policy":    func(args, globals []string) int { return cmdPolicy(withFlags(args, globals)) },
	"sandbox":   func(args, globals []string) int { return cmdSandbox(withFlags(args, globals)) },
	"help":      printUsage,
	"-h":        printUsage,
	"--help":    printUsage,
	"-help":     printUsage,
}

func printVersion(_, _ []string) int {
	fmt.Println("unified-exec", version)
	return 0
}

func printUsage(_, _ []string) int {
	fmt.Print(usage)
	return 0
}

// runsMain reports whether run(args) goes on to cmdMain (serve or wrap),
// which enters the program's namespace.
func runsMain(args []string) bool {
	_, rest := leadingFlags(args)
	return len(rest) == 0 || subcommands[rest[0]] == nil
}

// entersNamespace says whether run, for args, enters the program's own
// namespace: it serves or wraps (runsMain), and, in a program without an
// MCP server (server false), wraps: to serve it starts unified-exec-mcp,
// which enters its own. (cmdMain's flag parse fails where this and the
// relay differ.)
func entersNamespace(args []string, server bool) bool {
	if !runsMain(args) {
		return false
	}
	if server {
		return true
	}
	_, rest := leadingFlags(args)
	return len(rest) > 0 && (rest[0] == "--" || rest[0] == "-" || !strings.HasPrefix(rest[0], "-"))
}

// leadingFlags splits the wrapper's and server's flags off the front of
// args (up to the first other word, or --).
func leadingFlags(args []string) (flags, rest []string) {
	valued := map[string]bool{"policy": true, "workspace": true, "sandbox": true}
	i := 0
	for i < len(args) {
		a := args[i]
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if a == "--" || !strings.HasPrefix(a, "-") || (!valued[name] && name != "network") {
			break
		}
		if valued[name] && !hasValue {
			if i+1 >= len(args) {
				break
			}
			i++
		}
		i++
	}
	return args[:i], args[i:]
}

// withFlags puts flags given before a subcommand after its own name
// ("explain", "status"), where its flag set reads them.
func withFlags(sub, flags []string) []string {
	if len(flags) == 0 || len(sub) == 0 || strings.HasPrefix(sub[0], "-") {
		return append(append([]string(nil), flags...), sub...)
	}
	return append(append([]string{sub[0]}, flags...), sub[1:]...)
}

const usage = `unified-exec: run shell commands for AI agents, safely.

  unified-exec [--policy FILE] [--workspace DIR] -- CMD [ARG...]   run one command through the policy
  unified-exec [--policy FILE] [--workspace DIR]                   serve the MCP tools over stdio
  unified-exec policy show                                         print the default policy (to copy and edit)
  unified-exec policy check [FILE]                                 validate a policy file
  unified-exec policy explain [--policy FILE] -- CMD...            show the decision for a command
  unified-exec sandbox status                                      what this host enforces
  unified-exec tools [--format mcp|openai]                         the tool schemas
  unified-exec version | --version

Flags may come before a subcommand (unified-exec --policy FILE sandbox status); every
subcommand takes -h. To wrap a program named like a subcommand, put it after --.

Without --policy the embedded default policy applies.
Exit codes when wrapping: the command's own; 127 not found; 126 refused; 125 unified-exec's own error.
`

// helpOr2 is the exit code of a flag parse that failed: 0 for -h (the
// flag set printed its help), 2 for a bad flag.
func helpOr2(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}

func errorf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "unified-exec: "+format+"\n", a...)
}
