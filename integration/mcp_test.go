//go:build linux

package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// elicitor answers approval forms from a script and records the messages.
type elicitor struct {
	mu       sync.Mutex
	answers  []*mcp.ElicitResult
	messages []string
}

func (e *elicitor) handle(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.messages = append(e.messages, req.Params.Message)
	if len(e.answers) == 0 {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	a := e.answers[0]
	e.answers = e.answers[1:]
	return a, nil
}

func (e *elicitor) asked() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.messages...)
}

func decision(d string) *mcp.ElicitResult {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": d}}
}

func untrustedServer(t *testing.T, e *elicitor, protocol string) (*server, string) {
	t.Helper()
	dir := t.TempDir()
	pf := filepath.Join(dir, "policy.toml")
	os.WriteFile(pf, []byte("[approval]\nmode = \"untrusted\"\n"), 0o644)
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	opts := &mcp.ClientOptions{}
	if e != nil {
		opts.ElicitationHandler = e.handle
	}
	s := startServerProto(t, serverOpts{args: []string{"--policy", pf}, workspace: ws, client: opts}, protocol)
	return s, ws
}

func TestMCPApprovals(t *testing.T) {
	requireSandbox(t)
	for _, proto := range []string{"", "2025-06-18"} {
		name := proto
		if name == "" {
			name = "latest"
		}
		t.Run(name, func(t *testing.T) {
			e := &elicitor{answers: []*mcp.ElicitResult{
				decision("approve"),
				decision("approve_for_session"),
				decision("deny"),
				decision("abort"),
				{Action: "decline"},
				{Action: "cancel"},
			}}
			s, ws := untrustedServer(t, e, proto)
			// Known-safe: not asked.
			if text := s.exec(map[string]any{"cmd": "ls"}); !strings.Contains(text, "exited with code 0") || len(e.asked()) != 0 {
				t.Fatalf("ls: asked %d: %s", len(e.asked()), text)
			}
			// approve
			if text := s.exec(map[string]any{"cmd": "touch one"}); !strings.Contains(text, "exited with code 0") {
				t.Fatalf("approve: %s", text)
			}
			if msgs := e.asked(); len(msgs) != 1 || !strings.Contains(msgs[0], "touch one") || !strings.Contains(msgs[0], ws) || !strings.Contains(msgs[0], "workspace-write") {
				t.Fatalf("question: %q", msgs)
			}
			// approve_for_session: asked once for two runs.
			s.exec(map[string]any{"cmd": "touch two"})
			s.exec(map[string]any{"cmd": "touch two"})
			if n := len(e.asked()); n != 2 {
				t.Fatalf("asked %d times", n)
			}
			// deny, abort, decline, cancel: nothing runs.
			for i, c := range []string{"touch three", "touch four", "touch five", "touch six"} {
				text, isErr, _ := s.call("exec_command", map[string]any{"cmd": c, "login": false})
				if !isErr {
					t.Fatalf("%s ran: %s", c, text)
				}
				if i == 1 && !strings.Contains(text, "abort") {
					t.Fatalf("abort message: %s", text)
				}
			}
			for _, f := range []string{"one", "two"} {
				if _, err := os.Stat(filepath.Join(ws, f)); err != nil {
					t.Errorf("%s missing", f)
				}
			}
			for _, f := range []string{"three", "four", "five", "six"} {
				if _, err := os.Stat(filepath.Join(ws, f)); err == nil {
					t.Errorf("%s was created", f)
				}
			}
		})
	}
}

func TestMCPNoElicitationFailsClosed(t *testing.T) {
	requireSandbox(t)
	s, ws := untrustedServer(t, nil, "")
	text, isErr, _ := s.call("exec_command", map[string]any{"cmd": "touch nope", "login": false})
	if !isErr || !strings.Contains(text, "nobody can be asked") {
		t.Fatalf("want a refusal, got %s", text)
	}
	if _, err := os.Stat(filepath.Join(ws, "nope")); err == nil {
		t.Fatal("ran without approval")
	}
	if text := s.exec(map[string]any{"cmd": "ls"}); !strings.Contains(text, "exited with code 0") {
		t.Fatalf("safe command refused: %s", text)
	}
}

func TestMCPProgress(t *testing.T) {
	var got atomic.Int32
	var mu sync.Mutex
	var msgs []string
	s := startServer(t, serverOpts{client: &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			got.Add(1)
			mu.Lock()
			msgs = append(msgs, req.Params.Message)
			mu.Unlock()
		},
	}})
	p := &mcp.CallToolParams{Name: "exec_command", Arguments: map[string]any{"cmd": "for i in 1 2 3; do echo tick$i; sleep 0.4; done", "login": false}}
	p.SetProgressToken("tok-1")
	res, err := s.session.CallTool(context.Background(), p)
	if err != nil || res.IsError {
		t.Fatalf("%v %v", err, res)
	}
	waitFor(t, func() bool { return got.Load() >= 2 })
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(strings.Join(msgs, ""), "tick1") {
		t.Fatalf("progress messages: %q", msgs)
	}
}

func TestMCPCancel(t *testing.T) {
	s := startServer(t, serverOpts{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan time.Time, 1)
	go func() {
		s.session.CallTool(ctx, &mcp.CallToolParams{Name: "exec_command", Arguments: map[string]any{"cmd": "sleep 6", "login": false, "yield_time_ms": 30000}})
		done <- time.Now()
	}()
	time.Sleep(400 * time.Millisecond)
	cancelled := time.Now()
	cancel()
	select {
	case at := <-done:
		if at.Sub(cancelled) > 2*time.Second {
			t.Fatalf("cancel took %v", at.Sub(cancelled))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not return after cancel")
	}
	waitFor(t, func() bool {
		text, _, _ := s.call("list_sessions", map[string]any{})
		return strings.Contains(text, "sleep 6") && strings.Contains(text, "running")
	})
}

func TestMCPConcurrent(t *testing.T) {
	s := startServer(t, serverOpts{})
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Go(func() {
			text := s.exec(map[string]any{"cmd": "sleep 1", "yield_time_ms": 10000})
			if !strings.Contains(text, "exited with code 0") {
				t.Errorf("sleep 1: %s", text)
			}
		})
	}
	wg.Wait()
	if el := time.Since(start); el > 4*time.Second {
		t.Fatalf("ten parallel sleep 1 took %v", el)
	}
}

// TestMCPGarbageLine: a malformed line gets a parse error, and the next
// valid request is answered.
func TestMCPGarbageLine(t *testing.T) {
	cmd := exec.Command(binary, "--workspace", t.TempDir())
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	io.WriteString(stdin, "this is not json\n")
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n")
	r := bufio.NewReader(stdout)
	var lines []string
	for i := 0; i < 2; i++ {
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("after %q: %v", lines, err)
		}
		lines = append(lines, l)
	}
	if !strings.Contains(lines[0], "-32700") || !strings.Contains(lines[1], `"id":1`) || !strings.Contains(lines[1], "serverInfo") {
		t.Fatalf("replies: %q", lines)
	}
}

func startServerProto(t *testing.T, o serverOpts, protocol string) *server {
	t.Helper()
	if protocol == "" {
		return startServer(t, o)
	}
	o.protocol = protocol
	return startServer(t, o)
}

// TestMCPBackgroundExit: a session nobody is watching exits; the client
// gets a logging notification with its id, exit code and last lines.
func TestMCPBackgroundExit(t *testing.T) {
	got := make(chan map[string]any, 4)
	s := startServer(t, serverOpts{protocol: "2025-06-18", client: &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			if m, ok := req.Params.Data.(map[string]any); ok {
				got <- m
			}
		},
	}})
	if err := s.session.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	id := sessionID(t, s.exec(map[string]any{"cmd": "sleep 0.5; echo last-words; exit 4", "yield_time_ms": 250}))
	select {
	case m := <-got:
		if m["session_id"] != float64(id) || m["exit_code"] != float64(4) || !strings.Contains(fmt.Sprint(m["last_lines"]), "last-words") {
			t.Fatalf("notification: %v", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no notification of the background exit")
	}
}
