package orchestrator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/unified-exec/unified-exec/approval"
	"github.com/unified-exec/unified-exec/internal/tracepoint"
	"github.com/unified-exec/unified-exec/policy"
	"github.com/unified-exec/unified-exec/unifiedexec"
)

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
	First  *attempt
	Denial string
}

// Exec runs one exec_command request through the pipeline: shell check →
// approval → sandbox → spawn → denial check → retry. The shell must be
// one resolveShell accepts. A retry without the sandbox (on-failure,
// untrusted) is always a question of its own that says so, whatever was
// approved before. A refusal is a *RefusedError; a question a host must
// forward is returned as the prompter's error (e.g. *NeedInput) with
// req.State updated, so calling again with the answer resumes where it
// stopped.
func (o *Orchestrator) Exec(ctx context.Context, req Request) (*unifiedexec.Response, error) {
	started := time.Now()
	if strings.TrimSpace(req.Cmd) == "" {
		return nil, unifiedexec.ErrEmptyCommand
	}
	if req.State == nil {
		req.State = &State{}
	}
	// The thread the session will fork from gets ready while the call is
	// judged and its sandbox planned.
	o.m.CallComing()
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
	p := &pipe{
		areq: approval.Request{
			Argv: []string{shell, flag, req.Cmd}, Cwd: cwd, TTY: req.TTY, Home: o.home,
			Escalated: req.Escalate, Justification: req.Justification,
		},
		pol:      o.pol,
		prompter: req.Prompter,
		ev:       event{Command: req.Cmd, Cwd: cwd, TTY: req.TTY},
		state:    req.State,
		started:  started,
	}
	if p.prompter == nil {
		p.prompter = o.prompt
	}
	if p.prompter == nil {
		p.prompter = approval.DenyPrompter{}
	}
	p.run = func(ctx context.Context, mode string) (*attempt, error) {
		return o.spawn(ctx, req.ExecRequest, mode, p.ev)
	}
	out, err := o.pipeline(ctx, p)
	if err != nil {
		return nil, err
	}
	resp := out.Final.resp
	why := approval.Escape(out.Why)
	switch out.Note {
	case noteNotRetried:
		if out.Mode == "never" {
			resp.Notes = append(resp.Notes, "The sandbox blocked this ("+why+"). Approval mode is never, so it was not retried without the sandbox.")
		} else {
			resp.Notes = append(resp.Notes, "The sandbox blocked this ("+why+"). If the command needs more access, run it again with sandbox_permissions = \"require_escalated\" and a justification.")
		}
	case noteDeclined:
		resp.Notes = append(resp.Notes, "The sandbox blocked this ("+why+"); running it without the sandbox was declined.")
		if out.Abort {
			return nil, &RefusedError{Reason: "aborted by the user after a sandbox denial; stop and ask the user how to proceed", Abort: true}
		}
	case noteRetried:
		resp.Notes = append(resp.Notes, "The sandbox blocked the first run ("+why+"); this is the output of a second run without the sandbox.")
	}
	return resp, nil
}

// spawn starts the command as a session under mode's sandbox; the
// attempt has exited when the session ended within its first window.
func (o *Orchestrator) spawn(ctx context.Context, req unifiedexec.ExecRequest, mode string, ev event) (*attempt, error) {
	tracepoint.Mark("call: planning the sandbox")
	sb, sandboxed, notes, plan, err := o.sandboxFor(o.pol.Sandbox, mode)
	tracepoint.Mark("call: sandbox planned")
	if err != nil {
		ev.Event, ev.Sandbox, ev.Reason = "refused", mode, err.Error()
		o.audit.write(ev)
		return nil, err
	}
	req.Sandbox = sb
	req.Env = o.egressEnv(sb)
	req.Label = "sandbox: " + mode
	if !sandboxed && mode != "danger-full-access" {
		req.Label = "sandbox: none (" + mode + " unavailable)"
	}
	req.Notes = append(req.Notes, notes...)
	if !sandboxed {
		// Whatever the guard changes, no login shell either: its
		// snapshot is taken in an environment of its own, which the
		// guard's would not reach (red team 32: a relative BASH_ENV ran
		// in the login shell's snapshot).
		env, n := o.writableShellEnv()
		if len(env) > 0 && (req.Login == nil || *req.Login) {
			login := false
			req.Login = &login
		}
		req.Env = append(req.Env, env...)
		req.Notes = append(req.Notes, n...)
	}
	if n := o.limitNote(); n != "" {
		req.Notes = append(req.Notes, n)
	}
	ev.Event, ev.Sandbox = "spawn", mode
	if err := o.audit.write(ev); err != nil {
		return nil, err
	}
	watch := o.watch(sb, plan)
	req.Sandbox = sb
	tracepoint.Mark("call: starting the session")
	o.commandStarts()
	resp, err := o.m.Exec(ctx, req)
	tracepoint.Mark("call: answered")
	watch.Started()
	if err != nil {
		watch.Close()
		return nil, err
	}
	resp.Notes = append(resp.Notes, o.gitCheck(ev)...)
	if resp.ExitCode == nil {
		resp.Notes = append(resp.Notes, gitRunningNote)
	}
	tracepoint.Mark("call: git checked")
	a := &attempt{Mode: mode, Sandboxed: sandboxed, Exited: resp.ExitCode != nil, Output: resp.Output, resp: resp, notes: notes, plan: plan}
	if a.Exited {
		a.Code, a.Quick = *resp.ExitCode, true
		// Its whole tree is gone: what was refused is final. (A session
		// still running keeps its watch, which ends with the session.)
		a.net = watch.Refused()
		watch.Close()
	}
	return a, nil
}

// writableStartup says why a command run outside the sandbox must not
// run as a login shell, or "": the login shell's startup files (HOME's
// .bash_profile, .profile, .bashrc; ZDOTDIR's) lie in a folder sandboxed
// commands can write, so they may be a command's, and a login shell taken
// outside the sandbox would run them there (red team 30: a command wrote
// ~/.bash_profile in a CI step's scratch HOME, and the next command a
// rule let out of the sandbox ran it). The HOME and ZDOTDIR are this
// program's and the commands' ([env] set: red team 31). A policy that
// sandboxes nothing runs no sandboxed command to fear.
func (o *Orchestrator) writableStartup() string {
	if o.pol.Sandbox.Mode == policy.ModeDangerFullAccess {
		return ""
	}
	for _, name := range []string{"HOME", "ZDOTDIR"} {
		for _, dir := range o.envValues(name) {
			if root := o.mayBeWritable(dir); root != "" {
				return fmt.Sprintf("Ran without a login shell and without the shell's startup files (as login: false; ZDOTDIR and SHLVL set so that zsh and bash read none): $%s (%s) lies in %s, which sandboxed commands can write, so the shell's startup files there may be a command's, and would have run outside the sandbox.", name, dir, root)
			}
		}
	}
	return ""
}

// mayBeWritable says where a shell's startup path (a HOME, a BASH_ENV)
// may name a file sandboxed commands can write, or "": a writable root
// holding it; for a relative path, which the shell takes from its
// working directory (the workspace, or a workdir in it), or one the shell
// expands itself ($HOME/.benv: bash expands BASH_ENV), the workspace (red
// team 32: [env] set BASH_ENV = "benv.sh" ran a command's file outside
// the sandbox).
func (o *Orchestrator) mayBeWritable(path string) string {
	if !filepath.IsAbs(path) || strings.ContainsAny(path, "$`~") {
		return o.ws
	}
	return o.inWritableRoot(path, o.pol.Sandbox)
}

// envValues are the values of the variable name in this program's
// environment and in the one commands get, each once, empty ones left
// out.
func (o *Orchestrator) envValues(name string) []string {
	var out []string
	if v := os.Getenv(name); v != "" {
		out = append(out, v)
	}
	if v := o.pol.Sandbox.CommandValue(name); v != "" && !slices.Contains(out, v) {
		out = append(out, v)
	}
	return out
}

// noStartupDir is what ZDOTDIR names for a command run outside the
// sandbox while the startup files may be a command's: a folder nobody
// makes (zsh reads $ZDOTDIR/.zshenv for every shell, login or not).
const noStartupDir = "/nonexistent/unified-exec-no-startup-files"

// writableShellEnv is what a command run outside the sandbox gets so that
// its shell reads no file a sandboxed command could have written, with a
// note for each: BASH_ENV (bash -c) and ENV (an interactive sh) emptied
// where they name a file in a writable root; and while the startup files
// are writable (see writableStartup), ZDOTDIR pointed where nothing is
// (zsh reads .zshenv for every shell: red team 31) and SHLVL at least 1
// (Debian's bash -c reads ~/.bashrc under SSH_CLIENT, or with a socket
// for stdin, when SHLVL was unset: red team 31).
func (o *Orchestrator) writableShellEnv() (env, notes []string) {
	if o.pol.Sandbox.Mode == policy.ModeDangerFullAccess {
		return nil, nil
	}
	for _, name := range []string{"BASH_ENV", "ENV"} {
		for _, file := range o.envValues(name) {
			if root := o.mayBeWritable(file); root != "" {
				env = append(env, name+"=")
				notes = append(notes, fmt.Sprintf("Ran with $%s empty: it names %s, in %s, which sandboxed commands can write, and its shell would have run it outside the sandbox.", name, file, root))
				break
			}
		}
	}
	if n := o.writableStartup(); n != "" {
		notes = append(notes, n)
		env = append(env, "ZDOTDIR="+noStartupDir)
		if n, err := strconv.Atoi(o.pol.Sandbox.CommandValue("SHLVL")); err != nil || n < 1 {
			env = append(env, "SHLVL=1")
		}
	}
	return env, notes
}

// limitNote says, once per orchestrator, that max_processes is not
// enforced on this host (the start-up line and `sandbox status` say it
// too; repeating it on every response would only be noise).
func (o *Orchestrator) limitNote() string {
	if o.pol.Limits.MaxProcesses > 0 && !o.status.ProcessLimit && !o.limitNoted.Swap(true) {
		return "No process limit on this host (" + o.status.ProcessLimitErr + "): [limits] max_processes is not enforced."
	}
	return ""
}
