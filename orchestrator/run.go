package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"github.com/unified-exec/unified-exec/internal/tracepoint"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/unified-exec/unified-exec/approval"
	"github.com/unified-exec/unified-exec/policy"
	"github.com/unified-exec/unified-exec/unifiedexec"
)

// RunRequest is one command of the wrapper (`unified-exec -- CMD...`).
type RunRequest struct {
	Argv []string
	// Stdin, Stdout and Stderr are the wrapper's own streams, given to
	// the command as they are (see [unifiedexec.StreamRequest]); when
	// Stdin and Stdout are terminals the command gets a terminal of its
	// own mirrored to them. Nil Stdout or Stderr discard; a nil Stdin is
	// a closed one.
	Stdin, Stdout, Stderr *os.File
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

// Run takes argv through the pipeline of [Orchestrator.Exec] and runs it
// to the end on the wrapper's streams. A shell line runs only with a
// shell resolveShell accepts, by its listed path; a retry without the
// sandbox is asked as in Exec. It returns the command's exit code, or an
// error: *RefusedError (exit 126 for the wrapper), or unified-exec's own
// (exit 125). Notes go to Stderr, prefixed "unified-exec: ".
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
	stderr := req.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	note := noteWriter(stderr)
	var interruptedBy os.Signal
	p := &pipe{
		areq:     approval.Request{Argv: req.Argv, Cwd: o.ws, Home: o.home},
		pol:      &pol,
		prompter: o.prompt,
		ev:       event{Command: approval.Canonical(req.Argv), Cwd: o.ws},
		state:    &State{},
		started:  started,
		askCtx: func(ctx context.Context) (context.Context, func() bool) {
			actx, stop := untilSignal(ctx, req.Signals)
			return actx, func() bool {
				if sig := stop(); sig != nil {
					interruptedBy = sig
					return true
				}
				return false
			}
		},
	}
	if p.prompter == nil {
		p.prompter = approval.DenyPrompter{}
	}
	p.run = func(ctx context.Context, mode string) (*attempt, error) {
		return o.stream(ctx, req, &pol, mode, p.ev, note)
	}
	out, err := o.pipeline(ctx, p)
	if errors.Is(err, errInterrupted) {
		if out == nil || out.Final == nil {
			note(fmt.Sprintf("%v at the approval prompt: %s was not run", interruptedBy, approval.Display(req.Argv)))
			return signalCode(interruptedBy), nil
		}
	}
	if err != nil {
		return 0, err
	}
	why := approval.Escape(out.Why)
	switch out.Note {
	case noteNotRetried:
		note(fmt.Sprintf("the sandbox blocked this (%s); not retried (approval mode %s)", why, out.Mode))
	case noteDeclined:
		note(fmt.Sprintf("the sandbox blocked this (%s); not run again without it", why))
	case noteRetried:
		note(fmt.Sprintf("the sandbox blocked the first run (%s); it ran again without the sandbox", why))
	}
	return out.Final.Code, nil
}

// noteWriter writes the wrapper's notes to w, one line each prefixed
// "unified-exec: ", with every control character escaped; on a terminal
// each starts with approval.TerminalReset: the command may have left it
// concealed, or with a scroll region of one line (its output reaches the
// same terminal unchanged: the wrapper is a drop-in).
func noteWriter(w io.Writer) func(string) {
	reset := ""
	if f, ok := w.(*os.File); ok && unifiedexec.IsTerminal(f) {
		reset = approval.TerminalReset()
	}
	return func(s string) {
		lines := strings.Split(s, "\n")
		for i, l := range lines {
			lines[i] = approval.Escape(l)
		}
		fmt.Fprintf(w, "%sunified-exec: %s\n", reset, strings.Join(lines, "\n"))
	}
}

// stream runs the wrapper's command once under mode, on its streams.
func (o *Orchestrator) stream(ctx context.Context, req RunRequest, pol *policy.Policy, mode string, ev event, note func(string)) (*attempt, error) {
	sb, sandboxed, notes, plan, err := o.sandboxFor(pol.Sandbox, mode)
	if err != nil {
		ev.Event, ev.Sandbox, ev.Reason = "refused", mode, err.Error()
		o.audit.write(ev)
		return nil, err
	}
	for _, n := range notes {
		note(n)
	}
	ev.Event, ev.Sandbox = "spawn", mode
	if err := o.audit.write(ev); err != nil {
		return nil, err
	}
	stdout, stderr := req.Stdout, req.Stderr
	if stdout == nil || stderr == nil {
		null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		defer null.Close()
		if stdout == nil {
			stdout = null
		}
		if stderr == nil {
			stderr = null
		}
	}
	tracepoint.Mark("sandbox planned")
	env := o.egressEnv(sb)
	if !sandboxed {
		guard, notes := o.writableShellEnv()
		env = append(env, guard...)
		for _, n := range notes {
			note(n)
		}
	}
	watch := o.watch(sb, plan)
	o.commandStarts()
	res, err := o.m.Stream(ctx, unifiedexec.StreamRequest{
		Argv: req.Argv, Stdin: req.Stdin, Stdout: stdout, Stderr: stderr,
		Sandbox: sb, Env: env, Signals: req.Signals,
	})
	watch.Started()
	defer watch.Close()
	if err != nil {
		return nil, err
	}
	for _, n := range o.gitCheck(ev) {
		note(n)
	}
	if res.NothingLeft {
		o.lookedLast()
	}
	return &attempt{
		Mode: mode, Sandboxed: sandboxed, Exited: true, Code: res.Code,
		// Timed from the command's own start, not from before a question.
		Quick:       res.Ran < unifiedexec.DefaultExecYield,
		Interrupted: res.Interrupted, Output: res.Tail, notes: notes,
		plan: plan, net: watch.Refused(),
	}, nil
}

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
