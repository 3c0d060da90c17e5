package unifiedexec

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/unified-exec/unified-exec/ptyrun"
)

// StreamRequest is one command run to its end on the caller's own
// streams: the wrapper (`unified-exec -- CMD`).
type StreamRequest struct {
	Argv []string
	// Dir is the working directory; empty means the workspace.
	Dir string
	// Stdin, Stdout and Stderr are the caller's streams. When Stdin and
	// Stdout are terminals the command runs in a terminal of its own,
	// mirrored to the caller's (raw mode, window size, keys); otherwise
	// the three are passed as they are, except Stderr, copied through a
	// pipe so that its tail can be read (byte-exact, kept apart from
	// Stdout). A nil Stdin is a closed one: the command's stdin is
	// /dev/null.
	Stdin, Stdout, Stderr *os.File
	// Sandbox is the plan the command runs under; nil runs it
	// unsandboxed (still in a namespace where the host has them).
	Sandbox *Sandbox
	// Signals carries the signals the caller receives (SIGINT, SIGTERM,
	// SIGHUP). The first is passed to the command's whole tree, as a
	// terminal's Ctrl-C would be; a second ends the tree (SIGTERM, then
	// SIGKILL after the grace); the same signal again within SignalEchoWindow
	// is the first, relayed.
	Signals <-chan os.Signal
	// Env is set on top of the manager's environment (the egress proxy's
	// variables).
	Env []string
	// Spawned, if set, is called once the command has started.
	Spawned func()
}

// StreamResult is how a streamed command ended.
type StreamResult struct {
	// Code is its exit code, 128+N for a death by signal N.
	Code int
	// Tail is the last bytes it wrote to stderr (pipes) or to its
	// terminal, for denial detection.
	Tail string
	// Interrupted: a signal was passed to it.
	Interrupted bool
	// Ran is how long it ran, from its start to its exit.
	Ran time.Duration
	// TTY: it ran in a terminal mirrored to the caller's.
	TTY bool
	// NothingLeft: every process the command started has ended, and
	// with them every other process of the program's namespace (a
	// manager of one command, in a namespace of its own: see
	// ptyrun.EndStrays), so nothing can change the workspace from now
	// on but the program itself.
	NothingLeft bool
}

// tailMax is how much of a streamed command's output is kept for denial
// detection.
const tailMax = 64 << 10

// SignalEchoWindow: the same signal again within it is the same event. A
// terminal's Ctrl-C reaches every process of the foreground group, so the
// wrapper gets it directly and again through the relays of its namespace.
const SignalEchoWindow = 500 * time.Millisecond

// Stream runs req to its end on the caller's streams and returns how it
// ended. It never keeps a session: nothing of it is left when it returns.
func (m *Manager) Stream(ctx context.Context, req StreamRequest) (StreamResult, error) {
	if len(req.Argv) == 0 {
		return StreamResult{}, ErrEmptyCommand
	}
	dir := req.Dir
	if dir == "" {
		dir = m.cfg.Workspace
	}
	tail := &tailBuffer{max: tailMax}
	spec := ptyrun.Spec{
		Argv:     req.Argv,
		Dir:      dir,
		Env:      m.cfg.Env,
		Helper:   m.helperFor(req.Sandbox),
		MaxProcs: m.cfg.MaxProcesses,
		Forker:   m.forker,
		Pending:  &m.removals,
	}
	if spec.Env == nil {
		spec.Env = os.Environ()
	}
	spec.Env = MergeEnv(spec.Env, req.Env)
	res := StreamResult{TTY: req.Stdin != nil && req.Stdout != nil && isTerminal(req.Stdin) && isTerminal(req.Stdout)}
	var term *terminalMirror
	if res.TTY {
		t, err := newTerminalMirror(req.Stdin, req.Stdout)
		if err != nil {
			return StreamResult{}, err
		}
		term = t
		defer term.restore()
		// Known from now on to PauseTerminals: a question may come as
		// soon as the command runs.
		m.termMu.Lock()
		m.terms[term] = true
		m.termMu.Unlock()
		defer func() {
			m.termMu.Lock()
			delete(m.terms, term)
			m.termMu.Unlock()
		}()
		spec.TTY = true
		spec.Rows, spec.Cols = term.size()
		spec.Output = io.MultiWriter(req.Stdout, tail)
	} else {
		stdin := req.Stdin
		if stdin == nil {
			null, err := os.Open(os.DevNull)
			if err != nil {
				return StreamResult{}, err
			}
			defer null.Close()
			stdin = null
		}
		r, w, err := os.Pipe()
		if err != nil {
			return StreamResult{}, fmt.Errorf("stderr pipe: %w", err)
		}
		spec.Stdio = &ptyrun.Stdio{Stdin: stdin, Stdout: req.Stdout, Stderr: w}
		copies := []*copier{startCopier(r, io.MultiWriter(req.Stderr, tail))}
		// Each copier ends when every holder of its pipe's write end is
		// gone: ours is closed right after the start (or its failure),
		// the command's when it ends; finish waits for the copiers on
		// the way out.
		defer waitAll(copies)
		writeEnds := []*os.File{w}
		if req.Stdout != nil && isTerminal(req.Stdout) {
			// The caller's terminal is never handed over as it is: with
			// it, a command (in a session of its own, out of reach of
			// job control) changed it for good — its window size, its
			// exclusive mode (nothing could open it again), its output
			// stopped (TCOOFF: the shell hung) — red team 38. Its output
			// goes through a pipe, copied, as stderr's does.
			r, w, err := os.Pipe()
			if err != nil {
				closeAll(writeEnds)
				return StreamResult{}, fmt.Errorf("stdout pipe: %w", err)
			}
			spec.Stdio.Stdout = w
			writeEnds = append(writeEnds, w)
			copies = append(copies, startCopier(r, req.Stdout))
		}
		p, err := ptyrun.Start(spec)
		closeAll(writeEnds)
		if err != nil {
			return StreamResult{}, err
		}
		return m.finish(ctx, p, req, res, tail, nil, copies)
	}
	p, err := ptyrun.Start(spec)
	if err != nil {
		return StreamResult{}, err
	}
	return m.finish(ctx, p, req, res, tail, term, nil)
}

func waitAll(copies []*copier) {
	for _, c := range copies {
		c.wait()
	}
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// finish waits for p, relaying signals (and in a terminal, keys and
// window sizes), and returns the result once its output is all written.
func (m *Manager) finish(ctx context.Context, p *ptyrun.Process, req StreamRequest, res StreamResult, tail *tailBuffer, term *terminalMirror, copies []*copier) (StreamResult, error) {
	started := time.Now()
	if req.Spawned != nil {
		req.Spawned()
	}
	var winch chan os.Signal
	if term != nil {
		winch = make(chan os.Signal, 1)
		notifyResize(winch)
		defer stopResize(winch)
		term.startInput(p) // waits for resume if a question is open
		defer term.stopInput()
	}
	var last os.Signal
	var lastAt time.Time
	for done := false; !done; {
		select {
		case <-p.Done():
			done = true
		case <-ctx.Done():
			p.Kill(m.cfg.KillGrace)
		case <-winch:
			rows, cols := term.size()
			p.Resize(rows, cols)
		case sig := <-req.Signals:
			if sig == last && time.Since(lastAt) < SignalEchoWindow {
				continue // the same Ctrl-C, relayed
			}
			last, lastAt = sig, time.Now()
			if res.Interrupted {
				fmt.Fprintf(os.Stderr, "unified-exec: %v again: ending the command\r\n", sig)
				p.Kill(m.cfg.KillGrace)
				continue
			}
			res.Interrupted = true
			if s, ok := sig.(syscall.Signal); ok {
				p.Signal(s) // ErrExited: it is ending anyway
				// A command that stopped itself (kill -STOP $$) would keep
				// the signal pending for ever: continued, as a shell's
				// kill does.
				if sigCont != 0 {
					p.Signal(sigCont)
				}
			}
		}
	}
	res.Ran = time.Since(started)
	if m.cfg.OneCommand {
		// What left the command's tree (a double-forked daemon) ends
		// here, not at the program's exit: after this, and the git check
		// that follows, nothing of the command can act.
		res.NothingLeft = ptyrun.EndStrays()
	}
	waitAll(copies) // every byte of stdout and stderr is written before we return
	res.Code = p.ExitStatus().Code
	res.Tail = tail.String()
	return res, nil
}

// copier copies r to w until EOF, on a goroutine it owns; r is closed at
// the end.
type copier struct{ done chan struct{} }

func startCopier(r *os.File, w io.Writer) *copier {
	c := &copier{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		defer r.Close()
		io.Copy(w, r)
	}()
	return c
}

func (c *copier) wait() { <-c.done }

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

// PauseTerminals hands the caller's terminal back while a question is
// asked on it: every streamed command's terminal mirror stops copying
// keys and puts the terminal's mode back; resume takes it again (for the
// commands still running). One pause at a time; the question itself is
// asked without any lock held.
func (m *Manager) PauseTerminals() (resume func()) {
	m.termMu.Lock()
	if m.termsPaused || len(m.terms) == 0 {
		m.termMu.Unlock()
		return func() {}
	}
	m.termsPaused = true
	var paused []*terminalMirror
	for t := range m.terms {
		paused = append(paused, t)
	}
	m.termMu.Unlock()
	for _, t := range paused {
		t.pause()
	}
	return func() {
		m.termMu.Lock()
		m.termsPaused = false
		var running []*terminalMirror
		for _, t := range paused {
			if m.terms[t] {
				running = append(running, t)
			}
		}
		m.termMu.Unlock()
		for _, t := range running {
			t.resume()
		}
	}
}
