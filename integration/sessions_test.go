package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

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
