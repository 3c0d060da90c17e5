//go:build linux

// Package integration drives the built unified-exec binary end to end: the
// wrapper through its CLI, the server through a go-sdk MCP client.
package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// binary is the unified-exec built for this test run.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ue-integration")
	if err != nil {
		panic(err)
	}
	// unified-exec serves by starting unified-exec-mcp from its folder:
	// both, side by side, built as scripts/install builds them (static,
	// where the C libraries allow).
	binary = filepath.Join(dir, "unified-exec")
	build := exec.Command("../scripts/build", dir)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "scripts/build %s: %v\n", dir, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is a running unified-exec MCP server and a client session to it.
type server struct {
	t       testing.TB
	cmd     *exec.Cmd
	session *mcp.ClientSession
	stderr  *strings.Builder
}

type serverOpts struct {
	args      []string
	env       []string
	workspace string
	client    *mcp.ClientOptions
	protocol  string // "" = the SDK's latest
	// wrapper runs the server through a command (the server's argv is
	// appended to it).
	wrapper []string
	// extraFiles are inherited by the server from fd 3 on.
	extraFiles []*os.File
}

func startServer(t testing.TB, o serverOpts) *server {
	t.Helper()
	ws := o.workspace
	if ws == "" {
		ws = t.TempDir()
	}
	args := append([]string{"--workspace", ws}, o.args...)
	argv := append(append(append([]string(nil), o.wrapper...), binary), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), o.env...)
	cmd.ExtraFiles = o.extraFiles
	var stderr strings.Builder
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "integration", Version: "1"}, o.client)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var copts *mcp.ClientSessionOptions
	if o.protocol != "" {
		copts = &mcp.ClientSessionOptions{ProtocolVersion: o.protocol}
	}
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, copts)
	if err != nil {
		t.Fatalf("connect: %v (stderr: %s)", err, stderr.String())
	}
	s := &server{t: t, cmd: cmd, session: cs, stderr: &stderr}
	t.Cleanup(func() { cs.Close() })
	return s
}

// call invokes a tool and returns its text and whether it is an error.
func (s *server) call(name string, args map[string]any) (string, bool, *mcp.CallToolResult) {
	s.t.Helper()
	return s.callCtx(context.Background(), name, args)
}

func (s *server) callCtx(ctx context.Context, name string, args map[string]any) (string, bool, *mcp.CallToolResult) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	res, err := s.session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		s.t.Fatalf("%s: %v (server stderr, last 3000 bytes: %s)", name, err, tail(s.stderr.String(), 12000))
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError, res
}

// exec runs exec_command with login=false (the machine's login scripts are
// not what is tested) unless args say otherwise.
func (s *server) exec(args map[string]any) string {
	s.t.Helper()
	if _, ok := args["login"]; !ok {
		args["login"] = false
	}
	text, isErr, _ := s.call("exec_command", args)
	if isErr {
		s.t.Fatalf("exec_command %v: %s", args, text)
	}
	return text
}

// sessionID extracts "Process running with session ID N".
func sessionID(t *testing.T, text string) int {
	t.Helper()
	var id int
	for _, l := range strings.Split(text, "\n") {
		if _, err := fmt.Sscanf(l, "Process running with session ID %d", &id); err == nil {
			return id
		}
	}
	t.Fatalf("no session id in:\n%s", text)
	return 0
}

// output returns what follows "Output:\n".
func output(text string) string {
	_, out, _ := strings.Cut(text, "\nOutput:\n")
	return out
}

func structured(t testing.TB, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, _ := json.Marshal(res.StructuredContent)
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
