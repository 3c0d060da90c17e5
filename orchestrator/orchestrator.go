package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/unified-exec/unified-exec/approval"
	"github.com/unified-exec/unified-exec/policy"
	"github.com/unified-exec/unified-exec/ptyrun"
	"github.com/unified-exec/unified-exec/sandbox"
	"github.com/unified-exec/unified-exec/unifiedexec"
)

// Config sets up an [Orchestrator].
type Config struct {
	// Policy decides; nil means the embedded default.
	Policy *policy.Policy
	// Workspace is the directory commands run in and may write; empty
	// means the current directory.
	Workspace string
	// Prompter asks a person when a request needs approval and the call
	// brings no prompter of its own; nil means nobody can be asked.
	Prompter approval.Prompter
	// Manager runs the commands; nil creates one from the policy.
	Manager *unifiedexec.Manager
	// Status is what the host enforces; zero means probe it.
	Status *sandbox.Status
	// OnBackgroundExit is passed to the manager it creates (see
	// unifiedexec.Config).
	OnBackgroundExit func(id, code int, lastLines []string)
	// HelperPerSession is passed to the manager it creates (see
	// unifiedexec.Config).
	HelperPerSession bool
}

// Orchestrator takes one request through approval, sandbox choice, spawn,
// denial check and retry. Safe for concurrent use.
type Orchestrator struct {
	pol    *policy.Policy
	ws     string
	m      *unifiedexec.Manager
	prompt approval.Prompter
	status sandbox.Status
	cache  approval.Cache
	audit  *auditLog
	// limitNoted: the model was told once that max_processes is not
	// enforced here (the start-up line and `sandbox status` say it too);
	// repeating it on every response would only be noise.
	limitNoted atomic.Bool
}

// New returns an Orchestrator for cfg. It fails when the audit log is
// required and cannot be opened, or the workspace does not exist.
func New(cfg Config) (*Orchestrator, error) {
	o := &Orchestrator{pol: cfg.Policy, prompt: cfg.Prompter}
	if o.pol == nil {
		o.pol = policy.Default()
	}
	ws := cfg.Workspace
	if ws == "" {
		ws, _ = os.Getwd()
	}
	ws, err := filepath.Abs(ws)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(ws); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("workspace %q is not a directory", ws)
	}
	o.ws = ws
	if cfg.Status != nil {
		o.status = *cfg.Status
	} else {
		o.status = sandbox.HostStatus()
	}
	o.audit, err = openAudit(o.pol.Audit)
	if err != nil {
		return nil, err
	}
	o.m = cfg.Manager
	if o.m == nil {
		o.m = unifiedexec.New(unifiedexec.Config{
			Workspace:        ws,
			Env:              o.pol.Env.Build(os.Environ()),
			MaxSessions:      o.pol.Limits.MaxSessions,
			SessionTimeout:   o.pol.Limits.IdleTimeout(),
			MaxOutputTokens:  o.pol.Limits.MaxOutputTokens,
			BufferBytes:      o.pol.Limits.OutputBufferBytes,
			MaxProcesses:     maxProcesses(o.pol.Limits.MaxProcesses, o.status),
			OnBackgroundExit: cfg.OnBackgroundExit,
			HelperPerSession: cfg.HelperPerSession,
		})
	}
	return o, nil
}

// maxProcesses is the per-session limit the manager can enforce here: the
// policy's, or none where the host has no pids cgroup (`sandbox status`
// and every exec_command response say so).
func maxProcesses(n int, st sandbox.Status) int {
	if !st.ProcessLimit {
		return 0
	}
	return n
}

// Policy is the policy in force.
func (o *Orchestrator) Policy() *policy.Policy { return o.pol }

// Workspace is the absolute workspace directory.
func (o *Orchestrator) Workspace() string { return o.ws }

// Manager is the session manager behind the orchestrator; write_stdin,
// list_sessions, kill_session and read_log go to it directly.
func (o *Orchestrator) Manager() *unifiedexec.Manager { return o.m }

// Close kills every session and closes the audit log.
func (o *Orchestrator) Close() {
	o.m.Close()
	o.audit.close()
}

// Request is one exec_command call with its approval context.
type Request struct {
	unifiedexec.ExecRequest
	// Escalate asks to run without the sandbox (sandbox_permissions =
	// require_escalated); Justification is shown to the user.
	Escalate      bool
	Justification string
	// Prompter asks for this call (MCP elicitation); nil = the
	// orchestrator's.
	Prompter approval.Prompter
	// State carries a call across re-invocations (MCP multi-round-trip):
	// what was decided and run before the last question. Nil for a new
	// call.
	State *State
}

// State is a request's progress, kept by a host between a question and
// its answer so nothing runs twice.
type State struct {
	// Approved: a person approved the command (or a cached approval) to
	// run as decided. It never covers running it without the sandbox after
	// a denial: that is a question of its own.
	Approved bool
	// First is the sandboxed run that was denied, and Denial the line
	// that says so, while the retry question is open.
	First  *unifiedexec.Response
	Denial string
}

// RefusedError is a request that did not run: forbidden by policy, or
// approval refused. Its message is for the model.
type RefusedError struct {
	Reason string
	// Abort: the person asked to stop the whole task.
	Abort bool
}

func (e *RefusedError) Error() string { return e.Reason }

// ErrSandboxUnavailable: the policy requires a sandbox this host cannot
// enforce.
var ErrSandboxUnavailable = errors.New("the sandbox required by the policy is unavailable")

// Exec runs one request: shell check → approval → sandbox → spawn →
// denial check → retry. The shell must be one resolveShell accepts. A
// retry without the sandbox (on-failure, untrusted) is always a question
// of its own that says so, whatever was approved before. A refusal is a
// *RefusedError; a question a host must forward is returned as the
// prompter's error (e.g. *NeedInput) with req.State updated, so calling
// again with the answer resumes where it stopped.
func (o *Orchestrator) Exec(ctx context.Context, req Request) (*unifiedexec.Response, error) {
	started := time.Now()
	if strings.TrimSpace(req.Cmd) == "" {
		return nil, unifiedexec.ErrEmptyCommand
	}
	if req.State == nil {
		req.State = &State{}
	}
	st := req.State
	shell, err := o.resolveShell(req.Shell, o.pol.Sandbox)
	if err != nil {
		o.audit.write(event{Event: "refused", Command: req.Cmd, Reason: err.Error()})
		return nil, err
	}
	req.Shell = shell
	flag := "-lc"
	if req.Login != nil && !*req.Login {
		flag = "-c"
	}
	cwd := o.ws
	if req.Workdir != "" {
		cwd = req.Workdir
		if !filepath.IsAbs(cwd) {
			cwd = filepath.Join(o.ws, cwd)
		}
	}
	areq := approval.Request{
		Argv: []string{shell, flag, req.Cmd}, Cwd: cwd, TTY: req.TTY,
		Escalated: req.Escalate, Justification: req.Justification,
	}
	prompter := req.Prompter
	if prompter == nil {
		prompter = o.prompt
	}
	if prompter == nil {
		prompter = approval.DenyPrompter{}
	}
	ev := event{Command: req.Cmd, Cwd: cwd, TTY: req.TTY}

	d := approval.Decide(areq, o.pol)
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
				if err := o.approve(ctx, prompter, areq, d, ev); err != nil {
					return nil, err
				}
				st.Approved = true
			}
		}
	}

	mode := d.Sandbox
	var resp *unifiedexec.Response
	if st.First != nil {
		resp = st.First
	} else {
		resp, err = o.spawn(ctx, req.ExecRequest, mode, ev)
		if err != nil {
			return nil, err
		}
	}
	sandboxed := mode != policy.ModeDangerFullAccess
	if resp.ExitCode == nil || !sandboxed || resp.Notes != nil && hasUnsandboxedNote(resp.Notes) {
		o.exitEvent(ev, resp, mode, started)
		return resp, nil
	}
	denied, why := sandbox.DetectDenial(true, *resp.ExitCode, resp.Output)
	if st.First != nil {
		denied, why = true, st.Denial
	}
	if !denied {
		o.exitEvent(ev, resp, mode, started)
		return resp, nil
	}
	if st.First == nil {
		ev.Event, ev.Sandbox, ev.Denial = "denial", mode, why
		o.audit.write(ev)
	}
	switch o.pol.Approval.Mode {
	case policy.ApprovalNever:
		resp.Notes = append(resp.Notes, "The sandbox likely blocked this ("+why+"). Approval mode is never, so it was not retried without the sandbox.")
		return resp, nil
	case policy.ApprovalOnRequest:
		resp.Notes = append(resp.Notes, "The sandbox likely blocked this ("+why+"). If the command needs more access, run it again with sandbox_permissions = \"require_escalated\" and a justification.")
		return resp, nil
	}
	// on-failure and untrusted: running without the sandbox is a question
	// of its own, whatever was approved before.
	st.First, st.Denial = resp, why
	ans, err := o.askUnsandboxed(ctx, prompter, areq, d, why, ev)
	if err != nil {
		return nil, err // a question for the host; State keeps the first run
	}
	if !approves(ans) {
		st.First = nil
		resp.Notes = append(resp.Notes, "The sandbox likely blocked this ("+why+"); running it without the sandbox was declined.")
		o.exitEvent(ev, resp, mode, started)
		if ans == approval.Abort {
			return nil, &RefusedError{Reason: "aborted by the user after a sandbox denial; stop and ask the user how to proceed", Abort: true}
		}
		return resp, nil
	}
	st.First = nil
	ev.Event, ev.Retry = "retry", true
	o.audit.write(ev)
	retried, err := o.spawn(ctx, req.ExecRequest, policy.ModeDangerFullAccess, ev)
	if err != nil {
		return nil, err
	}
	retried.Notes = append(retried.Notes, "The sandbox blocked the first run ("+why+"); this is the output of a second run without the sandbox.")
	o.exitEvent(ev, retried, policy.ModeDangerFullAccess, started)
	return retried, nil
}

func hasUnsandboxedNote(notes []string) bool {
	for _, n := range notes {
		if strings.HasPrefix(n, unsandboxedNote) {
			return true
		}
	}
	return false
}

const unsandboxedNote = "Running WITHOUT the sandbox:"

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
	q := approval.Question{Kind: approval.KindApprove, Request: areq, Reason: d.Reason, Rule: d.Rule, Sandbox: d.Sandbox}
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
	if _, ok := p.(approval.DenyPrompter); ok {
		return &RefusedError{Reason: approval.RefusalMessage(q, o.pol.Source)}
	}
	return &RefusedError{Reason: "the user denied running " + approval.Display(areq.Argv) + "; do not retry it as is"}
}

// NeedInput is returned by a prompter that cannot answer now but will be
// able to when the call is made again (MCP multi-round-trip).
type NeedInput struct {
	Question approval.Question
}

func (e *NeedInput) Error() string { return "needs input: " + e.Question.Text() }

func isNeedInput(err error) bool {
	var n *NeedInput
	return errors.As(err, &n)
}

// spawn starts the command under mode's sandbox.
func (o *Orchestrator) spawn(ctx context.Context, req unifiedexec.ExecRequest, mode string, ev event) (*unifiedexec.Response, error) {
	helper, notes, err := o.helperFor(o.pol.Sandbox, mode)
	if err != nil {
		ev.Event, ev.Sandbox, ev.Reason = "refused", mode, err.Error()
		o.audit.write(ev)
		return nil, err
	}
	req.Helper = helper
	req.Label = "sandbox: " + mode
	req.Notes = append(req.Notes, notes...)
	if o.pol.Limits.MaxProcesses > 0 && !o.status.ProcessLimit && !o.limitNoted.Swap(true) {
		req.Notes = append(req.Notes, "No process limit on this host ("+o.status.ProcessLimitErr+"): [limits] max_processes is not enforced.")
	}
	ev.Event, ev.Sandbox = "spawn", mode
	if err := o.audit.write(ev); err != nil {
		return nil, err
	}
	return o.m.Exec(ctx, req)
}

// helperFor compiles the plan for sp in mode — anew for every command,
// so paths that appeared since (a .git after git init) are protected — and
// checks the host can enforce it. Notes say when a command runs
// unsandboxed because the policy allows that.
func (o *Orchestrator) helperFor(sp policy.Sandbox, mode string) (*ptyrun.Helper, []string, error) {
	if mode == policy.ModeDangerFullAccess {
		if o.status.Namespaces {
			return &ptyrun.Helper{Isolate: true}, nil, nil
		}
		return nil, nil, nil
	}
	sp.Mode = mode
	plan, err := sandbox.Compile(sp, o.ws)
	if err != nil {
		return nil, nil, err
	}
	if missing := o.status.Missing(plan); len(missing) > 0 {
		if sp.Required {
			return nil, nil, fmt.Errorf("%w: this host lacks %s; set [sandbox] required = false to run unsandboxed, or mode = \"danger-full-access\"", ErrSandboxUnavailable, strings.Join(missing, ", "))
		}
		return nil, []string{unsandboxedNote + " this host lacks " + strings.Join(missing, ", ") + " (policy: required = false)."}, nil
	}
	var notes []string
	if lost := o.status.Unenforced(plan); len(lost) > 0 {
		if sp.Required {
			return nil, nil, fmt.Errorf("%w: %s, so commands would run without %s. To fix: %s, or set [sandbox] required = false to run commands under Landlock and seccomp alone", ErrSandboxUnavailable, o.status.NamespaceErr, strings.Join(lost, ", nor "), o.status.NamespaceFix())
		}
		notes = append(notes, "Sandboxed by Landlock and seccomp alone ("+o.status.NamespaceErr+"; policy: required = false), without "+strings.Join(lost, ", nor ")+".")
	}
	payload, err := plan.Marshal()
	if err != nil {
		return nil, nil, err
	}
	h := &ptyrun.Helper{Payload: payload, Isolate: o.status.Namespaces}
	if o.status.ThreadSandbox && o.status.Namespaces {
		// The thread sandbox makes a mount namespace on the forking
		// thread: it needs what the namespaces need.
		h.Thread = sandbox.ApplyThread
	}
	return h, notes, nil
}

func (o *Orchestrator) exitEvent(ev event, r *unifiedexec.Response, mode string, started time.Time) {
	ev.Event, ev.Sandbox = "exit", mode
	if r.ExitCode != nil {
		c := *r.ExitCode
		ev.ExitCode = &c
	} else {
		ev.Event, ev.Session = "running", r.SessionID
	}
	ev.DurationMS = time.Since(started).Milliseconds()
	o.audit.write(ev)
}

// RunRequest is one command of the wrapper (`unified-exec -- CMD...`).
type RunRequest struct {
	Argv []string
	// Output receives the command's output live (stdout and stderr merged).
	Output io.Writer
	// Sandbox overrides the policy's mode ("" = the policy's); Network
	// turns the network on.
	Sandbox string
	Network bool
	// Signals, when set, carries the signals the host process receives
	// (SIGINT, SIGTERM, SIGHUP). While the command runs, the first is
	// passed to its whole tree, as a terminal's Ctrl-C would be: make and
	// test runners stop their own way and the exit code is theirs (130
	// for an unhandled SIGINT). A second ends the tree (SIGTERM, then
	// SIGKILL after the grace); the same signal again within 500 ms is
	// taken for the first, relayed. At an approval prompt a signal cancels the
	// run. An interrupted command is never retried without the sandbox.
	Signals <-chan os.Signal
}

// Run takes argv through approval and the sandbox and runs it to the
// end, streaming its output. A shell line runs only with a shell
// resolveShell accepts, by its listed path; a retry without the sandbox is
// asked as in [Orchestrator.Exec]. It returns the command's exit code, or an
// error: *RefusedError (exit 126 for the wrapper), or unified-exec's own
// (exit 125).
func (o *Orchestrator) Run(ctx context.Context, req RunRequest) (int, error) {
	started := time.Now()
	pol := *o.pol
	if req.Sandbox != "" {
		pol.Sandbox.Mode = req.Sandbox
	}
	if req.Network {
		pol.Sandbox.Network = true
	}
	if len(req.Argv) > 0 {
		argv, err := o.shellLine(req.Argv, pol.Sandbox)
		if err != nil {
			o.audit.write(event{Event: "refused", Command: approval.Canonical(req.Argv), Cwd: o.ws, Reason: err.Error()})
			return 0, err
		}
		req.Argv = argv
	}
	areq := approval.Request{Argv: req.Argv, Cwd: o.ws}
	d := approval.Decide(areq, &pol)
	ev := event{Command: approval.Canonical(req.Argv), Cwd: o.ws, Event: "decision", Decision: d.Outcome.String(), By: d.By, Reason: d.Reason}
	if d.Rule != nil {
		ev.Rule = d.Rule.Line
	}
	if err := o.audit.write(ev); err != nil {
		return 0, err
	}
	prompter := o.prompt
	if prompter == nil {
		prompter = approval.DenyPrompter{}
	}
	switch d.Outcome {
	case approval.Forbidden:
		return 0, &RefusedError{Reason: "refused: " + approval.Escape(d.Reason)}
	case approval.NeedsApproval:
		actx, stop := untilSignal(ctx, req.Signals)
		err := o.approve(actx, prompter, areq, d, ev)
		if sig := stop(); sig != nil {
			fmt.Fprintf(os.Stderr, "unified-exec: %v at the approval prompt: %s was not run\n", sig, approval.Display(req.Argv))
			return signalCode(sig), nil
		}
		if err != nil {
			return 0, err
		}
	}
	mode := d.Sandbox
	run, err := o.runOnce(ctx, req, &pol, mode, ev)
	if err != nil {
		return 0, err
	}
	code := run.code
	sandboxed := mode != policy.ModeDangerFullAccess
	denied, why := sandbox.DetectDenial(sandboxed, code, run.tail.String())
	quick := time.Since(started) < unifiedexec.DefaultExecYield
	if !denied || !quick || run.interrupted {
		o.exitEvent(ev, &unifiedexec.Response{ExitCode: &code}, mode, started)
		return code, nil
	}
	ev.Event, ev.Denial = "denial", why
	o.audit.write(ev)
	switch o.pol.Approval.Mode {
	case policy.ApprovalNever, policy.ApprovalOnRequest:
		fmt.Fprintf(os.Stderr, "unified-exec: the sandbox likely blocked this (%s); not retried (approval mode %s)\n", approval.Escape(why), o.pol.Approval.Mode)
		return code, nil
	}
	// Running without the sandbox is a question of its own, whatever was
	// approved before.
	actx, stop := untilSignal(ctx, req.Signals)
	ans, err := o.askUnsandboxed(actx, prompter, areq, d, why, ev)
	stop() // a signal there is a refusal to retry
	if err != nil || !approves(ans) {
		fmt.Fprintf(os.Stderr, "unified-exec: the sandbox likely blocked this (%s); not run again without it\n", approval.Escape(why))
		o.exitEvent(ev, &unifiedexec.Response{ExitCode: &code}, mode, started)
		return code, nil
	}
	ev.Event, ev.Retry = "retry", true
	o.audit.write(ev)
	run, err = o.runOnce(ctx, req, &pol, policy.ModeDangerFullAccess, ev)
	code = run.code
	if err != nil {
		return 0, err
	}
	o.exitEvent(ev, &unifiedexec.Response{ExitCode: &code}, policy.ModeDangerFullAccess, started)
	return code, nil
}

// runResult is how one run of the wrapper's command ended.
type runResult struct {
	code        int
	tail        *tailBuffer // the last 64 KiB of output, for denial detection
	interrupted bool        // a signal was passed to the command
}

func (o *Orchestrator) runOnce(ctx context.Context, req RunRequest, pol *policy.Policy, mode string, ev event) (runResult, error) {
	helper, notes, err := o.helperFor(pol.Sandbox, mode)
	if err != nil {
		return runResult{}, err
	}
	for _, n := range notes {
		fmt.Fprintln(os.Stderr, "unified-exec: "+n)
	}
	ev.Event, ev.Sandbox = "spawn", mode
	if err := o.audit.write(ev); err != nil {
		return runResult{}, err
	}
	tail := &tailBuffer{max: 64 << 10}
	out := io.Writer(tail)
	if req.Output != nil {
		out = io.MultiWriter(req.Output, tail)
	}
	p, err := ptyrun.Start(ptyrun.Spec{
		Argv:     req.Argv,
		Dir:      o.ws,
		Env:      unifiedexec.BuildEnv(pol.Env.Build(os.Environ()), false),
		Output:   out,
		Helper:   o.m.HelperFor(helper),
		MaxProcs: o.m.MaxProcesses(),
	})
	if err != nil {
		return runResult{}, err
	}
	res := runResult{tail: tail}
	var last os.Signal
	var lastAt time.Time
	for done := false; !done; {
		select {
		case <-p.Done():
			done = true
		case <-ctx.Done():
			p.Kill(killGrace)
		case sig := <-req.Signals:
			if sig == last && time.Since(lastAt) < echoWindow {
				continue // the same Ctrl-C, relayed
			}
			last, lastAt = sig, time.Now()
			if res.interrupted {
				fmt.Fprintf(os.Stderr, "unified-exec: %v again: ending the command\n", sig)
				p.Kill(killGrace)
				continue
			}
			res.interrupted = true
			if s, ok := sig.(syscall.Signal); ok {
				p.Signal(s) // ErrExited: it is ending anyway
			}
		}
	}
	res.code = p.ExitStatus().Code
	return res, nil
}

// echoWindow: the same signal again within it is the same event. A
// terminal's Ctrl-C reaches every process of the foreground group, so the
// wrapper gets it directly and again through the relays of its namespace
// (the outer process and the init, which pass on a plain kill of the
// outer process).
const echoWindow = 500 * time.Millisecond

// killGrace is how long the wrapper's command has between SIGTERM and
// SIGKILL when it is ended.
const killGrace = 2 * time.Second

// untilSignal is ctx, cancelled when a signal arrives on sigs (nil: never);
// stop ends the watch, so that later signals reach the command, and
// returns the signal that cancelled ctx, if one did.
func untilSignal(ctx context.Context, sigs <-chan os.Signal) (context.Context, func() os.Signal) {
	if sigs == nil {
		return ctx, func() os.Signal { return nil }
	}
	ctx, cancel := context.WithCancelCause(ctx)
	quit := make(chan struct{})
	got := make(chan os.Signal, 1) // closed or holding the signal once the watcher ends
	go func() {
		defer close(got)
		select {
		case sig := <-sigs:
			got <- sig
			cancel(fmt.Errorf("interrupted by %v", sig))
		case <-quit:
		}
	}()
	return ctx, func() os.Signal {
		close(quit)
		sig := <-got
		cancel(nil)
		return sig
	}
}

// signalCode is the exit code of a command ended by sig, as a shell
// reports it.
func signalCode(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 128
}

// tailBuffer keeps the last max bytes written.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// Check starts `true` the way a command of the policy's sandbox mode
// starts — same plan, same helper or thread, same namespaces — and reports
// whether it ran, so that a status never claims what a spawn would not
// give. It asks nothing and writes no audit line.
func (o *Orchestrator) Check(ctx context.Context) error {
	helper, _, err := o.helperFor(o.pol.Sandbox, o.pol.Sandbox.Mode)
	if err != nil {
		return err
	}
	login := false
	r, err := o.m.Exec(ctx, unifiedexec.ExecRequest{Cmd: "exit 0", Shell: "/bin/sh", Login: &login, Helper: helper, Label: "check", Yield: 10 * time.Second, Forget: true})
	if err != nil {
		return err
	}
	if r.ExitCode == nil {
		o.m.Kill(ctx, r.SessionID)
		return fmt.Errorf("a sandboxed `true` did not exit within 10 s")
	}
	if *r.ExitCode != 0 {
		return fmt.Errorf("a sandboxed `true` exited %d: %s", *r.ExitCode, strings.TrimSpace(r.Output))
	}
	return nil
}
