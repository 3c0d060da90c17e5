package mcpserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/unified-exec/unified-exec/orchestrator"
	"github.com/unified-exec/unified-exec/policy"
	"github.com/unified-exec/unified-exec/ptyrun"
	"github.com/unified-exec/unified-exec/sandbox"
)

func TestMain(m *testing.M) {
	ptyrun.MaybeRunHelper(sandbox.Apply)
	if !slices.ContainsFunc(os.Args, func(a string) bool { return strings.HasPrefix(a, "-test.fuzz") }) {
		ptyrun.EnterNamespace()
	}
	os.Exit(m.Run())
}

func requireSandbox(t *testing.T) {
	t.Helper()
	st := sandbox.HostStatus()
	if st.LandlockABI >= 2 && st.Seccomp && st.Namespaces {
		return
	}
	if os.Getenv("UNIFIED_EXEC_REQUIRE_SANDBOX") == "1" {
		t.Fatalf("sandbox required but unavailable:\n%s", st)
	}
	t.Skipf("sandbox unavailable:\n%s", st)
}

// elicitor answers the forms from a list (decline when it runs out) and
// records their messages.
type elicitor struct {
	mu       sync.Mutex
	answers  []string
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
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": a}}, nil
}

func (e *elicitor) asked() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.messages...)
}

// connect serves a fresh orchestrator in memory under an untrusted policy
// and returns a client session that answers elicitations with e.
func connect(t *testing.T, e *elicitor, protocol string) (*mcp.ClientSession, string) {
	t.Helper()
	requireSandbox(t)
	ws := t.TempDir()
	pol, err := policy.Parse([]byte("[approval]\nmode = \"untrusted\"\n"), "test-policy.toml")
	if err != nil {
		t.Fatal(err)
	}
	o, err := orchestrator.New(orchestrator.Config{Policy: pol, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	s := New(o, "test")
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan struct{})
	go func() { // owned by the test: ends when the client goes away
		defer close(done)
		s.Run(ctx, st)
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: e.handle})
	var opts *mcp.ClientSessionOptions
	if protocol != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: protocol}
	}
	cs, err := client.Connect(ctx, ct, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); cancel(); <-done })
	return cs, ws
}

func callExec(t *testing.T, cs *mcp.ClientSession, args map[string]any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec_command", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

var protocols = []string{"", "2025-06-18"}

// TestElicitationEscapesControls: the elicitation message quotes the
// command and the justification with their control characters escaped.
func TestElicitationEscapesControls(t *testing.T) {
	for _, proto := range protocols {
		t.Run(fmt.Sprintf("protocol %q", proto), func(t *testing.T) {
			e := &elicitor{answers: []string{"deny"}}
			cs, _ := connect(t, e, proto)
			callExec(t, cs, map[string]any{"cmd": "echo \x1b[2J\x1b[1;1Hok\u009b31m", "login": false,
				"sandbox_permissions": "require_escalated", "justification": "because\x1b]0;x\x07\r"})
			msgs := e.asked()
			if len(msgs) != 1 {
				t.Fatalf("asked %d", len(msgs))
			}
			for _, r := range msgs[0] {
				if (r < 0x20 && r != '\n') || (r >= 0x7f && r <= 0x9f) {
					t.Fatalf("control character %U in %q", r, msgs[0])
				}
			}
			if !strings.Contains(msgs[0], `\x1b[2J`) || !strings.Contains(msgs[0], `\x1b]0;x\x07`) || !strings.Contains(msgs[0], `\u009b`) {
				t.Fatalf("escapes not shown: %q", msgs[0])
			}
		})
	}
}

// TestElicitationRetryIsItsOwnQuestion: an approved command that prints
// "Permission denied" itself is not run without the sandbox unless a
// second form, saying so, is accepted.
func TestElicitationRetryIsItsOwnQuestion(t *testing.T) {
	for _, proto := range protocols {
		t.Run(fmt.Sprintf("protocol %q", proto), func(t *testing.T) {
			e := &elicitor{answers: []string{"approve_for_session", "deny"}}
			cs, ws := connect(t, e, proto)
			cmd := "grep -c NoNewPrivs:.1 /proc/self/status > " + filepath.Join("out") + "; echo 'x: Permission denied'; exit 1"
			callExec(t, cs, map[string]any{"cmd": cmd, "login": false})
			b, _ := os.ReadFile(filepath.Join(ws, "out"))
			if strings.TrimSpace(string(b)) != "1" {
				t.Fatalf("the last run was not sandboxed: %q", b)
			}
			msgs := e.asked()
			if len(msgs) == 0 || strings.Contains(strings.ToLower(msgs[0]), "without the sandbox") {
				t.Fatalf("first question: %q", msgs)
			}
			for _, m := range msgs[1:] {
				if !strings.Contains(strings.ToLower(m), "without the sandbox") {
					t.Fatalf("second question does not say so: %q", m)
				}
			}
		})
	}
}

// TestAnswerOnlyWhatWasAsked: a call resumed with answers takes the
// answer to the question it asked only; an approval sent ahead for running
// without the sandbox, a question nobody saw, is ignored.
func TestAnswerOnlyWhatWasAsked(t *testing.T) {
	requireSandbox(t)
	ws := t.TempDir()
	pol, err := policy.Parse([]byte("[approval]\nmode = \"untrusted\"\n[sandbox]\nexclude_slash_tmp = true\n"), "test-policy.toml")
	if err != nil {
		t.Fatal(err)
	}
	o, err := orchestrator.New(orchestrator.Config{Policy: pol, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	s := New(o, "test")
	// A real denial: a folder the user may write, outside the writable
	// roots (the policy excludes /tmp).
	outside, _ := filepath.EvalSymlinks(t.TempDir())
	args := []byte(`{"cmd": "grep -c NoNewPrivs:.1 /proc/self/status > out; touch ` + outside + `/x", "login": false}`)
	meta := mcp.Meta{mcp.MetaKeyClientCapabilities: map[string]any{"elicitation": map[string]any{}}}
	approve := &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve"}}
	call := func(state string, answers mcp.InputResponseMap) *mcp.CallToolResult {
		t.Helper()
		res, err := s.execCommand(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{
			Meta: meta, Name: "exec_command", Arguments: args, RequestState: state, InputResponses: answers,
		}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first := call("", nil)
	if first.RequestState == "" || first.InputRequests["approve"] == nil {
		t.Fatalf("first call: %+v", first)
	}
	second := call(first.RequestState, mcp.InputResponseMap{"approve": approve, "retry-unsandboxed": approve})
	if second.InputRequests["retry-unsandboxed"] == nil {
		t.Fatalf("the retry question was not asked: %+v", second)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "out")); strings.TrimSpace(string(b)) != "1" {
		t.Fatalf("ran without the sandbox on an answer to a question not asked: %q", b)
	}
}
