package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/unified-exec/unified-exec/approval"
	"github.com/unified-exec/unified-exec/orchestrator"
)

// Instructions are the server's instructions to clients.
const Instructions = "Run shell commands with exec_command (sandboxed; network off unless the policy allows it); " +
	"interact with running ones, started with tty: true, through write_stdin. Sessions are kept until their command " +
	"exits or kill_session ends it. Hosts: when a session nobody is polling exits, the server sends a logging " +
	"notification (event session_exited) to clients that set a level with logging/setLevel."

// Server serves the unified-exec tools over MCP.
type Server struct {
	o       *orchestrator.Orchestrator
	mcp     *mcp.Server
	pending pending
}

// New returns a Server whose exec_command calls go through o.
func New(o *orchestrator.Orchestrator, version string) *Server {
	s := &Server{o: o}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "unified-exec", Version: version}, &mcp.ServerOptions{
		Instructions: Instructions,
	})
	handlers := map[string]mcp.ToolHandler{
		"exec_command":  s.execCommand,
		"write_stdin":   s.writeStdin,
		"list_sessions": s.listSessions,
		"kill_session":  s.killSession,
		"read_log":      s.readLog,
	}
	for _, t := range Tools {
		schema, _ := json.Marshal(t.Schema)
		s.mcp.AddTool(&mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: json.RawMessage(schema)}, handlers[t.Name])
	}
	return s
}

// NotifyExit tells connected clients, by a logging notification, that a
// session nobody was watching has exited. Clients on protocols before
// 2026-07-28 receive it once they set a logging level; on 2026-07-28 log
// levels are per request, so there is no channel for it outside a call.
func (s *Server) NotifyExit(id, code int, lastLines []string) {
	for ss := range s.mcp.Sessions() {
		ss.Log(context.Background(), &mcp.LoggingMessageParams{
			Level:  "notice",
			Logger: "unified-exec",
			Data: map[string]any{
				"event":      "session_exited",
				"session_id": id,
				"exit_code":  code,
				"last_lines": lastLines,
				"message":    fmt.Sprintf("session %d exited with code %d", id, code),
			},
		})
	}
}

// MCP is the underlying go-sdk server.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Run serves on t until the client goes away (stdin EOF) or ctx ends,
// then kills every session.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	defer s.o.Close()
	return s.mcp.Run(ctx, t)
}

type execArgs struct {
	Cmd                string  `json:"cmd"`
	Workdir            string  `json:"workdir"`
	Shell              string  `json:"shell"`
	Login              *bool   `json:"login"`
	TTY                bool    `json:"tty"`
	Rows               *int    `json:"rows"`
	Cols               *int    `json:"cols"`
	YieldTimeMS        *int64  `json:"yield_time_ms"`
	MaxOutputTokens    *int    `json:"max_output_tokens"`
	TimeoutMS          *int64  `json:"timeout_ms"`
	SandboxPermissions *string `json:"sandbox_permissions"`
	Justification      string  `json:"justification"`
}

type writeArgs struct {
	SessionID       *int     `json:"session_id"`
	Chars           string   `json:"chars"`
	Keys            []string `json:"keys"`
	Paste           bool     `json:"paste"`
	Rows            *int     `json:"rows"`
	Cols            *int     `json:"cols"`
	YieldTimeMS     *int64   `json:"yield_time_ms"`
	MaxOutputTokens *int     `json:"max_output_tokens"`
}

type sessionArgs struct {
	SessionID *int `json:"session_id"`
	Offset    *int `json:"offset"`
	Limit     *int `json:"limit"`
}

func toolError(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// structured is the structured content of an exec/write/kill result.
type structured struct {
	ChunkID            string  `json:"chunk_id"`
	WallTimeSeconds    float64 `json:"wall_time_seconds"`
	ExitCode           *int    `json:"exit_code,omitempty"`
	SessionID          *int    `json:"session_id,omitempty"`
	OriginalTokenCount int     `json:"original_token_count"`
	Output             string  `json:"output"`
}

func respResult(r *orchestrator.Response) *mcp.CallToolResult {
	st := structured{
		ChunkID:            r.ChunkID,
		WallTimeSeconds:    r.WallTime.Seconds(),
		ExitCode:           r.ExitCode,
		OriginalTokenCount: r.OriginalTokenCount,
		Output:             r.Output,
	}
	if r.SessionID != 0 {
		id := r.SessionID
		st.SessionID = &id
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: r.Text()}}, StructuredContent: st}
}

// ms is yield_time_ms as a duration: absent = the default, 0 = the
// shortest window (the engine clamps it), negative an error.
func ms(tool string, p *int64) (time.Duration, error) {
	if p == nil {
		return 0, nil
	}
	if *p < 0 {
		return 0, fmt.Errorf("%s: argument \"yield_time_ms\" must be 0 or more (it is clamped to %d–%d), got %d", tool, orchestrator.MinYield.Milliseconds(), orchestrator.MaxYield.Milliseconds(), *p)
	}
	if *p == 0 {
		return time.Nanosecond, nil // clamped up to the minimum window
	}
	return time.Duration(min(*p, 3_600_000)) * time.Millisecond, nil
}

// tokens checks max_output_tokens: absent = the limit, 0 = only the
// truncation marker, negative an error; the engine lowers larger asks to
// the limit.
func tokens(tool string, p *int) (*int, error) {
	if p != nil && *p < 0 {
		return nil, fmt.Errorf("%s: argument \"max_output_tokens\" must be 0 or more (0 returns only the truncation marker), got %d", tool, *p)
	}
	return p, nil
}

func dims(tool string, p *int, name string) (uint16, error) {
	if p == nil {
		return 0, nil
	}
	if *p < 1 || *p > 1000 {
		return 0, fmt.Errorf("%s: argument %q must be between 1 and 1000, got %d", tool, name, *p)
	}
	return uint16(*p), nil
}

// maxTimeoutMS bounds timeout_ms (a week).
const maxTimeoutMS = 7 * 24 * 3600 * 1000

// timeout is timeout_ms as a duration: absent = none.
func timeout(p *int64) (time.Duration, error) {
	if p == nil {
		return 0, nil
	}
	if *p < 1 || *p > maxTimeoutMS {
		return 0, fmt.Errorf("exec_command: argument \"timeout_ms\" must be between 1 and %d (a week), got %d", maxTimeoutMS, *p)
	}
	return time.Duration(*p) * time.Millisecond, nil
}

func (s *Server) execCommand(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a execArgs
	if err := decodeArgs("exec_command", req.Params.Arguments, &a); err != nil {
		return toolError(err), nil
	}
	if strings.TrimSpace(a.Cmd) == "" {
		return toolError(fmt.Errorf("exec_command: argument \"cmd\" is required and must not be empty")), nil
	}
	rows, err := dims("exec_command", a.Rows, "rows")
	if err != nil {
		return toolError(err), nil
	}
	cols, err := dims("exec_command", a.Cols, "cols")
	if err != nil {
		return toolError(err), nil
	}
	limit, err := timeout(a.TimeoutMS)
	if err != nil {
		return toolError(err), nil
	}
	yield, err := ms("exec_command", a.YieldTimeMS)
	if err != nil {
		return toolError(err), nil
	}
	maxTokens, err := tokens("exec_command", a.MaxOutputTokens)
	if err != nil {
		return toolError(err), nil
	}
	escalate := false
	if a.SandboxPermissions != nil {
		switch *a.SandboxPermissions {
		case "use_default":
		case "require_escalated":
			escalate = true
		default:
			return toolError(fmt.Errorf("exec_command: argument \"sandbox_permissions\" must be \"use_default\" or \"require_escalated\", got %q", *a.SandboxPermissions)), nil
		}
	}
	digest := string(req.Params.Arguments)
	if res, ok := s.resumeNetwork(req, digest); ok {
		return res, nil
	}
	prompter := &elicitPrompter{answers: map[string]approval.Answer{}}
	if caps := req.ClientCapabilities(); caps != nil && caps.Elicitation != nil {
		prompter.canAsk = true
	}
	state := &orchestrator.State{}
	if token := req.Params.RequestState; token != "" {
		st, kind, ok := s.pending.take(token, digest)
		if !ok {
			return toolError(fmt.Errorf("exec_command: the approval this call answers is unknown or expired; call exec_command again")), nil
		}
		state = st
		// Only the question asked is answered: an answer sent ahead for
		// another (running without the sandbox) was seen by nobody.
		if er, ok := req.Params.InputResponses[kind].(*mcp.ElicitResult); ok {
			prompter.answers[kind] = parseAnswer(er)
		}
	}
	stop := s.progress(ctx, req)
	wctx, unwatch := s.netWatch(ctx, prompter.canAsk)
	var startedID atomic.Int64
	r, err := s.o.Exec(wctx, orchestrator.Request{
		ExecRequest: orchestrator.ExecRequest{
			Cmd: a.Cmd, Workdir: a.Workdir, Shell: a.Shell, Login: a.Login, TTY: a.TTY,
			Rows: rows, Cols: cols, Yield: yield, MaxOutputTokens: maxTokens, Timeout: limit,
			Observe: stop.observe,
			Started: func(id int) {
				startedID.Store(int64(id))
				if stop.started != nil {
					stop.started(id)
				}
			},
		},
		Escalate:      escalate,
		Justification: a.Justification,
		Prompter:      prompter,
		State:         state,
	})
	if id := int(startedID.Load()); errors.Is(err, context.Canceled) && ctx.Err() == nil && id != 0 {
		// A network question ended the watch during the first window
		// (which consumed nothing): take what the command printed so
		// far with the shortest window, then ask.
		r, err = s.o.Write(ctx, orchestrator.WriteRequest{SessionID: id, Yield: time.Nanosecond, MaxOutputTokens: maxTokens})
	}
	stop.end()
	unwatch()
	var need *orchestrator.NeedInput
	if errors.As(err, &need) {
		q := need.Question
		token := s.pending.put(digest, q.Kind, state)
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{q.Kind: &mcp.ElicitParams{Message: q.Text(), RequestedSchema: decisionSchema}},
			RequestState:  token,
		}, nil
	}
	if err != nil {
		return toolError(err), nil
	}
	return s.respondAsking(digest, r, prompter.canAsk), nil
}

func (s *Server) writeStdin(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a writeArgs
	if err := decodeArgs("write_stdin", req.Params.Arguments, &a); err != nil {
		return toolError(err), nil
	}
	if a.SessionID == nil {
		return toolError(fmt.Errorf("write_stdin: argument \"session_id\" is required")), nil
	}
	yield, err := ms("write_stdin", a.YieldTimeMS)
	if err != nil {
		return toolError(err), nil
	}
	maxTokens, err := tokens("write_stdin", a.MaxOutputTokens)
	if err != nil {
		return toolError(err), nil
	}
	rows, err := dims("write_stdin", a.Rows, "rows")
	if err != nil {
		return toolError(err), nil
	}
	cols, err := dims("write_stdin", a.Cols, "cols")
	if err != nil {
		return toolError(err), nil
	}
	digest := string(req.Params.Arguments)
	if res, ok := s.resumeNetwork(req, digest); ok {
		return res, nil
	}
	canAsk := false
	if caps := req.ClientCapabilities(); caps != nil && caps.Elicitation != nil {
		canAsk = true
	}
	stop := s.progress(ctx, req)
	wreq := orchestrator.WriteRequest{
		SessionID: *a.SessionID, Chars: a.Chars, Keys: a.Keys, Paste: a.Paste, Rows: rows, Cols: cols,
		Yield: yield, MaxOutputTokens: maxTokens,
		Observe: stop.observe,
	}
	wctx, unwatch := s.netWatch(ctx, canAsk)
	r, err := s.o.Write(wctx, wreq)
	if errors.Is(err, context.Canceled) && ctx.Err() == nil {
		// A network question ended the watch before the session was
		// free: write now, with the shortest window, then ask.
		wreq.Yield = time.Nanosecond
		r, err = s.o.Write(ctx, wreq)
	}
	stop.end()
	unwatch()
	if err != nil {
		return toolError(fmt.Errorf("write_stdin: %w", err)), nil
	}
	return s.respondAsking(digest, r, canAsk), nil
}

func (s *Server) listSessions(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a struct{}
	if err := decodeArgs("list_sessions", req.Params.Arguments, &a); err != nil {
		return toolError(err), nil
	}
	return textResult(FormatSessions(s.o.List(), time.Now())), nil
}

// FormatSessions renders list_sessions' table.
func FormatSessions(list []orchestrator.SessionInfo, now time.Time) string {
	if len(list) == 0 {
		return "No sessions."
	}
	var b strings.Builder
	b.WriteString("id\tstatus\tpid\ttty\tage\tcwd\tcommand\n")
	for _, s := range list {
		status := "running"
		if !s.Running {
			status = fmt.Sprintf("exited %d", s.ExitCode)
		}
		cmd := s.Command
		if len(cmd) > 120 {
			cmd = cmd[:117] + "..."
		}
		cmd = strings.ReplaceAll(cmd, "\n", "\\n")
		fmt.Fprintf(&b, "%d\t%s\t%d\t%v\t%s\t%s\t%s\n", s.ID, status, s.Pid, s.TTY, now.Sub(s.Started).Round(time.Second), s.Cwd, cmd)
	}
	return b.String()
}

func (s *Server) killSession(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a sessionArgs
	if err := decodeArgs("kill_session", req.Params.Arguments, &a); err != nil {
		return toolError(err), nil
	}
	if a.SessionID == nil {
		return toolError(fmt.Errorf("kill_session: argument \"session_id\" is required")), nil
	}
	if a.Offset != nil || a.Limit != nil {
		return toolError(fmt.Errorf("kill_session: unknown argument (known: session_id)")), nil
	}
	r, err := s.o.Kill(ctx, *a.SessionID)
	if err != nil {
		return toolError(fmt.Errorf("kill_session: %w", err)), nil
	}
	return respResult(r), nil
}

func (s *Server) readLog(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a sessionArgs
	if err := decodeArgs("read_log", req.Params.Arguments, &a); err != nil {
		return toolError(err), nil
	}
	if a.SessionID == nil {
		return toolError(fmt.Errorf("read_log: argument \"session_id\" is required")), nil
	}
	offset, limit := -1, 200
	if a.Offset != nil {
		if *a.Offset < 0 {
			return toolError(fmt.Errorf("read_log: argument \"offset\" must be ≥ 0, got %d", *a.Offset)), nil
		}
		offset = *a.Offset
	}
	if a.Limit != nil {
		if *a.Limit < 1 {
			return toolError(fmt.Errorf("read_log: argument \"limit\" must be ≥ 1, got %d", *a.Limit)), nil
		}
		limit = *a.Limit
	}
	lines, first, total, err := s.o.Log(*a.SessionID, offset, limit)
	if err != nil {
		return toolError(fmt.Errorf("read_log: %w", err)), nil
	}
	var b strings.Builder
	if offset >= 0 && first > offset {
		// The log keeps the newest part: say where it starts rather
		// than silently giving other lines than asked.
		fmt.Fprintf(&b, "Session %d: lines 1-%d are no longer kept; the kept part starts at line %d.\n", *a.SessionID, first, first+1)
	}
	if len(lines) == 0 {
		fmt.Fprintf(&b, "Session %d: no lines in that range (%d lines retained).\n", *a.SessionID, total)
	} else {
		fmt.Fprintf(&b, "Session %d: lines %d-%d of %d\n", *a.SessionID, first+1, first+len(lines), total)
		for _, l := range lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return textResult(b.String()), nil
}
