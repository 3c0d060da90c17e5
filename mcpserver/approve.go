package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/unified-exec/unified-exec/approval"
	"github.com/unified-exec/unified-exec/orchestrator"
)

// Approvals travel by MCP elicitation: one form field, "decision". With
// go-sdk v1.8 a handler asks by returning InputRequests and is called
// again with the answers — on the 2026-07-28 protocol by the client, on
// older ones by the SDK itself after elicitation/create. So a question
// never runs anything: the orchestrator stops before any side effect,
// its progress is kept here under a random token (RequestState), and the
// next invocation resumes from it.

// decisionSchema is the elicitation form.
var decisionSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"decision": map[string]any{
			"type":        "string",
			"title":       "Decision",
			"description": "approve: run it once; approve_for_session: run it and do not ask again for the same command, cwd and terminal; deny: do not run it; abort: do not run it and stop the task",
			"enum":        []string{"approve", "approve_for_session", "deny", "abort"},
		},
	},
	"required": []string{"decision"},
}

// elicitPrompter answers from the responses of this invocation, or asks
// for input (NeedInput) when the client can be asked, or fails closed.
type elicitPrompter struct {
	answers map[string]approval.Answer
	canAsk  bool
}

var errNoElicitation = errors.New("the MCP client does not support elicitation, so nobody can approve")

func (p *elicitPrompter) Ask(_ context.Context, q approval.Question) (approval.Answer, error) {
	if a, ok := p.answers[q.Kind]; ok {
		return a, nil
	}
	if !p.canAsk {
		return approval.Deny, errNoElicitation
	}
	return approval.Deny, &orchestrator.NeedInput{Question: q}
}

func parseAnswer(r *mcp.ElicitResult) approval.Answer {
	switch r.Action {
	case "accept":
		d, _ := r.Content["decision"].(string)
		switch d {
		case "approve":
			return approval.ApproveOnce
		case "approve_for_session":
			return approval.ApproveForSession
		case "abort":
			return approval.Abort
		}
		return approval.Deny
	case "cancel":
		return approval.Abort
	}
	return approval.Deny // decline, or anything unknown
}

// pending keeps the state of calls waiting for an answer.
type pending struct {
	// mu guards m.
	mu sync.Mutex
	m  map[string]*pendingCall
}

type pendingCall struct {
	digest  string // the call's arguments: an answer applies to them only
	kind    string // the question asked: only its answer is taken
	state   *orchestrator.State
	created time.Time
	// resp and question: a network question's call (see network.go).
	resp     *orchestrator.Response
	question string
}

const pendingTTL = 30 * time.Minute

func (p *pending) put(digest, kind string, st *orchestrator.State) string {
	var b [16]byte
	rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]*pendingCall{}
	}
	for k, c := range p.m {
		if time.Since(c.created) > pendingTTL {
			delete(p.m, k)
		}
	}
	p.m[token] = &pendingCall{digest: digest, kind: kind, state: st, created: time.Now()}
	return token
}

// take returns the state of the call waiting under token and the kind of
// the question it asked.
func (p *pending) take(token, digest string) (*orchestrator.State, string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.m[token]
	if !ok || c.digest != digest {
		return nil, "", false
	}
	delete(p.m, token)
	return c.state, c.kind, true
}
