//go:build linux

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progressLog records the progress notifications a client receives.
type progressLog struct {
	mu   sync.Mutex
	msgs []*mcp.ProgressNotificationParams
}

func (p *progressLog) handle(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msgs = append(p.msgs, req.Params)
}

func (p *progressLog) list() []*mcp.ProgressNotificationParams {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*mcp.ProgressNotificationParams(nil), p.msgs...)
}

// text is every message of the notifications for token, joined.
func (p *progressLog) text(token string) string {
	var b strings.Builder
	for _, m := range p.list() {
		if m.ProgressToken == token {
			b.WriteString(m.Message)
		}
	}
	return b.String()
}

// TestMCPCancelKeepsOutput: a cancelled call consumes nothing: what the
// command printed during the cancelled window comes back in the next
// poll, and the session id of a cancelled exec_command reached the client
// in the call's first progress notification.
func TestMCPCancelKeepsOutput(t *testing.T) {
	pl := &progressLog{}
	s := startServer(t, serverOpts{client: &mcp.ClientOptions{ProgressNotificationHandler: pl.handle}})

	// exec_command, cancelled after the command printed.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p := &mcp.CallToolParams{Name: "exec_command", Arguments: map[string]any{
			"cmd": "echo during-exec; sleep 0.5; echo still-during-exec; sleep 30", "login": false, "yield_time_ms": 30000}}
		p.SetProgressToken("exec-1")
		s.session.CallTool(ctx, p)
	}()
	waitFor(t, func() bool { return strings.Contains(pl.text("exec-1"), "still-during-exec") })
	cancel()
	<-done
	first := pl.list()[0]
	if first.ProgressToken != "exec-1" {
		t.Fatalf("first notification: %+v", first)
	}
	var id int
	if _, err := fmt.Sscanf(first.Message, "Process running with session ID %d", &id); err != nil {
		t.Fatalf("the first progress notification does not name the session: %q", first.Message)
	}
	if m, ok := first.Meta["session_id"]; !ok || m != float64(id) {
		t.Fatalf("first notification's _meta: %v", first.Meta)
	}
	text, isErr, _ := s.call("write_stdin", map[string]any{"session_id": id})
	if isErr || !strings.Contains(output(text), "during-exec\nstill-during-exec\n") {
		t.Fatalf("the poll after a cancelled exec_command lost its output:\n%s", text)
	}

	// write_stdin, cancelled after the command printed.
	id2 := sessionID(t, s.exec(map[string]any{"cmd": "sleep 1; echo during-poll; sleep 30", "yield_time_ms": 250}))
	ctx, cancel = context.WithCancel(context.Background())
	done = make(chan struct{})
	go func() {
		defer close(done)
		p := &mcp.CallToolParams{Name: "write_stdin", Arguments: map[string]any{"session_id": id2, "yield_time_ms": 30000}}
		p.SetProgressToken("poll-1")
		s.session.CallTool(ctx, p)
	}()
	waitFor(t, func() bool { return strings.Contains(pl.text("poll-1"), "during-poll") })
	cancel()
	<-done
	text, isErr, _ = s.call("write_stdin", map[string]any{"session_id": id2})
	if isErr || output(text) != "during-poll\n" {
		t.Fatalf("the poll after a cancelled write_stdin lost its output:\n%s", text)
	}
}

// limitsServer starts a server whose policy has the given [limits] lines.
func limitsServer(t *testing.T, limits string, client *mcp.ClientOptions) *server {
	t.Helper()
	dir := t.TempDir()
	pf := filepath.Join(dir, "policy.toml")
	if err := os.WriteFile(pf, []byte("[limits]\n"+limits+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return startServer(t, serverOpts{args: []string{"--policy", pf}, client: client, protocol: "2025-06-18"})
}

// TestMCPSessionTimeout: [limits] session_timeout ends a session no call
// has used for that long; its exit is reported like any other, by a
// logging notification and by the next poll, which says why.
func TestMCPSessionTimeout(t *testing.T) {
	got := make(chan map[string]any, 4)
	s := limitsServer(t, `session_timeout = "1s"`, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			if m, ok := req.Params.Data.(map[string]any); ok {
				got <- m
			}
		},
	})
	if err := s.session.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	id := sessionID(t, s.exec(map[string]any{"cmd": "echo started; sleep 600", "yield_time_ms": 250}))
	select {
	case m := <-got:
		if m["session_id"] != float64(id) || m["event"] != "session_exited" {
			t.Fatalf("notification: %v", m)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the idle session was not ended")
	}
	text, isErr, _ := s.call("write_stdin", map[string]any{"session_id": id})
	if isErr || !strings.Contains(text, "Process exited with code") || !strings.Contains(text, "session_timeout") {
		t.Fatalf("the poll after the timeout:\n%s", text)
	}
	if text, _, _ := s.call("list_sessions", map[string]any{}); !strings.Contains(text, "exited") {
		t.Fatalf("list_sessions:\n%s", text)
	}
}

// TestMCPMaxSessions: [limits] max_sessions below 9 is enforced: the
// least recently used sessions are closed, and the response says so.
func TestMCPMaxSessions(t *testing.T) {
	s := limitsServer(t, "max_sessions = 4", nil)
	var ids []int
	var notes []string
	for range 6 {
		text := s.exec(map[string]any{"cmd": "sleep 600", "yield_time_ms": 250})
		ids = append(ids, sessionID(t, text))
		notes = append(notes, text)
	}
	text, _, _ := s.call("list_sessions", map[string]any{})
	if n := strings.Count(text, "running"); n != 4 {
		t.Fatalf("%d sessions running with max_sessions = 4:\n%s", n, text)
	}
	for _, id := range ids[2:] {
		if !strings.Contains(text, fmt.Sprintf("%d\trunning", id)) {
			t.Fatalf("recent session %d was closed:\n%s", id, text)
		}
	}
	if !strings.Contains(notes[4], fmt.Sprintf("Session %d was closed", ids[0])) {
		t.Fatalf("the fifth response does not say the first session was closed:\n%s", notes[4])
	}
	for _, n := range notes {
		if strings.Contains(n, "5 of 4") || strings.Contains(n, "6 of 4") {
			t.Fatalf("over the cap:\n%s", n)
		}
	}
}

// TestMCPOutputTokenLimit: [limits] max_output_tokens is the ceiling and
// the default: a larger ask is lowered and the response says so; 0 gives
// only the truncation marker.
func TestMCPOutputTokenLimit(t *testing.T) {
	s := limitsServer(t, "max_output_tokens = 100", nil)
	cmd := "seq 1 1000" // 3893 bytes, 974 tokens
	for _, c := range []struct {
		name   string
		tokens any
		note   bool
	}{{"default", nil, false}, {"above the limit", 5000, true}, {"at the limit", 100, false}} {
		args := map[string]any{"cmd": cmd}
		if c.tokens != nil {
			args["max_output_tokens"] = c.tokens
		}
		text := s.exec(args)
		out := output(text)
		if !strings.Contains(out, "tokens truncated") || len(out) > 100*4+200 || !strings.HasSuffix(out, "\n1000\n") {
			t.Fatalf("%s: the output is not held to 100 tokens:\n%s", c.name, text)
		}
		if got := strings.Contains(text, "lowered to 100 ([limits] max_output_tokens)"); got != c.note {
			t.Fatalf("%s: note %v:\n%s", c.name, got, text)
		}
	}
	text := s.exec(map[string]any{"cmd": cmd, "max_output_tokens": 0})
	if out := output(text); out != "…974 tokens truncated…" {
		t.Fatalf("max_output_tokens 0: %q", out)
	}
}

// TestMCPReadLogKeptPart: read_log from an offset before the kept part of
// the log says where the kept part starts instead of silently moving.
func TestMCPReadLogKeptPart(t *testing.T) {
	s := startServer(t, serverOpts{})
	// 300 000 lines, ~2 MB: the log keeps about the last 1 MiB.
	id := sessionID(t, s.exec(map[string]any{"cmd": "seq 1 300000; sleep 600", "yield_time_ms": 3000, "max_output_tokens": 10}))
	var text string
	waitFor(t, func() bool {
		text, _, _ = s.call("read_log", map[string]any{"session_id": id, "limit": 1})
		return strings.Contains(text, "300000\n")
	})
	text, isErr, _ := s.call("read_log", map[string]any{"session_id": id, "offset": 0, "limit": 3})
	var kept, a int
	if isErr {
		t.Fatal(text)
	}
	if _, err := fmt.Sscanf(text, "Session %d: lines 1-%d are no longer kept; the kept part starts at line %d.\n", new(int), &kept, &a); err != nil || a != kept+1 {
		t.Fatalf("an offset before the kept part:\n%s", text)
	}
	if !strings.Contains(text, fmt.Sprintf("lines %d-%d of 300000\n%d\n%d\n%d\n", a, a+2, a, a+1, a+2)) {
		t.Fatalf("the lines from the kept part's start:\n%s", text)
	}
}

// TestMCPReadLogQuickExit: a command that exited within its first window
// can still be read with read_log, and is listed as exited; when its
// output was cut, the response names the session to read it from.
func TestMCPReadLogQuickExit(t *testing.T) {
	s := startServer(t, serverOpts{})
	text := s.exec(map[string]any{"cmd": "seq 1 5000", "max_output_tokens": 100})
	if !strings.Contains(text, "Process exited with code 0") {
		t.Fatal(text)
	}
	var id int
	for _, l := range strings.Split(text, "\n") {
		if i := strings.Index(l, "read_log with session_id "); i >= 0 {
			fmt.Sscanf(l[i:], "read_log with session_id %d", &id)
		}
	}
	if id == 0 {
		t.Fatalf("the truncated response does not say where the whole output is:\n%s", text)
	}
	list, _, _ := s.call("list_sessions", map[string]any{})
	if !strings.Contains(list, fmt.Sprintf("%d\texited 0", id)) {
		t.Fatalf("list_sessions:\n%s", list)
	}
	log, isErr, _ := s.call("read_log", map[string]any{"session_id": id, "offset": 2499, "limit": 2})
	if isErr || !strings.Contains(log, "lines 2500-2501 of 5000\n2500\n2501\n") {
		t.Fatalf("read_log:\n%s", log)
	}
}

// TestMCPScreen: a full-screen program comes back as its screen (rows of
// text, the cursor named), and the stream resumes once it leaves.
func TestMCPScreen(t *testing.T) {
	if _, err := exec.LookPath("vim"); err != nil {
		t.Skip("vim is not installed")
	}
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("alpha\nbeta\n"), 0o644)
	s := startServer(t, serverOpts{workspace: ws})
	text := s.exec(map[string]any{"cmd": "vim -u NONE -N -i NONE notes.txt", "tty": true, "yield_time_ms": 20000})
	id := sessionID(t, text)
	want := "Screen (full-screen program, 24 rows × 80 columns; cursor at row 1, column 1):\nalpha\nbeta\n~\n"
	if !strings.Contains(output(text), want) || strings.Contains(text, "\x1b") {
		t.Fatalf("vim's screen:\n%s", text)
	}
	text, _, _ = s.call("write_stdin", map[string]any{"session_id": id, "chars": "Gogamma\x1b", "yield_time_ms": 20000})
	if !strings.Contains(output(text), "cursor at row 3, column 5):\nalpha\nbeta\ngamma\n~\n") {
		t.Fatalf("after an edit:\n%s", text)
	}
	text, _, _ = s.call("write_stdin", map[string]any{"session_id": id, "chars": ":wq\n", "yield_time_ms": 20000})
	if !strings.Contains(text, "Process exited with code 0") || strings.Contains(text, "Screen (") {
		t.Fatalf("after :wq:\n%s", text)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "notes.txt")); string(b) != "alpha\nbeta\ngamma\n" {
		t.Fatalf("the file: %q", b)
	}
}

// TestMCPResizeAndTimeout: write_stdin resizes a terminal (rows, cols);
// exec_command's timeout_ms ends the command's tree and says so.
func TestMCPResizeAndTimeout(t *testing.T) {
	s := startServer(t, serverOpts{})
	id := sessionID(t, s.exec(map[string]any{"cmd": `trap 'echo "size $(stty size)"' WINCH; stty size; while :; do sleep 0.05; done`, "tty": true, "yield_time_ms": 500}))
	text, isErr, _ := s.call("write_stdin", map[string]any{"session_id": id, "rows": 33, "cols": 111, "yield_time_ms": 1000})
	got := output(text)
	for deadline := time.Now().Add(20 * time.Second); !isErr && !strings.Contains(got, "size 33 111") && time.Now().Before(deadline); {
		text, isErr, _ = s.call("write_stdin", map[string]any{"session_id": id, "yield_time_ms": 1000})
		got += output(text)
	}
	if isErr || !strings.Contains(got, "size 33 111") {
		t.Fatalf("resize: %q\n%s", got, text)
	}
	for _, bad := range []map[string]any{{"rows": 0}, {"cols": 1001}, {"rows": -3}} {
		bad["session_id"] = id
		if text, isErr, _ := s.call("write_stdin", bad); !isErr || !strings.Contains(text, "between 1 and 1000") {
			t.Fatalf("%v: %s", bad, text)
		}
	}
	pipe := sessionID(t, s.exec(map[string]any{"cmd": "sleep 60", "yield_time_ms": 250}))
	if text, isErr, _ := s.call("write_stdin", map[string]any{"session_id": pipe, "rows": 10}); !isErr || !strings.Contains(text, "tty=true") {
		t.Fatalf("resizing a pipe session: %s", text)
	}

	text = s.exec(map[string]any{"cmd": "echo started; sleep 60", "timeout_ms": 1000, "yield_time_ms": 30000})
	if !strings.Contains(text, "Process exited with code") || !strings.Contains(text, "timeout_ms (1000 ms)") || !strings.Contains(output(text), "started") {
		t.Fatalf("timeout:\n%s", text)
	}
	for _, bad := range []any{0, -1, "soon"} {
		if text, isErr, _ := s.call("exec_command", map[string]any{"cmd": "true", "timeout_ms": bad}); !isErr || !strings.Contains(text, `"timeout_ms"`) {
			t.Fatalf("timeout_ms %v: %s", bad, text)
		}
	}
}

// TestMCPToolDescriptions: the tools a client lists tell the model what
// it needs to use them well.
func TestMCPToolDescriptions(t *testing.T) {
	s := startServer(t, serverOpts{})
	res, err := s.session.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	desc := map[string]string{}
	for _, tool := range res.Tools {
		b, _ := json.Marshal(tool.InputSchema)
		desc[tool.Name] = tool.Description + "\n" + string(b)
	}
	for tool, facts := range map[string][]string{
		"exec_command": {
			"network",                 // off unless the policy allows it
			"tty: true",               // pipes by default, a terminal for interactive programs
			"until the command exits", // sessions are kept until exit or kill
			"long-running server",     // its own session
			"own exec_command",        // not backgrounded with &
			"screen",                  // full-screen programs
			"read_log",                // the whole output
			`"timeout_ms"`, `"tty"`, `"rows"`,
		},
		"write_stdin":   {"Process is waiting for input", "poll", `"rows"`, `"cols"`, `"keys"`},
		"list_sessions": {"logging/setLevel", "exited"},
		"kill_session":  {"whole process tree"},
		"read_log":      {"exited", "kept part"},
	} {
		for _, f := range facts {
			if !strings.Contains(desc[tool], f) {
				t.Errorf("%s does not say %q:\n%s", tool, f, desc[tool])
			}
		}
	}
	if init := s.session.InitializeResult(); init == nil || !strings.Contains(init.Instructions, "logging/setLevel") {
		t.Errorf("instructions: %+v", init)
	}
}
