package unifiedexec

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/unified-exec/unified-exec/ptyrun"
)

// Clamps and defaults of the unified-exec tools.
const (
	MinYield          = 250 * time.Millisecond
	MaxYield          = 30 * time.Second
	DefaultExecYield  = 10 * time.Second
	DefaultWriteYield = 250 * time.Millisecond
	DefaultMaxTokens  = 10_000
	DefaultBuffer     = 1 << 20
	DefaultMaxLive    = 64
	DefaultExitedTTL  = 30 * time.Minute
	// keepRecent sessions, the most recently used, are never pruned.
	keepRecent = 8
	// warnMargin: the model is warned once this close to the cap.
	warnMargin    = 4
	firstID       = 1000
	defaultGrace  = 2 * time.Second
	transcriptMax = 1 << 20
)

// Config sets up a [Manager]. The zero value works: the current directory
// as workspace, /bin/bash, the process environment, the default clamps.
type Config struct {
	// Workspace is where relative workdirs resolve; empty = the current
	// directory.
	Workspace string
	// Shell is the default shell; empty = /bin/bash.
	Shell string
	// Env is the base environment (already filtered by policy); nil = the
	// process environment. The variables of [ForcedEnv] are set on top.
	Env []string
	// MaxSessions caps the sessions kept (running or exited); 0 = 64.
	// Past it, the least recently used exited session is forgotten, else
	// the least recently used running one is closed.
	MaxSessions int
	// SessionTimeout, if set, ends a running session no call has used
	// for that long; its exit is reported like any other.
	SessionTimeout time.Duration
	// ExitedTTL is how long an exited session, unused, stays readable
	// (read_log, list_sessions); 0 = 30 minutes.
	ExitedTTL time.Duration
	// MaxOutputTokens is the budget of a response, the default and the
	// most a call may ask for (larger asks are lowered, and the response
	// says so); 0 = 10 000.
	MaxOutputTokens int
	// BufferBytes is each session's head/tail buffer; 0 = 1 MiB.
	BufferBytes int
	// KillGrace is the wait between SIGTERM and SIGKILL; 0 = 2 s.
	KillGrace time.Duration
	// OnBackgroundExit, if set, is told when a session exits while no call
	// is watching it: its id, exit code and last lines of output.
	OnBackgroundExit func(id, code int, lastLines []string)
	// MaxProcesses caps the processes and threads of each session (a fork
	// bomb stops there), with a cgroup per session; 0 = no limit. Where
	// cgroups cannot be used, Exec fails with an error that says so.
	MaxProcesses int
	// HelperPerSession starts every session through the re-executed
	// helper, PID 1 of a namespace of its own, even where the program runs
	// in its own namespace (ptyrun.EnterNamespace) and sessions could be
	// forked directly, sandboxed on the forking thread.
	HelperPerSession bool
	// OneCommand says the manager runs one command (a wrapper): a
	// forking thread is prepared for it from the start, none after.
	// Otherwise one is always kept ready for the next session (see
	// [ptyrun.Forker]).
	OneCommand bool
	// Forker, when set, is the one the manager uses (and closes) rather
	// than making its own: made at the very start of a program, its first
	// thread is ready sooner.
	Forker *Forker
	// NoIsolation disables the PID namespace per session even where it is
	// available (the kill then relies on process groups and markers).
	NoIsolation bool
	// SnapshotDir is where the snapshots of login shells go (a folder of
	// the manager's own is made in it, removed by Close): a place
	// commands can read and not write. Empty = [DefaultSnapshotDir].
	SnapshotDir string
	// OnSnapshot, if set, is told of each snapshot of a login shell taken
	// (or failed), with what its profile printed.
	OnSnapshot func(SnapshotInfo)
	// SnapshotTimeout bounds the login shell's run for a snapshot; 0 =
	// 10 s. Past it, login commands run with -lc.
	SnapshotTimeout time.Duration
}

// Manager runs commands and keeps their sessions between calls. Its zero
// value is not usable; create one with [New]. Methods are safe for
// concurrent use: calls on different sessions run in parallel, calls on one
// session are serialized.
type Manager struct {
	cfg Config
	// strategy is how every session starts here, decided once in New.
	strategy Strategy
	// forker prepares the threads sessions fork from (StrategyThread).
	forker *ptyrun.Forker
	// removals counts the processes whose cgroups are not removed yet
	// (see ptyrun.Spec.Pending); Close waits for them.
	removals sync.WaitGroup

	// termMu guards terms and termsPaused: the terminal mirrors of
	// streamed commands, for PauseTerminals.
	termMu      sync.Mutex
	terms       map[*terminalMirror]bool
	termsPaused bool
	bg          sync.WaitGroup // kills of pruned sessions, exit watchers, snapshots; started under mu while !closed
	snaps       snapshots      // the login shells' snapshots (see snapshot.go)

	// mu guards the fields below.
	mu       sync.Mutex
	sessions map[int]*session
	nextID   int
	closed   bool
	stop     chan struct{} // closed by Close to end the janitor; nil until the first session
}

// New returns a Manager for cfg.
func New(cfg Config) *Manager {
	if cfg.Shell == "" {
		cfg.Shell = "/bin/bash"
	}
	if cfg.Workspace == "" {
		cfg.Workspace, _ = os.Getwd()
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxLive
	}
	if cfg.MaxOutputTokens <= 0 {
		cfg.MaxOutputTokens = DefaultMaxTokens
	}
	if cfg.BufferBytes <= 0 {
		cfg.BufferBytes = DefaultBuffer
	}
	if cfg.KillGrace <= 0 {
		cfg.KillGrace = defaultGrace
	}
	if cfg.ExitedTTL <= 0 {
		cfg.ExitedTTL = DefaultExitedTTL
	}
	m := &Manager{cfg: cfg, sessions: map[int]*session{}, nextID: firstID, strategy: chooseStrategy(cfg), terms: map[*terminalMirror]bool{}}
	switch {
	case m.strategy != StrategyThread:
		cfg.Forker.Close()
	case cfg.Forker != nil:
		m.forker = cfg.Forker
	default:
		m.forker = ptyrun.NewForker(!cfg.OneCommand)
	}
	return m
}

// Strategy is how sessions start on this host, decided once from one
// probe ([ptyrun.IsolationAvailable], [ptyrun.ProcessLimitAvailable] and
// whether the program is in a namespace of its own).
type Strategy int

const (
	// StrategyPlain: no namespaces (user namespaces refused, or
	// NoIsolation): a sandboxed command starts through the re-executed
	// helper, which applies Landlock and seccomp alone; an unsandboxed
	// one is forked directly.
	StrategyPlain Strategy = iota
	// StrategyHelper: every command starts through the re-executed
	// helper, PID 1 of a PID and mount namespace of its own.
	StrategyHelper
	// StrategyThread: the program runs in a PID namespace of its own
	// (ptyrun.EnterNamespace), so nothing a session starts can outlive
	// the program: commands are forked directly, a sandboxed one from a
	// thread the sandbox is applied to. A pids cgroup per session, where
	// there is one, makes its kill exact.
	StrategyThread
)

func (s Strategy) String() string {
	switch s {
	case StrategyThread:
		return "thread"
	case StrategyHelper:
		return "helper"
	}
	return "plain"
}

func chooseStrategy(cfg Config) Strategy {
	if cfg.NoIsolation {
		return StrategyPlain
	}
	if ok, _ := ptyrun.IsolationAvailable(); !ok {
		return StrategyPlain
	}
	if ptyrun.InOwnNamespace() && !cfg.HelperPerSession {
		// Nothing outlives the program's namespace. With a pids cgroup
		// a session's kill is exact; without one (an ordinary user with
		// no delegated cgroup v2 subtree) it finds the session's
		// processes by process group and by the marker in their
		// environment, as the plain strategy does.
		return StrategyThread
	}
	return StrategyHelper
}

// ErrNotFound: the program to run is not found or not executable (exit
// status 127 for a wrapper, as a shell gives).
var ErrNotFound = ptyrun.ErrNotFound

// A Forker prepares the threads sessions fork from ahead of need (see
// [ptyrun.Forker]).
type Forker = ptyrun.Forker

// NewForker starts preparing a forking thread now, for a manager to be
// made with it (Config.Forker); oneCommand as in Config.OneCommand.
func NewForker(oneCommand bool) *Forker { return ptyrun.NewForker(!oneCommand) }

// NewWarmForker is NewForker with its threads warmed by w from the first
// (see [ptyrun.NewWarmForker]).
func NewWarmForker(oneCommand bool, w Warmer) *Forker { return ptyrun.NewWarmForker(!oneCommand, w) }

// A Warmer prepares a forking thread for a sandboxed command ahead of
// the call (see [ptyrun.Warmer]).
type Warmer = ptyrun.Warmer

// WarmThreads has the threads sessions fork from warmed by w once
// prepared (the thread strategy only; see [ptyrun.Forker.SetWarm]).
func (m *Manager) WarmThreads(w Warmer) { m.forker.SetWarm(w) }

// A Builder sandboxes a warmed forking thread ahead of the call, for the
// plan the last sandboxed command had (see [ptyrun.Builder]).
type Builder = ptyrun.Builder

// BuildThreads has one of the threads prepared from now on sandboxed
// ahead by b for the last thread sandbox's plan (the thread strategy
// only; see [ptyrun.Forker.SetBuilder]); nil: no more.
func (m *Manager) BuildThreads(b Builder) { m.forker.SetBuilder(b) }

// CallComing tells the manager that a call is being prepared (its
// sandbox planned): the thread prepared for its session watches for it
// instead of sleeping (see [ptyrun.Forker.Wake]).
func (m *Manager) CallComing() { m.forker.Wake() }

// PreparedCgroup is the cgroup of the forking thread prepared for the
// next session, "" for none (see [ptyrun.Forker]).
func (m *Manager) PreparedCgroup() string { return m.forker.Prepared() }

// ProcessLimitAvailable reports whether sessions can get a process limit
// (a pids cgroup) here, and if not, why.
func ProcessLimitAvailable() (bool, error) { return ptyrun.ProcessLimitAvailable() }

// Strategy is how sessions start here.
func (m *Manager) Strategy() Strategy { return m.strategy }

// Sandbox is what a command runs under: its plan, opaque here, and how to
// apply it to the thread that forks the command.
type Sandbox struct {
	// Payload is the encoded plan, applied in the helper (see
	// [ptyrun.Helper]).
	Payload []byte
	// Thread applies Payload to the calling thread (the session's
	// terminal, "" for pipes); nil where the thread sandbox cannot
	// enforce the plan. Used only by [StrategyThread].
	Thread func(payload []byte, tty string) error
	// Enter, when set, is called on the thread that forks the command
	// (or its helper) before anything else, and the command inherits
	// what it changed: the egress network namespace of allowlist mode.
	Enter func() error
	// Files are given to the re-executed helper only (see
	// ptyrun.Helper.Files), never to the command.
	Files []*os.File
	// Key names what the sandbox allows (its mode and network, say):
	// login commands under sandboxes of one key share one snapshot of the
	// login shell; "" is a key of its own.
	Key string
	// Plain is this sandbox without what belongs to one run (Files, a
	// Thread that reports to it), for the login shell's snapshot; nil
	// means this one.
	Plain *Sandbox
}

// helperFor is how a command under sb (nil: unsandboxed) starts under
// the manager's strategy.
func (m *Manager) helperFor(sb *Sandbox) *ptyrun.Helper {
	h := m.strategyHelper(sb)
	if sb != nil && sb.Enter != nil {
		if h == nil {
			h = &ptyrun.Helper{}
		}
		h.Enter = sb.Enter
	}
	return h
}

func (m *Manager) strategyHelper(sb *Sandbox) *ptyrun.Helper {
	switch m.strategy {
	case StrategyThread:
		if sb == nil {
			return nil
		}
		if sb.Thread != nil {
			return &ptyrun.Helper{Payload: sb.Payload, Thread: sb.Thread}
		}
		return &ptyrun.Helper{Payload: sb.Payload, Files: sb.Files, Isolate: true}
	case StrategyHelper:
		h := &ptyrun.Helper{Isolate: true}
		if sb != nil {
			h.Payload, h.Files = sb.Payload, sb.Files
		}
		return h
	}
	if sb == nil {
		return nil
	}
	return &ptyrun.Helper{Payload: sb.Payload, Files: sb.Files}
}

// MaxProcesses is the process limit each session gets (0: none).
func (m *Manager) MaxProcesses() int { return m.cfg.MaxProcesses }

// Isolated reports whether sessions run in their own PID namespace (or,
// with StrategyThread, in the program's, which dies with it).
func (m *Manager) Isolated() bool { return m.strategy != StrategyPlain }

// ExecRequest is one exec_command call.
type ExecRequest struct {
	Cmd        string
	Workdir    string // relative to the workspace, or absolute
	Shell      string
	Login      *bool // nil = true
	TTY        bool
	Rows, Cols uint16
	Yield      time.Duration // 0 = default; clamped; negative is an error
	// MaxOutputTokens is this response's budget: nil = the default,
	// lowered to Config.MaxOutputTokens, 0 = only the truncation marker,
	// negative is an error.
	MaxOutputTokens *int

	// Sandbox, set by the orchestrator, is the plan the command runs
	// under; nil runs it unrestricted (still isolated when possible).
	Sandbox *Sandbox
	// Label says how the command runs, e.g. "sandbox: workspace-write";
	// shown by list_sessions.
	Label string
	// Notes are extra lines for the model, shown after the status lines.
	Notes []string
	// Observe, if set, sees clean output as it arrives during this call's
	// window (for progress notifications). It must not block.
	Observe func([]byte)
	// Env, set by the orchestrator, are variables (NAME=value) set on top
	// of the base environment, replacing any of the same name (the egress
	// proxy's); the forced ones still win.
	Env []string
	// Timeout, if set, ends the session's whole tree once the command has
	// run that long (watched by a call or not); the response that
	// reports the exit says so. Negative is an error.
	Timeout time.Duration
	// Forget drops the session of a command that exits within its first
	// window (a host's own probe); otherwise it stays readable (read_log,
	// list_sessions) until pruned.
	Forget bool
	// Started, if set, is told the session's id once the command runs,
	// before the window: a caller whose context ends during the window
	// gets no response, and knows the session from it.
	Started func(id int)
}

// WriteRequest is one write_stdin call.
type WriteRequest struct {
	SessionID int
	Chars     string
	Keys      []string
	Paste     bool
	// Rows and Cols, if set, resize the terminal first (one alone keeps
	// the other); the foreground job gets SIGWINCH. Pipe sessions have
	// none.
	Rows, Cols      uint16
	Yield           time.Duration // 0 = default; clamped; negative is an error
	MaxOutputTokens *int          // as in ExecRequest
	// Observe, if set, sees clean output as it arrives during this call's
	// window. It must not block.
	Observe func([]byte)
}

// Errors.
var (
	ErrUnknownSession = errors.New("unknown session")
	ErrSessionExited  = errors.New("session has exited")
	ErrEmptyCommand   = errors.New("cmd is empty: give the shell command to run")
	ErrClosed         = errors.New("the manager is closed")
)

// Exec starts a command and waits for its first window of output. If ctx
// ends during the window, Exec returns ctx's error (naming the session)
// and consumes nothing: the output and exit of the window are the next
// call's, and the command runs on. A ctx ended before the call starts no
// command.
func (m *Manager) Exec(ctx context.Context, req ExecRequest) (*Response, error) {
	// The thread the next session forks from is prepared once this call
	// is answered (see ptyrun.Forker.Refill).
	defer m.forker.Refill()
	started := time.Now()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Cmd) == "" {
		return nil, ErrEmptyCommand
	}
	if strings.ContainsRune(req.Cmd, 0) {
		return nil, errors.New("cmd contains a NUL byte, which no shell can receive")
	}
	budget, err := m.budgetOf(req.Yield, req.MaxOutputTokens)
	if err != nil {
		return nil, err
	}
	if req.Timeout < 0 {
		return nil, fmt.Errorf("timeout_ms must be 1 or more, got %d", req.Timeout.Milliseconds())
	}
	dir, err := m.resolveWorkdir(req.Workdir)
	if err != nil {
		return nil, err
	}
	shell := req.Shell
	if shell == "" {
		shell = m.cfg.Shell
	}
	if _, err := exec.LookPath(shell); err != nil {
		return nil, fmt.Errorf("shell %q not found or not executable: use an installed shell such as /bin/bash or /bin/sh", shell)
	}
	argv := []string{shell, "-c", req.Cmd}
	env := BuildEnv(MergeEnv(m.baseEnv(), req.Env), req.TTY)
	var snapNotes []string
	if req.Login == nil || *req.Login {
		var err error
		if argv, env, snapNotes, err = m.loginArgv(ctx, shell, req.Cmd, env, req.Sandbox); err != nil {
			return nil, err
		}
	}
	s := &session{
		cmd:     req.Cmd,
		cwd:     dir,
		tty:     req.TTY,
		label:   req.Label,
		started: started,
		buf:     newHeadTail(m.cfg.BufferBytes),
		calls:   make(chan struct{}, 1),
	}
	s.clean.out = s.appendClean
	if req.TTY {
		s.clean.reply = s.reply
		s.clean.width = int(req.Cols) // the cursor stops at its last column
		s.rows, s.cols = int(cmp.Or(req.Rows, 24)), int(cmp.Or(req.Cols, 80))
		s.clean.altScreen, s.clean.screen = s.altScreen, s.toScreen
	}
	helper := m.helperFor(req.Sandbox)
	spec := ptyrun.Spec{
		Argv:     argv,
		Dir:      dir,
		Env:      env,
		TTY:      req.TTY,
		Rows:     req.Rows,
		Cols:     req.Cols,
		Output:   s,
		Helper:   helper,
		MaxProcs: m.cfg.MaxProcesses,
		Forker:   m.forker,
		Pending:  &m.removals,
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	m.mu.Unlock()
	proc, err := ptyrun.Start(spec)
	if err != nil {
		return nil, err
	}
	s.attach(proc)

	s.calls <- struct{}{}
	defer func() { m.touch(s); <-s.calls }()
	notes, err := m.register(s)
	if err != nil {
		// Closed while the process started: Close did not see it.
		proc.Kill(m.cfg.KillGrace)
		return nil, err
	}
	if req.Timeout > 0 {
		m.endAfter(s, req.Timeout)
	}
	if req.Started != nil {
		req.Started(s.id)
	}
	resp, err := m.window(ctx, s, started, yieldOf(req.Yield, DefaultExecYield), budget, req.Observe)
	if err != nil {
		return nil, fmt.Errorf("session %d: %w", s.id, err)
	}
	resp.Notes = append(append(append(notes, req.Notes...), snapNotes...), resp.Notes...)
	if resp.ExitCode != nil && req.Forget {
		m.mu.Lock()
		delete(m.sessions, s.id)
		m.mu.Unlock()
		s.release()
	}
	return resp, nil
}

// Write sends input to a session and waits for a window of output. If ctx
// ends during the window, Write returns ctx's error and consumes nothing
// (the input, once written, stays written).
func (m *Manager) Write(ctx context.Context, req WriteRequest) (*Response, error) {
	started := time.Now()
	budget, err := m.budgetOf(req.Yield, req.MaxOutputTokens)
	if err != nil {
		return nil, err
	}
	var input []byte
	if len(req.Keys) > 0 {
		k, err := EncodeKeys(req.Keys)
		if err != nil {
			return nil, err
		}
		input = append(input, k...)
	}
	if req.Chars != "" {
		if req.Paste {
			input = append(input, pasteStart...)
		}
		input = append(input, req.Chars...)
		if req.Paste {
			input = append(input, pasteEnd...)
		}
	}
	s, err := m.get(req.SessionID)
	if err != nil {
		return nil, err
	}
	select {
	case s.calls <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { m.touch(s); <-s.calls }()
	yield := yieldOf(req.Yield, DefaultWriteYield)
	if req.Rows > 0 || req.Cols > 0 {
		if err := s.resize(req.Rows, req.Cols); err != nil {
			return nil, fmt.Errorf("session %d: resizing: %w", s.id, err)
		}
	}
	var note string
	if len(input) > 0 {
		s.mu.Lock()
		reported, code := s.exitReported, s.exitCode
		s.mu.Unlock()
		if reported {
			return nil, fmt.Errorf("session %d has exited with code %d: %w; start a new command with exec_command", s.id, code, ErrSessionExited)
		}
		if !s.tty {
			return nil, fmt.Errorf("session %d: %w", s.id, ptyrun.ErrNoStdin)
		}
		s.proc.SetWriteDeadline(started.Add(yield))
		n, err := s.proc.Write(input)
		s.proc.SetWriteDeadline(time.Time{})
		switch {
		case errors.Is(err, ptyrun.ErrExited):
			note = "The process exited before it read the input."
		case err != nil && errors.Is(err, os.ErrDeadlineExceeded):
			note = fmt.Sprintf("Only %d of %d bytes of input were written: the program is not reading its terminal.", n, len(input))
		case err != nil:
			return nil, fmt.Errorf("session %d: writing input: %w", s.id, err)
		}
	}
	m.touch(s)
	resp, err := m.window(ctx, s, started, yield, budget, req.Observe)
	if err != nil {
		return nil, err
	}
	if note != "" {
		resp.Notes = append(resp.Notes, note)
	}
	return resp, nil
}

// window waits until the yield deadline or the process's exit (after its
// output drained), then takes the session's pending output. If ctx ends
// first, it returns ctx's error and takes nothing.
func (m *Manager) window(ctx context.Context, s *session, started time.Time, yield time.Duration, b budget, observe func([]byte)) (*Response, error) {
	s.mu.Lock()
	s.observer = observe
	s.watched++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.observer = nil
		s.watched--
		s.mu.Unlock()
	}()
	timer := time.NewTimer(time.Until(started.Add(yield)))
	defer timer.Stop()
	// In a terminal, poll for "waiting for input": the window then ends
	// as soon as the program sits at its prompt.
	var tick <-chan time.Time
	if s.tty {
		t := time.NewTicker(inputPoll)
		defer t.Stop()
		tick = t.C
	}
	s.mu.Lock()
	baseline := s.received
	s.mu.Unlock()
	waiting := false
loop:
	for {
		select {
		case <-s.proc.Done():
			break loop
		case <-timer.C:
			break loop
		case <-ctx.Done():
			break loop
		case <-tick:
			s.flushReplies()
			s.mu.Lock()
			got, last := s.received-baseline, s.lastOutput
			s.mu.Unlock()
			if (got == 0 && time.Since(started) < idlePrompt) || time.Since(last) < settle {
				continue
			}
			if s.proc.WaitingForInput() {
				waiting = true
				break loop
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := s.respond(started, b.tokens)
	if b.note != "" {
		r.Notes = append(r.Notes, b.note)
	}
	if waiting && r.ExitCode == nil {
		r.Notes = append(r.Notes, WaitingNote)
	}
	if n := s.proc.ForksRefused(); n > s.refusedSeen {
		s.refusedSeen = n
		r.Notes = append(r.Notes, fmt.Sprintf("The session hit its process limit (%d processes and threads): %d forks failed. Raise [limits] max_processes if the command really needs more.", m.cfg.MaxProcesses, n))
	}
	return r, nil
}

// WaitingNote follows the session line when a window ended early because
// the program is waiting for terminal input.
const WaitingNote = "Process is waiting for input"

// Early return in a terminal: poll every inputPoll; output must have
// settled for settle; a program that printed nothing is given idlePrompt.
const (
	inputPoll  = 3 * time.Millisecond
	settle     = 8 * time.Millisecond
	idlePrompt = 60 * time.Millisecond
)

// budget is a response's output budget in tokens, and the note that says
// it was lowered to the limit, if it was.
type budget struct {
	tokens int
	note   string
}

// budgetOf checks a call's yield and token budget: nil tokens take the
// limit, a larger ask is lowered to it.
func (m *Manager) budgetOf(yield time.Duration, tokens *int) (budget, error) {
	if yield < 0 {
		return budget{}, fmt.Errorf("yield_time_ms must be 0 or more (it is clamped to %d–%d), got %d", MinYield.Milliseconds(), MaxYield.Milliseconds(), yield.Milliseconds())
	}
	limit := m.cfg.MaxOutputTokens
	switch {
	case tokens == nil:
		return budget{tokens: limit}, nil
	case *tokens < 0:
		return budget{}, fmt.Errorf("max_output_tokens must be 0 or more (0 returns only the truncation marker), got %d", *tokens)
	case *tokens > limit:
		return budget{tokens: limit, note: fmt.Sprintf("max_output_tokens %d is above this server's limit: lowered to %d ([limits] max_output_tokens).", *tokens, limit)}, nil
	}
	return budget{tokens: *tokens}, nil
}

func yieldOf(d, def time.Duration) time.Duration {
	if d == 0 {
		d = def
	}
	return min(max(d, MinYield), MaxYield)
}

func (m *Manager) baseEnv() []string {
	if m.cfg.Env != nil {
		return m.cfg.Env
	}
	return os.Environ()
}

func (m *Manager) resolveWorkdir(w string) (string, error) {
	dir := m.cfg.Workspace
	if w != "" {
		if filepath.IsAbs(w) {
			dir = w
		} else {
			dir = filepath.Join(m.cfg.Workspace, w)
		}
	}
	st, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("workdir %q does not exist: give a directory inside the workspace %s", w, m.cfg.Workspace)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("workdir %q is not a directory", w)
	}
	return dir, nil
}

// register gives s an id and lists it; when the cap is reached it prunes
// sessions (the least recently used exited one, else the least recently
// used running one, never one of the most recently used) and starts their
// kills, and it starts the goroutine that watches s. It fails with
// [ErrClosed] once Close has begun, re-checked under the lock: Close
// kills only the sessions it listed, and waits only for the goroutines
// started before it.
func (m *Manager) register(s *session) (notes []string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	s.id = m.nextID
	m.nextID++
	s.lastUsed = time.Now()
	for len(m.sessions) >= m.cfg.MaxSessions {
		v := m.victimLocked()
		if v == nil {
			break
		}
		delete(m.sessions, v.id)
		if v.exited() {
			m.bg.Go(v.release) // only its log goes
			continue
		}
		// Owner: the manager; Close waits for it.
		m.bg.Go(func() {
			v.proc.Kill(m.cfg.KillGrace)
			v.release()
		})
		notes = append(notes, fmt.Sprintf("Session %d was closed to stay within %d sessions.", v.id, m.cfg.MaxSessions))
	}
	m.sessions[s.id] = s
	running := 0
	for _, o := range m.sessions {
		if !o.exited() {
			running++
		}
	}
	if running >= m.cfg.MaxSessions-min(warnMargin, m.cfg.MaxSessions/4) {
		notes = append(notes, fmt.Sprintf("Warning: %d of %d sessions are open; the least recently used will be closed. End sessions you no longer need with kill_session.", running, m.cfg.MaxSessions))
	}
	if m.stop == nil {
		// Owner: the manager; it ends when Close closes stop.
		m.stop = make(chan struct{})
		m.bg.Go(func() { m.janitor(m.stop) })
	}
	if m.cfg.OnBackgroundExit != nil {
		// Owner: the manager; it ends when the process does (Close kills
		// every process).
		m.bg.Go(func() { m.watchExit(s) })
	}
	return notes, nil
}

// victimLocked picks the session to close when the cap is reached: the
// least recently used exited one (only its log goes), else the least
// recently used running one, never one of the keepRecent most recently
// used (fewer when the cap is smaller: the cap always holds).
func (m *Manager) victimLocked() *session {
	all := make([]*session, 0, len(m.sessions))
	for _, s := range m.sessions {
		all = append(all, s)
	}
	// Most recently used first.
	slices.SortFunc(all, func(a, b *session) int { return b.lastUsed.Compare(a.lastUsed) })
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].exited() {
			return all[i]
		}
	}
	if len(all) <= min(keepRecent, m.cfg.MaxSessions-1) {
		return nil
	}
	return all[len(all)-1]
}

// endAfter ends s's whole tree once it has run for d (see
// ExecRequest.Timeout). The timer's goroutine starts the kill under mu
// while the manager is open (Close waits for it); a session gone or
// exited by then is left alone.
func (m *Manager) endAfter(s *session, d time.Duration) {
	t := time.AfterFunc(d, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.closed || m.sessions[s.id] != s || s.exited() {
			return
		}
		s.endAs(fmt.Sprintf("The command ran past timeout_ms (%d ms): its whole process tree was ended.", d.Milliseconds()))
		// Owner: the manager; Close waits for it.
		m.bg.Go(func() { s.proc.Kill(m.cfg.KillGrace) })
	})
	s.mu.Lock()
	s.timer = t
	s.mu.Unlock()
}

// janitor ends sessions idle for longer than the session timeout and
// forgets exited ones unused for ExitedTTL. Owner: the manager; it ends
// when stop is closed (by Close).
func (m *Manager) janitor(stop <-chan struct{}) {
	for {
		t := time.NewTimer(m.sweep(time.Now()))
		select {
		case <-stop:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// sweep does the janitor's work at now and says when to look again.
func (m *Manager) sweep(now time.Time) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	next := m.cfg.ExitedTTL
	if t := m.cfg.SessionTimeout; t > 0 {
		next = min(next, t)
	}
	for id, s := range m.sessions {
		if len(s.calls) > 0 {
			continue // in a call: not idle, and used again when it ends
		}
		idle := now.Sub(s.lastUsed)
		switch {
		case s.exited():
			if idle >= m.cfg.ExitedTTL {
				delete(m.sessions, id)
				m.bg.Go(s.release) // owner: the manager
				continue
			}
			next = min(next, m.cfg.ExitedTTL-idle)
		case m.cfg.SessionTimeout > 0:
			if idle >= m.cfg.SessionTimeout {
				s.endAs(fmt.Sprintf("The session was ended after %v without a call ([limits] session_timeout).", m.cfg.SessionTimeout))
				// Owner: the manager; Close waits for it.
				m.bg.Go(func() { s.proc.Kill(m.cfg.KillGrace) })
				continue
			}
			next = min(next, m.cfg.SessionTimeout-idle)
		}
	}
	return max(next, 10*time.Millisecond)
}

func (m *Manager) get(id int) (*session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return nil, fmt.Errorf("session %d: %w; it may have exited and been pruned — call list_sessions to see the open sessions", id, ErrUnknownSession)
	}
	return s, nil
}

func (m *Manager) touch(s *session) {
	m.mu.Lock()
	s.lastUsed = time.Now()
	m.mu.Unlock()
}

// Kill ends a session's whole process tree (SIGTERM, then SIGKILL after the
// grace period) and returns its final output and exit status. The session
// stays listed as exited, so read_log still works.
func (m *Manager) Kill(ctx context.Context, id int) (*Response, error) {
	started := time.Now()
	s, err := m.get(id)
	if err != nil {
		return nil, err
	}
	s.proc.Kill(m.cfg.KillGrace)
	s.calls <- struct{}{}
	defer func() { m.touch(s); <-s.calls }()
	m.touch(s)
	return s.respond(started, m.cfg.MaxOutputTokens), nil
}

// SessionInfo describes one session for list_sessions.
type SessionInfo struct {
	ID       int
	Running  bool
	ExitCode int
	Pid      int
	TTY      bool
	Started  time.Time
	Cwd      string
	Command  string
	Label    string
}

// List describes every session, oldest first.
func (m *Manager) List() []SessionInfo {
	m.mu.Lock()
	all := make([]*session, 0, len(m.sessions))
	for _, s := range m.sessions {
		all = append(all, s)
	}
	m.mu.Unlock()
	slices.SortFunc(all, func(a, b *session) int { return a.id - b.id })
	out := make([]SessionInfo, 0, len(all))
	for _, s := range all {
		info := SessionInfo{ID: s.id, Running: !s.exited(), Pid: s.proc.Pid(), TTY: s.tty, Started: s.started, Cwd: s.cwd, Command: s.cmd, Label: s.label}
		if !info.Running {
			info.ExitCode = s.proc.ExitStatus().Code
		}
		out = append(out, info)
	}
	return out
}

// Log returns lines of a session's retained transcript: offset and limit
// count lines; a limit alone (offset < 0) gives the last limit lines. It
// also returns the line number of the first line and the total retained.
func (m *Manager) Log(id, offset, limit int) (lines []string, first, total int, err error) {
	s, err := m.get(id)
	if err != nil {
		return nil, 0, 0, err
	}
	m.touch(s)
	return s.log(offset, limit)
}

// Close kills every session and waits for their trees to end. Calls after
// Close fail with [ErrClosed]; Close again does nothing.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return // closed already (a second Close is harmless)
	}
	m.closed = true
	if m.stop != nil {
		close(m.stop)
	}
	all := make([]*session, 0, len(m.sessions))
	for _, s := range m.sessions {
		all = append(all, s)
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Go(func() {
			s.proc.Kill(m.cfg.KillGrace)
			s.release()
		})
	}
	wg.Wait()
	m.cancelSnapshots()
	m.bg.Wait()
	m.removeSnapshots()
	m.forker.Close()
	m.removals.Wait()
}

// watchExit reports a session's exit when no call reported it: it waits
// for the call in progress, if any, to end (a call that was cancelled
// reports nothing).
func (m *Manager) watchExit(s *session) {
	<-s.proc.Done()
	s.calls <- struct{}{}
	<-s.calls
	s.mu.Lock()
	reported := s.exitReported
	lines, _, _ := s.transcript.Lines(-1, 5)
	s.mu.Unlock()
	m.mu.Lock()
	_, live := m.sessions[s.id]
	closed := m.closed
	m.mu.Unlock()
	if reported || !live || closed {
		return
	}
	m.cfg.OnBackgroundExit(s.id, s.proc.ExitStatus().Code, lines)
}

// newChunkID gives 6 random lowercase hex digits.
func newChunkID() string {
	var b [3]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// HelperFileFD is the descriptor the re-executed helper finds
// Sandbox.Files[i] at.
func HelperFileFD(i int) int { return ptyrun.HelperFileFD(i) }
