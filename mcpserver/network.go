package mcpserver

import (
	"context"
	"fmt"
	"github.com/unified-exec/unified-exec/orchestrator"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/unified-exec/unified-exec/approval"
)

// Network questions (allowlist mode, [network] ask = true) arise while a
// command runs: the egress proxy holds a connection to a host no entry
// names until a person answers. A call that is waiting for output
// (exec_command, write_stdin) ends its window as soon as one is waiting,
// puts it to the person by elicitation — the response it would have
// returned is kept under its RequestState token — and, called again with
// the answer, passes it on and returns that response with a note. A
// client that cannot elicit has the questions refused.

// networkSchema is the elicitation form of a network question.
var networkSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"decision": map[string]any{
			"type":        "string",
			"title":       "Decision",
			"description": "approve: let this connection through; approve_for_session: this host and port until the server exits; deny: refuse it until the server exits",
			"enum":        []string{"approve", "approve_for_session", "deny"},
		},
	},
	"required": []string{"decision"},
}

// netWatch returns ctx, cancelled once a network question waits for a
// person and the client can be asked; when it cannot, waiting questions
// are refused as they come. stop ends the watch. Owner of its goroutine:
// the calling handler, through stop.
func (s *Server) netWatch(ctx context.Context, canAsk bool) (context.Context, func()) {
	if s.o.Egress() == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for {
			qs, changed := s.o.NetworkQuestions()
			for _, q := range qs {
				if q.Claimed {
					continue
				}
				if !canAsk {
					s.o.AnswerNetwork(q.ID, approval.Deny, errNoElicitation.Error())
					continue
				}
				cancel()
				return
			}
			select {
			case <-changed:
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		close(done)
		<-ended
		cancel()
	}
}

// respondAsking returns r, or, when a network question waits and the
// client can be asked, the question (r kept for the answer's call).
func (s *Server) respondAsking(digest string, r *orchestrator.Response, canAsk bool) *mcp.CallToolResult {
	if canAsk && s.o.Egress() != nil {
		qs, _ := s.o.NetworkQuestions()
		for _, nq := range qs {
			q, ok := s.o.ClaimNetworkQuestion(nq.ID)
			if !ok {
				continue
			}
			token := s.pending.put(digest, approval.KindNetwork, nil)
			s.pending.mu.Lock()
			if c := s.pending.m[token]; c != nil {
				c.resp, c.question = r, nq.ID
			}
			s.pending.mu.Unlock()
			return &mcp.CallToolResult{
				InputRequests: mcp.InputRequestMap{approval.KindNetwork: &mcp.ElicitParams{Message: q.Text(), RequestedSchema: networkSchema}},
				RequestState:  token,
			}
		}
	}
	return respResult(r)
}

// resumeNetwork handles a call that brings the answer to a network
// question (ok false: the token is not one of those).
func (s *Server) resumeNetwork(req *mcp.CallToolRequest, digest string) (*mcp.CallToolResult, bool) {
	token := req.Params.RequestState
	if token == "" {
		return nil, false
	}
	s.pending.mu.Lock()
	c, ok := s.pending.m[token]
	if !ok || c.kind != approval.KindNetwork || c.digest != digest {
		s.pending.mu.Unlock()
		return nil, false
	}
	delete(s.pending.m, token)
	s.pending.mu.Unlock()
	ans := approval.Deny
	if er, ok := req.Params.InputResponses[approval.KindNetwork].(*mcp.ElicitResult); ok {
		ans = parseAnswer(er)
	}
	qs, _ := s.o.NetworkQuestions()
	what := "a host"
	for _, q := range qs {
		if q.ID == c.question {
			what = fmt.Sprintf("%s:%d", q.Question.Host, q.Question.Port)
		}
	}
	s.o.AnswerNetwork(c.question, ans, "")
	r := *c.resp
	r.Notes = append(append([]string(nil), r.Notes...), "Network: "+what+" "+answerText(ans)+".")
	canAsk := false
	if caps := req.ClientCapabilities(); caps != nil && caps.Elicitation != nil {
		canAsk = true
	}
	return s.respondAsking(digest, &r, canAsk), true
}

func answerText(a approval.Answer) string {
	switch a {
	case approval.ApproveOnce:
		return "was approved for one connection"
	case approval.ApproveForSession:
		return "was approved until the server exits"
	}
	return "was refused by the user, until the server exits"
}
