package orchestrator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/unified-exec/unified-exec/approval"
	"github.com/unified-exec/unified-exec/egress"
	"github.com/unified-exec/unified-exec/policy"
	"github.com/unified-exec/unified-exec/sandbox"
	"github.com/unified-exec/unified-exec/unifiedexec"
)

// network is the orchestrator's part of allowlist mode: the egress
// service (started with the orchestrator, ended by Close), why there is
// none, and the answers and questions about hosts the policy leaves to a
// person. Its zero value is a network that is not in allowlist mode.
type network struct {
	svc *egress.Service
	err error // why allowlist mode cannot be enforced, when svc is nil

	// mu guards the fields below.
	mu sync.Mutex
	// session holds the answers that last: host:port → allowed.
	session map[string]bool
	// asking are the questions being asked, by host:port: later
	// connections to the same host wait for the same answer.
	asking map[string]*NetworkQuestion
	// changed is closed (and replaced) whenever a question is added or
	// answered, for hosts that watch the list.
	changed chan struct{}
}

// NetworkQuestion is a question of the egress proxy waiting for a
// person: may sandboxed commands connect to Host:Port? Hosts that ask
// through their own channel (MCP elicitation) list them with
// [Orchestrator.NetworkQuestions] and answer with
// [Orchestrator.AnswerNetwork].
type NetworkQuestion struct {
	ID       string
	Question approval.Question
	// Claimed: a host has put it to a person and waits for the answer.
	Claimed bool

	done   chan struct{} // closed once answered
	answer approval.Answer
	why    string
}

// askWait bounds the wait for an answer from a host's channel: a question
// no call takes up in that time is refused (and not remembered).
const askWait = 2 * time.Minute

// startNetwork starts the egress service when the policy is in
// allowlist mode. A failure is kept, not returned: commands are then
// refused (or run with the network off, under required = false), and
// `sandbox status` says why.
func (o *Orchestrator) startNetwork(resolver egress.Resolver) {
	o.net = &network{changed: make(chan struct{})}
	if !NeedsEgress(o.pol) {
		return
	}
	rules, err := egress.Compile(o.pol.Network)
	if err != nil {
		o.net.err = err
		return
	}
	cfg := egress.Config{Rules: rules, Asker: o, Audit: o.auditNetwork}
	if resolver != nil {
		cfg.Resolver = resolver
	}
	svc, err := egress.Start(cfg)
	if err != nil {
		o.net.err = fmt.Errorf("%w (a network namespace needs root, or the program namespace that serve and wrap enter as an ordinary user)", err)
		return
	}
	o.net.svc = svc
}

// NeedsEgress reports whether an orchestrator on pol starts the egress
// service: allowlist mode, with commands that may run sandboxed.
func NeedsEgress(pol *policy.Policy) bool {
	return pol.NetworkMode() == policy.NetworkAllowlist && (pol.Sandbox.Mode != policy.ModeDangerFullAccess || hasSandboxedRules(pol))
}

// hasSandboxedRules reports whether a rule may run commands sandboxed
// under a danger-full-access policy.
func hasSandboxedRules(p *policy.Policy) bool {
	for _, r := range p.Rules {
		if r.Sandbox != "" && r.Sandbox != policy.ModeDangerFullAccess {
			return true
		}
	}
	return false
}

func (n *network) close() {
	if n == nil || n.svc == nil {
		return
	}
	n.svc.Close()
}

// Egress is the running egress service, or nil outside allowlist mode
// (and where it could not start: see [Orchestrator.EgressError]).
func (o *Orchestrator) Egress() *egress.Service { return o.net.svc }

// EgressError says why allowlist mode cannot be enforced here, or nil.
func (o *Orchestrator) EgressError() error { return o.net.err }

// networkMode is the network mode for a command run under sp (the
// wrapper's --network sets sp.Network).
func (o *Orchestrator) networkMode(sp policy.Sandbox) string {
	if sp.Network {
		return policy.NetworkOn
	}
	return o.pol.NetworkMode()
}

// egressPlan sets the plan's network for sp. In allowlist mode without
// an egress service, required = true refuses, and required = false runs
// the command with the network off, with a note.
func (o *Orchestrator) egressPlan(plan sandbox.Plan, sp policy.Sandbox) (sandbox.Plan, []string, error) {
	plan = plan.WithNetwork(o.networkMode(sp))
	if !plan.Egress || o.net.svc != nil {
		return plan, nil, nil
	}
	if sp.Required {
		return plan, nil, fmt.Errorf("%w: [network] mode = \"allowlist\" needs the egress network namespace: %v; set [sandbox] required = false to run commands with the network off instead", ErrSandboxUnavailable, o.net.err)
	}
	plan.Egress = false
	return plan, []string{"Network off: [network] mode = \"allowlist\" needs the egress network namespace (" + o.net.err.Error() + "; policy: required = false)."}, nil
}

// enterEgress makes sb start its command inside the egress namespace
// when the plan says so.
func (o *Orchestrator) enterEgress(sb *unifiedexec.Sandbox, plan sandbox.Plan) {
	if plan.Egress && o.net.svc != nil {
		sb.Enter = o.net.svc.Enter
	}
}

// egressEnv are the variables a command started under sb needs: the
// proxy's, when it runs in the egress namespace.
func (o *Orchestrator) egressEnv(sb *unifiedexec.Sandbox) []string {
	if sb == nil || sb.Enter == nil || o.net.svc == nil {
		return nil
	}
	return o.net.svc.Env()
}

// AskNetwork is the egress proxy's question about a host no entry
// names: a remembered answer, else refused under approval mode never,
// else asked — on the orchestrator's prompter when it has one (the
// terminal when wrapping), else on the hosts' channel (MCP elicitation,
// see [Orchestrator.NetworkQuestions]). Connections to the same host
// wait for one answer.
func (o *Orchestrator) AskNetwork(ctx context.Context, host string, port uint16) (bool, string) {
	key := hostKey(host, port)
	n := o.net
	n.mu.Lock()
	if ok, known := n.session[key]; known {
		n.mu.Unlock()
		if ok {
			return true, "approved for the session by the user"
		}
		return false, "denied for the session by the user"
	}
	if o.pol.Approval.Mode == policy.ApprovalNever {
		n.mu.Unlock()
		return false, "not asked: [approval] mode is never; add it to [network] allow"
	}
	q, asking := n.asking[key]
	if !asking {
		q = &NetworkQuestion{ID: newID(), Question: approval.Question{Kind: approval.KindNetwork, Host: host, Port: port}, done: make(chan struct{})}
		if n.asking == nil {
			n.asking = map[string]*NetworkQuestion{}
		}
		n.asking[key] = q
		n.changedLocked()
	}
	n.mu.Unlock()
	if !asking && o.prompt != nil {
		// Owner: this call; the others wait for its answer.
		// A wrapped command may have the terminal (raw mode, keys
		// copied to it): hand it back to the person for the question.
		resume := o.m.PauseTerminals()
		ans, err := o.prompt.Ask(ctx, q.Question)
		resume()
		why := ""
		if err != nil {
			ans, why = approval.Deny, "nobody can be asked: "+err.Error()
		} else if _, deny := o.prompt.(approval.DenyPrompter); deny {
			why = "nobody can be asked ([approval] prompt = \"deny\"); add it to [network] allow"
		}
		o.answerNetwork(q, ans, why)
	}
	timer := time.NewTimer(askWait)
	defer timer.Stop()
	select {
	case <-q.done:
	case <-ctx.Done():
		return false, "the proxy closed before an answer"
	case <-timer.C:
		o.answerNetwork(q, approval.Deny, "no answer within "+askWait.String())
		<-q.done
	}
	return q.answer == approval.ApproveOnce || q.answer == approval.ApproveForSession, q.why
}

func hostKey(host string, port uint16) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(int(port))
	}
	return host + ":" + strconv.Itoa(int(port))
}

func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (n *network) changedLocked() {
	close(n.changed)
	n.changed = make(chan struct{})
}

// answerNetwork settles q (once; later answers are ignored), remembers
// what lasts, and writes the answer to the audit log. why, when set,
// says why nobody answered.
func (o *Orchestrator) answerNetwork(q *NetworkQuestion, ans approval.Answer, why string) {
	n := o.net
	key := hostKey(q.Question.Host, q.Question.Port)
	n.mu.Lock()
	select {
	case <-q.done:
		n.mu.Unlock()
		return
	default:
	}
	switch {
	case why != "":
		ans = approval.Deny // nobody answered: refused, not remembered
	case ans == approval.ApproveOnce:
		why = "approved once by the user"
	case ans == approval.ApproveForSession:
		why = "approved for the session by the user"
		n.rememberLocked(key, true)
	default:
		ans, why = approval.Deny, "denied by the user (for the session)"
		n.rememberLocked(key, false)
	}
	q.answer, q.why = ans, why
	delete(n.asking, key)
	close(q.done)
	n.changedLocked()
	n.mu.Unlock()
	o.audit.write(event{Event: "network-answer", Command: key, Answer: ans.String(), Reason: why})
}

func (n *network) rememberLocked(key string, ok bool) {
	if n.session == nil {
		n.session = map[string]bool{}
	}
	n.session[key] = ok
}

// NetworkQuestions lists the questions waiting for a person, oldest
// first, and a channel closed at the next change of the list.
func (o *Orchestrator) NetworkQuestions() ([]NetworkQuestion, <-chan struct{}) {
	n := o.net
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []NetworkQuestion
	for _, q := range n.asking {
		out = append(out, NetworkQuestion{ID: q.ID, Question: q.Question, Claimed: q.Claimed})
	}
	return out, n.changed
}

// ClaimNetworkQuestion marks the question id as being put to a person
// by the caller, so no other call asks it too; false when it is gone or
// already claimed.
func (o *Orchestrator) ClaimNetworkQuestion(id string) (approval.Question, bool) {
	n := o.net
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, q := range n.asking {
		if q.ID == id && !q.Claimed {
			q.Claimed = true
			return q.Question, true
		}
	}
	return approval.Question{}, false
}

// AnswerNetwork answers the question id (a no-op when it is gone); why,
// when set, says why nobody could answer (the answer is then a refusal).
func (o *Orchestrator) AnswerNetwork(id string, ans approval.Answer, why string) {
	n := o.net
	n.mu.Lock()
	var q *NetworkQuestion
	for _, c := range n.asking {
		if c.ID == id {
			q = c
		}
	}
	n.mu.Unlock()
	if q != nil {
		o.answerNetwork(q, ans, why)
	}
}

// netEvent is an audit line for one connection of the egress proxy.
type netEvent struct {
	Time  string `json:"time"`
	Event string `json:"event"` // "network"
	egress.Record
	DurationMS float64 `json:"duration_ms"`
}

// auditNetwork writes one line per proxied connection.
func (o *Orchestrator) auditNetwork(r egress.Record) {
	l := o.audit
	if l == nil {
		return
	}
	b, err := json.Marshal(netEvent{Time: time.Now().UTC().Format(time.RFC3339Nano), Event: "network", Record: r, DurationMS: float64(r.Duration.Microseconds()) / 1000})
	if err != nil {
		return
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return
	}
	if _, err := l.f.Write(b); err != nil && !l.warned {
		l.warned = true
		fmt.Fprintf(os.Stderr, "unified-exec: audit log %q cannot be written: %v; events are being lost (required = false)\n", l.path, err)
	}
}

var _ egress.Asker = (*Orchestrator)(nil)
