package orchestrator

import (
	"context"
	"fmt"
	"github.com/unified-exec/unified-exec/internal/tracepoint"
	"strings"
	"time"

	"github.com/unified-exec/unified-exec/approval"
	"github.com/unified-exec/unified-exec/policy"
	"github.com/unified-exec/unified-exec/sandbox"
	"github.com/unified-exec/unified-exec/unifiedexec"
)

// The one pipeline every request takes, the MCP server's (Exec) and the
// wrapper's (Run): decide → approve → run sandboxed → detect a denial →
// ask to run without the sandbox → run again. The front ends differ only
// in how a command runs (a session; the caller's own streams), how notes
// reach the reader (the response; stderr) and how a question is waited
// for (a context that signals cancel, for the wrapper).

// attempt is one run of the command, as the pipeline judges it.
type attempt struct {
	// Mode is the sandbox mode it was started under.
	Mode string
	// Sandboxed: it really ran under the sandbox. False for
	// danger-full-access, and for a policy with required = false on a
	// host that lacks the sandbox.
	Sandboxed bool
	// Exited: it ended within its first window (a session still running
	// is not judged).
	Exited bool
	Code   int
	// Quick: it exited soon after its own start (within the first
	// window), so a denial is likely what stopped it.
	Quick bool
	// Interrupted: a signal was passed to it (the wrapper).
	Interrupted bool
	// Output is what denial detection reads.
	Output string
	// plan is the plan it ran under (nil: none), and net the socket calls
	// its sandbox refused (counted: see sandbox.NetWatch), for
	// sandbox.Attribute.
	plan *sandbox.Plan
	net  sandbox.NetRefusals

	// resp is the MCP response, for Exec.
	resp *unifiedexec.Response
	// notes say how the command ran (from sandboxFor).
	notes []string
}

// noteKind is what the pipeline has to say after a denial.
type noteKind int

const (
	_ noteKind = iota // none
	// noteNotRetried: denied, and the approval mode does not retry
	// (never, on-request).
	noteNotRetried
	// noteDeclined: denied, and running without the sandbox was declined
	// (or nobody could be asked).
	noteDeclined
	// noteRetried: denied, and run again without the sandbox.
	noteRetried
)

// outcome is what the pipeline did.
type outcome struct {
	// Final is the run whose result the caller reports: the retry when
	// there was one.
	Final *attempt
	// Note and Why (the line that shows the denial) say what happened
	// after a denial; Mode is the approval mode.
	Note noteKind
	Why  string
	Mode string
	// Abort: the person asked to stop the whole task at the retry
	// question.
	Abort bool
}

// pipe is one request as the pipeline sees it.
type pipe struct {
	areq     approval.Request
	pol      *policy.Policy
	prompter approval.Prompter
	ev       event
	state    *State
	started  time.Time
	// run starts the command under mode and returns how it went.
	run func(ctx context.Context, mode string) (*attempt, error)
	// askCtx gives the context a question is asked under, and a stop
	// that ends it and says whether it was interrupted (the wrapper:
	// by a signal); nil asks under the request's context.
	askCtx func(ctx context.Context) (context.Context, func() bool)
}

// errInterrupted: a signal arrived while a question was open.
var errInterrupted = fmt.Errorf("interrupted at the question")

func (p *pipe) ask(ctx context.Context, q func(context.Context) error) error {
	if p.askCtx == nil {
		return q(ctx)
	}
	actx, stop := p.askCtx(ctx)
	err := q(actx)
	if stop() {
		return errInterrupted
	}
	return err
}

// pipeline takes p through the steps. The invariant, tested over every
// combination: nothing runs without the sandbox unless the policy gives
// the line danger-full-access (every command of it), or a person answered
// a question that said it would run without the sandbox.
func (o *Orchestrator) pipeline(ctx context.Context, p *pipe) (*outcome, error) {
	st := p.state
	ev := p.ev
	d := approval.Decide(p.areq, p.pol)
	if st.First == nil {
		ev.Event, ev.Decision, ev.By, ev.Reason = "decision", d.Outcome.String(), d.By, d.Reason
		if d.Rule != nil {
			ev.Rule = d.Rule.Line
		}
		if err := o.audit.write(ev); err != nil {
			return nil, err
		}
		switch d.Outcome {
		case approval.Forbidden:
			return nil, &RefusedError{Reason: "refused: " + approval.Escape(d.Reason)}
		case approval.NeedsApproval:
			if !st.Approved {
				if err := p.ask(ctx, func(ctx context.Context) error { return o.approve(ctx, p.prompter, p.areq, d, ev) }); err != nil {
					return nil, err
				}
				st.Approved = true
			}
		}
	}
	first := st.First
	if first == nil {
		var err error
		if first, err = p.run(ctx, d.Sandbox); err != nil {
			return nil, err
		}
	}
	out := &outcome{Final: first, Mode: p.pol.Approval.Mode}
	if !first.Sandboxed || !first.Exited || !first.Quick || first.Interrupted {
		o.exitEvent(ev, first, p.started)
		return out, nil
	}
	denial, denied := sandbox.Attribute(o.evidence(first, p.areq.Cwd))
	why := denial.String()
	if st.First != nil {
		denied, why = true, st.Denial
	}
	if !denied {
		o.exitEvent(ev, first, p.started)
		return out, nil
	}
	out.Why = why
	if st.First == nil {
		ev.Event, ev.Sandbox, ev.Denial = "denial", first.Mode, why
		o.audit.write(ev)
	}
	switch p.pol.Approval.Mode {
	case policy.ApprovalNever, policy.ApprovalOnRequest:
		out.Note = noteNotRetried
		o.exitEvent(ev, first, p.started)
		return out, nil
	}
	// on-failure and untrusted: running without the sandbox is a question
	// of its own, whatever was approved before.
	st.First, st.Denial = first, why
	var ans approval.Answer
	err := p.ask(ctx, func(ctx context.Context) error {
		var err error
		ans, err = o.askUnsandboxed(ctx, p.prompter, p.areq, d, why, ev)
		return err
	})
	if isNeedInput(err) {
		return nil, err // a question for the host; State keeps the first run
	}
	st.First = nil
	if err != nil || !approves(ans) {
		out.Note = noteDeclined
		out.Abort = ans == approval.Abort && err == nil
		o.exitEvent(ev, first, p.started)
		return out, nil
	}
	ev.Event, ev.Retry = "retry", true
	o.audit.write(ev)
	second, err := p.run(ctx, policy.ModeDangerFullAccess)
	if err != nil {
		return nil, err
	}
	out.Final, out.Note = second, noteRetried
	o.exitEvent(ev, second, p.started)
	return out, nil
}

// approves reports whether an answer lets the command run.
func approves(a approval.Answer) bool {
	return a == approval.ApproveOnce || a == approval.ApproveForSession
}

// askUnsandboxed asks whether to run a command again without the sandbox
// after the sandbox blocked it (why: the line that says so). It is always
// a question of its own, which says so: approving the sandboxed run, once
// or for the session, never covers it. Only "approve for the session" of
// this question, for this exact command (and cwd, tty), is remembered.
// The error is a question for the host to forward (*NeedInput); a
// prompter that cannot ask is a denial.
func (o *Orchestrator) askUnsandboxed(ctx context.Context, p approval.Prompter, areq approval.Request, d approval.Decision, why string, ev event) (approval.Answer, error) {
	q := approval.Question{Kind: approval.KindRetryUnsandboxed, Request: areq, Reason: d.Reason, Sandbox: policy.ModeDangerFullAccess, Denial: why}
	if o.cache.Approved(q) {
		ev.Event, ev.By, ev.Answer = "retry-question", approval.ByCache, approval.ApproveForSession.String()
		o.audit.write(ev)
		return approval.ApproveOnce, nil
	}
	ans, err := p.Ask(ctx, q)
	if err != nil {
		if isNeedInput(err) {
			return approval.Deny, err
		}
		ans = approval.Deny
	}
	ev.Event, ev.By, ev.Answer = "retry-question", approval.ByUser, ans.String()
	o.audit.write(ev)
	if ans == approval.ApproveForSession {
		o.cache.ApproveForSession(q)
	}
	return ans, nil
}

// approve asks (or finds a cached approval) and returns nil when the
// command may run.
func (o *Orchestrator) approve(ctx context.Context, p approval.Prompter, areq approval.Request, d approval.Decision, ev event) error {
	q := approval.Question{Kind: approval.KindApprove, Request: areq, Reason: d.Reason, Rule: d.Rule, Sandbox: d.Sandbox, Unjudged: d.Unjudged}
	if o.cache.Approved(q) {
		ev.Event, ev.By = "approved", approval.ByCache
		return o.audit.write(ev)
	}
	ans, err := p.Ask(ctx, q)
	if err != nil {
		if isNeedInput(err) {
			return err
		}
		ev.Event, ev.Answer = "refused", "no one to ask: "+err.Error()
		o.audit.write(ev)
		return &RefusedError{Reason: approval.RefusalMessage(q, o.pol.Source)}
	}
	ev.Event, ev.By, ev.Answer = "answer", approval.ByUser, ans.String()
	o.audit.write(ev)
	switch ans {
	case approval.ApproveOnce:
		return nil
	case approval.ApproveForSession:
		o.cache.ApproveForSession(q)
		return nil
	case approval.Abort:
		return &RefusedError{Reason: "aborted by the user: " + approval.Display(areq.Argv) + " was not run; stop and ask the user how to proceed", Abort: true}
	}
	if dp, ok := p.(approval.DenyPrompter); ok {
		return &RefusedError{Reason: approval.RefusalMessageWhy(q, o.pol.Source, dp.WhyNotAsked())}
	}
	return &RefusedError{Reason: "the user denied running " + approval.Display(areq.Argv) + "; do not retry it as is"}
}

// sandboxFor compiles the plan for sp in mode — anew for every command,
// so paths that appeared since (a .git after git init) are protected — and
// checks the host can enforce it. It returns the sandbox to run under
// (nil: none), whether the command will really be sandboxed, notes
// that say how it runs when the policy allows less than the whole
// sandbox (required = false), and the plan (nil when not sandboxed).
func (o *Orchestrator) sandboxFor(sp policy.Sandbox, mode string) (sb *unifiedexec.Sandbox, sandboxed bool, notes []string, _ *sandbox.Plan, err error) {
	// The git state before the first command is taken (started with the
	// orchestrator) while the plan is made, and before the command runs.
	defer o.gitBaseline()
	if mode == policy.ModeDangerFullAccess {
		return nil, false, nil, nil, nil
	}
	sp.Mode = mode
	plan, err := sandbox.Compile(sp, o.ws)
	if err != nil {
		return nil, false, nil, nil, err
	}
	tracepoint.Mark("compiled the sandbox")
	plan.AddReadOnlyFiles(o.readOnly...)
	plan.Keep(o.kept.list())
	o.kept.add(plan.Kept())
	warnings := o.planWarnings(plan)
	plan, notes, err = o.egressPlan(plan, sp)
	if err != nil {
		return nil, false, nil, nil, err
	}
	notes = append(warnings, notes...)
	if missing := o.status.Missing(plan); len(missing) > 0 {
		if sp.Required {
			return nil, false, nil, nil, fmt.Errorf("%w: this host lacks %s; set [sandbox] required = false to run unsandboxed, or mode = \"danger-full-access\"", ErrSandboxUnavailable, strings.Join(missing, ", "))
		}
		return nil, false, []string{"Running WITHOUT the sandbox: this host lacks " + strings.Join(missing, ", ") + " (policy: required = false)."}, nil, nil
	}
	if lost := o.status.Unenforced(plan); len(lost) > 0 {
		if sp.Required {
			return nil, false, nil, nil, fmt.Errorf("%w: %s, so commands would run without %s. To fix: %s, or set [sandbox] required = false to run commands under Landlock and seccomp alone", ErrSandboxUnavailable, o.status.NamespaceErr, strings.Join(lost, ", nor "), o.status.NamespaceFix())
		}
		notes = append(notes, "Sandboxed by Landlock and seccomp alone ("+o.status.NamespaceErr+"; policy: required = false), without "+strings.Join(lost, ", nor ")+".")
	}
	payload, err := plan.Marshal()
	if err != nil {
		return nil, false, nil, nil, err
	}
	sb = &unifiedexec.Sandbox{Payload: payload, Key: sandboxKey(plan)}
	if o.status.ThreadSandbox {
		sb.Thread = sandbox.ApplyThread
	}
	o.enterEgress(sb, plan)
	return sb, true, notes, &plan, nil
}

// exitEvent writes how a run ended, or that it goes on as a session.
func (o *Orchestrator) exitEvent(ev event, a *attempt, started time.Time) {
	ev.Event, ev.Sandbox = "exit", a.Mode
	if a.Exited {
		c := a.Code
		ev.ExitCode = &c
	} else if a.resp != nil {
		ev.Event, ev.Session = "running", a.resp.SessionID
		o.track(a.resp.SessionID, ev)
	}
	ev.DurationMS = time.Since(started).Milliseconds()
	o.audit.write(ev)
}

// planWarnings are the plan's notes a person must see, each told once per
// orchestrator (in the first response, or on the wrapper's stderr): a
// home inside a writable root, a secret store left readable (red team 31:
// they reached only policy explain).
func (o *Orchestrator) planWarnings(plan sandbox.Plan) []string {
	var out []string
	for _, n := range plan.Notes {
		if !strings.HasPrefix(n, "the home folder ") && !strings.Contains(n, "which holds the workspace: left readable") {
			continue
		}
		if _, told := o.toldPlanNotes.LoadOrStore(n, true); !told {
			out = append(out, "Sandbox: "+n+".")
		}
	}
	return out
}
