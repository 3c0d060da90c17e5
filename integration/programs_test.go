//go:build linux

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestWrapperCarriesNoMCPServer: unified-exec, whose start is every
// wrapped command's, links no MCP server (its SDK's and JSON Schema's
// initialisations ran at each start: 0.925 of the wrapper's time without
// them); unified-exec-mcp carries it.
func TestWrapperCarriesNoMCPServer(t *testing.T) {
	deps := func(pkg string) []string {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v %s", pkg, err, out)
		}
		return strings.Fields(string(out))
	}
	server := []string{"github.com/unified-exec/unified-exec/mcpserver", "github.com/modelcontextprotocol/go-sdk/mcp", "github.com/google/jsonschema-go/jsonschema"}
	wrapper := deps("../cmd/unified-exec")
	for _, p := range server {
		for _, d := range wrapper {
			if d == p {
				t.Errorf("unified-exec links %s", p)
			}
		}
	}
	withServer := strings.Join(deps("../cmd/unified-exec-mcp"), " ")
	for _, p := range server {
		if !strings.Contains(withServer, p) {
			t.Errorf("unified-exec-mcp does not link %s", p)
		}
	}
}

// TestServeWithoutServerProgram: unified-exec alone, without
// unified-exec-mcp beside it, cannot serve: asked to (no command, or
// `tools`), it says which program is missing, where, and how to build
// it, and exits 125; it still wraps commands.
func TestServeWithoutServerProgram(t *testing.T) {
	requireSandbox(t)
	dir := t.TempDir()
	alone := filepath.Join(dir, "unified-exec")
	b, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, b, 0o755); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	for _, args := range [][]string{{"--workspace", ws}, {"tools"}, {"tools", "--format", "openai"}} {
		cmd := exec.Command(alone, args...)
		out, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 125 {
			t.Errorf("unified-exec %q alone: exit %d (%v), want 125: %s", args, code, err, out)
		}
		for _, want := range []string{filepath.Join(dir, "unified-exec-mcp"), "scripts/install", "go build -o"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("unified-exec %q alone does not say %q: %s", args, want, out)
			}
		}
	}
	out, err := exec.Command(alone, "--workspace", ws, "--", "sh", "-c", "echo wrapped").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "wrapped") {
		t.Errorf("unified-exec alone does not wrap: %v %s", err, out)
	}
}
