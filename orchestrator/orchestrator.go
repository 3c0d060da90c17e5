package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/unified-exec/unified-exec/approval"
	"github.com/unified-exec/unified-exec/egress"
	"github.com/unified-exec/unified-exec/internal/tracepoint"
	"github.com/unified-exec/unified-exec/policy"
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
	// OneCommand is passed to the manager it creates: the orchestrator
	// serves one Run (the wrapper), see [unifiedexec.Config].OneCommand.
	OneCommand bool
	// Forker is passed to the manager it creates, which closes it (see
	// [unifiedexec.Config].Forker); without a manager of its own, New
	// closes it.
	Forker *unifiedexec.Forker
	// NetworkResolver resolves names for the egress proxy in allowlist
	// mode; nil is the system's (tests map names to local servers).
	NetworkResolver egress.Resolver
	// OnSnapshot is passed to the manager it creates (see
	// unifiedexec.Config): each login shell's snapshot, with what its
	// profile printed, for a log.
	OnSnapshot func(unifiedexec.SnapshotInfo)
}

// Orchestrator takes one request through approval, sandbox choice, spawn,
// denial check and retry. Safe for concurrent use.
type Orchestrator struct {
	pol    *policy.Policy
	ws     string
	home   string // the user's home directory, for rules on ~
	m      *unifiedexec.Manager
	prompt approval.Prompter
	status sandbox.Status
	cache  approval.Cache
	audit  *auditLog
	net    *network // allowlist mode's egress; see egress.go
	// limitNoted: the model was told once that max_processes is not
	// enforced here (the start-up line and `sandbox status` say it too);
	// repeating it on every response would only be noise.
	limitNoted atomic.Bool
	// toldPlanNotes are the plan warnings told already (planWarnings).
	toldPlanNotes sync.Map
	onExit        func(id, code int, lastLines []string)

	// sessMu guards sessions: the sessions still running after their
	// first call, for their exit line.
	sessMu   sync.Mutex
	sessions map[int]running
	// readOnly are the policy file and the audit log: read-only for
	// commands even inside a writable root.
	readOnly []string
	// kept is what a plan kept read-only, kept so by every later one.
	kept keptPaths
	// git is what made git run a program when last looked at.
	git gitWatch
}

// New returns an Orchestrator for cfg. It fails when the audit log is
// required and cannot be opened, or the workspace does not exist.
func New(cfg Config) (_ *Orchestrator, err error) {
	defer func() {
		if err != nil || cfg.Manager != nil {
			cfg.Forker.Close()
		}
	}()
	o := &Orchestrator{pol: cfg.Policy, prompt: cfg.Prompter, onExit: cfg.OnBackgroundExit}
	if o.pol == nil {
		o.pol = policy.Default()
	}
	// The plan covers what commands' own environment names too (a HOME or
	// a secret store that [env] set moves): a copy, the caller's policy
	// is left as it is.
	pol := *o.pol
	pol.Sandbox.CommandEnv = pol.Env.Build(os.Environ())
	o.pol = &pol
	ws := cfg.Workspace
	if ws == "" {
		ws, _ = os.Getwd()
	}
	ws, err = filepath.Abs(ws)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(ws); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("workspace %q is not a directory", ws)
	}
	// Resolved once: a link on the way that a command later repoints
	// (one under /tmp) cannot move the workspace; each plan checks that
	// the path still leads there without such a link.
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		ws = real
	}
	o.ws = ws
	o.home, _ = os.UserHomeDir()
	if cfg.Status != nil {
		o.status = *cfg.Status
	} else {
		o.status = sandbox.HostStatus()
	}
	if !o.status.ProcessLimitKnown {
		ok, err := unifiedexec.ProcessLimitAvailable()
		o.status.ProcessLimitKnown, o.status.ProcessLimit = true, ok
		if err != nil {
			o.status.ProcessLimitErr = err.Error()
		}
	}
	tracepoint.Mark("orchestrator: host status known")
	o.audit, err = openAudit(o.pol.Audit)
	if err != nil {
		return nil, err
	}
	// Resolved now: relative paths are the program's working directory's.
	for _, f := range []string{o.pol.Source, o.pol.Audit.Path} {
		if f == "" || f == policy.DefaultSource {
			continue
		}
		if abs, err := filepath.Abs(f); err == nil {
			o.readOnly = append(o.readOnly, abs)
		}
	}
	o.startGitBaseline()
	o.startNetwork(cfg.NetworkResolver)
	tracepoint.Mark("orchestrator: git baseline under way")
	o.m = cfg.Manager
	if o.m != nil {
		// Its snapshots are kept read-only for commands all the same.
		if dir := o.m.SnapshotDir(); os.MkdirAll(dir, 0o700) == nil {
			o.readOnly = append(o.readOnly, dir)
		}
	} else {
		// The login shells' snapshots: commands read them, and must not
		// write them (a snapshot runs in every later command, the
		// unsandboxed retries too).
		snapDir := o.snapshotDir(o.pol.Sandbox)
		o.readOnly = append(o.readOnly, snapDir)
		o.m = unifiedexec.New(unifiedexec.Config{
			SnapshotDir:      snapDir,
			OnSnapshot:       cfg.OnSnapshot,
			Workspace:        ws,
			Env:              slices.Clone(pol.Sandbox.CommandEnv), // the same build of the environment
			MaxSessions:      o.pol.Limits.MaxSessions,
			SessionTimeout:   o.pol.Limits.IdleTimeout(),
			MaxOutputTokens:  o.pol.Limits.MaxOutputTokens,
			BufferBytes:      o.pol.Limits.OutputBufferBytes,
			MaxProcesses:     maxProcesses(o.pol.Limits.MaxProcesses, o.status),
			OnBackgroundExit: o.backgroundExit,
			HelperPerSession: cfg.HelperPerSession,
			OneCommand:       cfg.OneCommand,
			Forker:           cfg.Forker,
		})
		if o.status.ThreadSandbox && o.pol.Sandbox.Mode != policy.ModeDangerFullAccess {
			// Commands are sandboxed on their forking threads: the part
			// of that work common to every command is done ahead, on
			// the threads the manager prepares.
			sandbox.SeedDevices(o.pol.NetworkMode())
			o.m.WarmThreads(sandbox.WarmThread)
			// And one of them sandboxed whole for the last command's
			// plan: a call with that plan (an agent's usual next one)
			// forks at once once it is found to fit.
			o.m.BuildThreads(sandbox.BuildThread)
			sandbox.PrepareSeccomp(o.pol.NetworkMode())
		} else {
			o.m.WarmThreads(nil) // a Forker given warmed (NewForker)
			o.m.BuildThreads(nil)
		}
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

// Status is what this host enforces, as the orchestrator uses it.
func (o *Orchestrator) Status() sandbox.Status { return o.status }

// Strategy says how sessions start here, for status lines.
func (o *Orchestrator) Strategy() string {
	switch o.m.Strategy() {
	case unifiedexec.StrategyThread:
		kill := "a pids cgroup each for the whole-tree kill"
		if !o.status.ProcessLimit {
			kill = "the whole-tree kill by process group and an environment marker (no pids cgroup here); everything ends with the program's namespace"
		}
		return "sessions fork from a thread sandboxed in place (no helper exec), in the program's PID namespace, " + kill + "; UNIFIED_EXEC_SPAWN=helper gives each a PID namespace of its own instead"
	case unifiedexec.StrategyHelper:
		return "each session through a re-executed helper, PID 1 of a PID and mount namespace of its own"
	}
	return "each sandboxed command through a re-executed helper that applies Landlock and seccomp (no namespaces)"
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
	o.gitBaseline()
	o.m.Close()
	// A last look, every session ended: what one made since the last
	// check goes to the audit log. Not needed when nothing could act
	// since the last (the wrapper's, made once its namespace was empty).
	o.git.mu.Lock()
	final := o.git.final
	o.git.mu.Unlock()
	if !final {
		o.gitCheck(event{})
	}
	o.net.close()
	o.audit.close()
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

// Check starts `true` the way a command of the policy's sandbox mode
// starts — same plan, same helper or thread, same namespaces — and reports
// whether it ran, so that a status never claims what a spawn would not
// give. It asks nothing and writes no audit line.
func (o *Orchestrator) Check(ctx context.Context) error {
	sb, _, _, _, err := o.sandboxFor(o.pol.Sandbox, o.pol.Sandbox.Mode)
	if err != nil {
		return err
	}
	login := false
	o.commandStarts()
	r, err := o.m.Exec(ctx, unifiedexec.ExecRequest{Cmd: "exit 0", Shell: "/bin/sh", Login: &login, Sandbox: sb, Env: o.egressEnv(sb), Label: "check", Yield: 10 * time.Second, Forget: true})
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
