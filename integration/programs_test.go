//go:build linux

package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	copyTo(t, binary, alone, 0o755)
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

// TestServeRefusesUntrustedServerProgram (fresh-eyes review of session
// 21): unified-exec starts as its server only a program that is not
// itself and that no one but its owner (this program's owner, or root)
// may change. A link to it, or a copy of it, under the server's name had
// it start itself for ever at full CPU; in a folder others write to (a
// shared /tmp) a unified-exec-mcp planted by another user ran as
// whoever served. Each is refused at once, exit 125, saying why.
func TestServeRefusesUntrustedServerProgram(t *testing.T) {
	cases := []struct {
		name, why string
		make      func(t *testing.T, server string)
	}{
		{"link to itself", "unified-exec itself", func(t *testing.T, server string) {
			if err := os.Symlink("unified-exec", server); err != nil {
				t.Fatal(err)
			}
		}},
		{"link to a program of root's", "it is a link", func(t *testing.T, server string) {
			// Red team 11: anyone may plant one in a folder others write to.
			if err := os.Symlink("/bin/true", server); err != nil {
				t.Fatal(err)
			}
		}},
		{"copy of itself", "unified-exec again", func(t *testing.T, server string) { copyTo(t, binary, server, 0o755) }},
		{"writable by others", "may write it", func(t *testing.T, server string) { copyTo(t, binary+"-mcp", server, 0o757) }},
		{"another user's", "belongs to user", func(t *testing.T, server string) {
			if os.Getuid() != 0 {
				t.Skip("only root can give a file to another user")
			}
			copyTo(t, binary+"-mcp", server, 0o755)
			if err := os.Chown(server, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			wrapper := filepath.Join(dir, "unified-exec")
			copyTo(t, binary, wrapper, 0o755)
			c.make(t, filepath.Join(dir, "unified-exec-mcp"))
			for _, args := range [][]string{{"--workspace", t.TempDir()}, {"tools"}} {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				cmd := exec.CommandContext(ctx, wrapper, args...)
				out, _ := cmd.CombinedOutput()
				timedOut := ctx.Err() != nil
				cancel()
				if timedOut {
					t.Fatalf("unified-exec %q did not end in 20 s: %s", args, out)
				}
				if code := cmd.ProcessState.ExitCode(); code != 125 || !strings.Contains(string(out), c.why) {
					t.Errorf("unified-exec %q: exit %d, want 125 and %q: %s", args, code, c.why, out)
				}
			}
		})
	}
}

// copyTo copies the program from to to, with mode (past the umask).
func copyTo(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(to, mode); err != nil {
		t.Fatal(err)
	}
}
