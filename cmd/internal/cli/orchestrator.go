package cli

import (
	"fmt"
	"os"
	"slices"

	"github.com/unified-exec/unified-exec/approval"
	"github.com/unified-exec/unified-exec/internal/tracepoint"
	"github.com/unified-exec/unified-exec/orchestrator"
	"github.com/unified-exec/unified-exec/policy"
	"github.com/unified-exec/unified-exec/sandbox"
)

// helperApply applies the sandbox plan inside the re-exec helper.
var helperApply = sandbox.Apply

// loadPolicy reads --policy, or the embedded default.
func loadPolicy(file string) (*policy.Policy, error) {
	if file == "" {
		return policy.Default(), nil
	}
	return policy.Load(file)
}

// loadPolicyAhead starts loadPolicy(file) at once; the function it returns
// waits for the outcome.
func loadPolicyAhead(file string) func() (*policy.Policy, error) {
	var p *policy.Policy
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		p, err = loadPolicy(file)
	}()
	return func() (*policy.Policy, error) {
		<-done
		return p, err
	}
}

// effectivePolicy is the policy the flags give: the file's (or the
// embedded one) with --sandbox and --network applied.
func effectivePolicy(f mainFlags) (*policy.Policy, error) {
	load := f.loaded
	if load == nil {
		load = func() (*policy.Policy, error) { return loadPolicy(f.policy) }
	}
	pol, err := load()
	tracepoint.Mark("policy loaded")
	if err != nil {
		return nil, err
	}
	if f.sandbox != "" {
		if !slices.Contains([]string{policy.ModeReadOnly, policy.ModeWorkspaceWrite, policy.ModeDangerFullAccess}, f.sandbox) {
			return nil, fmt.Errorf("--sandbox %q: use read-only, workspace-write or danger-full-access", f.sandbox)
		}
		pol.Sandbox.Mode = f.sandbox
	}
	if f.network {
		pol.Sandbox.Network = true
	}
	return pol, nil
}

func newOrchestrator(f mainFlags, server bool) (*orchestrator.Orchestrator, error) {
	return newOrchestratorWith(f, server, nil)
}

func newOrchestratorWith(f mainFlags, server bool, onExit func(id, code int, last []string)) (*orchestrator.Orchestrator, error) {
	pol, err := effectivePolicy(f)
	if err != nil {
		return nil, err
	}
	var prompter approval.Prompter
	switch pol.Approval.Prompt {
	case "deny":
		prompter = approval.DenyPrompter{Why: "the policy says not to ask ([approval] prompt = \"deny\" in " + pol.Source + ")"}
	case "tty":
		prompter = &approval.TTYPrompter{OneCommand: !server}
	default: // auto: the terminal when wrapping; MCP elicitation in the server
		if !server {
			prompter = &approval.TTYPrompter{OneCommand: true}
		}
	}
	// UNIFIED_EXEC_SPAWN=helper: every command through the re-executed
	// helper in a namespace of its own, rather than forked from a
	// sandboxed thread (for comparison and as a fallback to reach for).
	helper := os.Getenv("UNIFIED_EXEC_SPAWN") == "helper"
	resolver, err := testResolver()
	if err != nil {
		return nil, err
	}
	return orchestrator.New(orchestrator.Config{Policy: pol, Workspace: f.workspace, Prompter: prompter, OnBackgroundExit: onExit, HelperPerSession: helper, OneCommand: !server, Forker: f.forker, NetworkResolver: resolver, OnSnapshot: snapshotLog(server)})
}
