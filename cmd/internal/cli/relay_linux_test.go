//go:build linux && cgo

package cli

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRelayDecidesAsMain: the relay (C, before the runtime) makes the
// program's namespaces exactly when run goes on to serve or wrap, which
// enters them (to wrap only, in unified-exec, which serves by starting
// unified-exec-mcp) — for the forms a user types and for random argument lists
// of flags, values, subcommand names (every one main knows) and words.
// A subcommand the relay took for a command would run inside a namespace
// made for nothing; a command it took for a subcommand would start the
// binary twice. The heap is given huge pages (hugeheap_linux.c) for one
// wrapped command, never for a server.
func TestRelayDecidesAsMain(t *testing.T) {
	forms := [][]string{
		{}, {"--"}, {"--", "make", "test"}, {"make", "test"}, {"--policy", "p.toml", "--", "true"},
		{"--policy=p.toml", "sandbox", "status"}, {"--workspace", "w", "policy", "check"}, {"-policy", "version"},
		{"--network", "--", "curl"}, {"--network=false", "tools"}, {"--sandbox", "read-only", "help"},
		{"--policy"}, {"--foo", "version"}, {"-h"}, {"--", "version"}, {"--workspace", "--", "version"},
		{"---policy", "x", "tools"}, {"--policy", "", "version"}, {"-", "version"}, {"--network", "sandbox"},
	}
	tokens := slices.Concat(slices.Collect(maps.Keys(subcommands)), []string{
		"--policy", "-policy=p", "--workspace", "--workspace=w", "-sandbox", "--sandbox=read-only", "--network",
		"-network=true", "--", "-", "make", "--foo", "-x", "", "=", "--=", "policy=x", "status", "check",
	})
	r := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		args := make([]string, r.IntN(6))
		for i := range args {
			args[i] = tokens[r.IntN(len(tokens))]
		}
		forms = append(forms, args)
	}
	for _, server := range []bool{true, false} {
		for _, args := range forms {
			c, huge := relayWouldEnter(args, server)
			if g := entersNamespace(args, server); c != g {
				t.Fatalf("unified-exec %q (with an MCP server: %v): the relay enters the namespace: %v; main serves or wraps there: %v", args, server, c, g)
			}
			// Huge pages for one wrapped command's heap, never a server's.
			if g := entersNamespace(args, false); huge != g {
				t.Fatalf("unified-exec %q (with an MCP server: %v): the relay gives the heap huge pages: %v; main wraps a command: %v", args, server, huge, g)
			}
		}
	}
}
