package orchestrator

import (
	"context"
	"slices"
	"time"

	"github.com/unified-exec/unified-exec/policy"
	"github.com/unified-exec/unified-exec/sandbox"
	"github.com/unified-exec/unified-exec/unifiedexec"
)

// Sessions that outlive the call that started them go through the
// orchestrator too — write_stdin, kill_session, list_sessions, read_log —
// so that the audit log has an exit line for every command: when a call
// sees it end, when it is killed, or when it ends while nobody watches.

// running is a session's audit line while it runs, and when it started.
type running struct {
	ev      event
	started time.Time
}

// track remembers a session that went on running after its first call.
func (o *Orchestrator) track(id int, ev event) {
	o.sessMu.Lock()
	defer o.sessMu.Unlock()
	if o.sessions == nil {
		o.sessions = map[int]running{}
	}
	o.sessions[id] = running{ev: ev, started: time.Now()}
}

// ended writes the exit line of session id, once, if it was tracked, and
// returns its request's event (ok false when it was not tracked).
func (o *Orchestrator) ended(id, code int, how string) (event, bool) {
	o.sessMu.Lock()
	r, ok := o.sessions[id]
	delete(o.sessions, id)
	o.sessMu.Unlock()
	if !ok {
		return event{}, false
	}
	ev := r.ev
	ev.Event, ev.Session, ev.ExitCode, ev.Reason = "exit", id, &code, how
	ev.Decision, ev.By, ev.Rule, ev.Answer, ev.Denial, ev.Retry = "", "", 0, "", "", false
	ev.DurationMS = time.Since(r.started).Milliseconds()
	o.audit.write(ev)
	return r.ev, true
}

// backgroundExit is the manager's OnBackgroundExit: it writes the exit
// line, then tells the host.
//
// What the session wrote that makes git run a program is checked then
// too, and told with its last lines: a session left running may make a
// repository after the last call's check and end before the next call
// (red team 18: no call came, and nothing ever named it).
func (o *Orchestrator) backgroundExit(id, code int, last []string) {
	ev, ok := o.ended(id, code, "exited while no call watched")
	if ok {
		ev.Session, ev.Decision, ev.By, ev.Rule, ev.Answer, ev.Denial, ev.Retry = id, "", "", 0, "", "", false
		last = append(slices.Clip(last), o.gitCheck(ev)...)
	}
	if o.onExit != nil {
		o.onExit(id, code, last)
	}
}

// Write is write_stdin: input to a session, and its output since.
func (o *Orchestrator) Write(ctx context.Context, req unifiedexec.WriteRequest) (*unifiedexec.Response, error) {
	r, err := o.m.Write(ctx, req)
	if err != nil {
		return r, err
	}
	o.sessMu.Lock()
	ev := o.sessions[req.SessionID].ev
	o.sessMu.Unlock()
	if r.ExitCode != nil {
		o.ended(req.SessionID, *r.ExitCode, "")
	}
	// A session that went on running may have written there since.
	ev.Session, ev.Decision, ev.By, ev.Rule, ev.Answer, ev.Denial, ev.Retry = req.SessionID, "", "", 0, "", "", false
	r.Notes = append(r.Notes, o.gitCheck(ev)...)
	return r, nil
}

// Kill is kill_session: it ends a session's whole tree.
func (o *Orchestrator) Kill(ctx context.Context, id int) (*unifiedexec.Response, error) {
	r, err := o.m.Kill(ctx, id)
	if err == nil && r.ExitCode != nil {
		o.ended(id, *r.ExitCode, "killed")
	}
	return r, err
}

// List is list_sessions.
func (o *Orchestrator) List() []unifiedexec.SessionInfo { return o.m.List() }

// Log is read_log: lines of a session's transcript.
func (o *Orchestrator) Log(id, offset, limit int) (lines []string, first, total int, err error) {
	return o.m.Log(id, offset, limit)
}

// The engine's request and response types, as the orchestrator takes and
// gives them: a host uses these and never the engine itself.
type (
	ExecRequest  = unifiedexec.ExecRequest
	WriteRequest = unifiedexec.WriteRequest
	Response     = unifiedexec.Response
	SessionInfo  = unifiedexec.SessionInfo
)

// SnapshotInfo is a login shell's snapshot as the engine took it, for a
// host's log (Config.OnSnapshot).
type SnapshotInfo = unifiedexec.SnapshotInfo

// The engine's clamps on a call's window, for hosts' messages.
const (
	MinYield = unifiedexec.MinYield
	MaxYield = unifiedexec.MaxYield
)

// A Forker prepares the threads sessions fork from, ahead of need (see
// [unifiedexec.Forker]); Config.Forker hands one to the orchestrator.
type Forker = unifiedexec.Forker

// NewForker starts preparing a forking thread now (oneCommand: for a
// wrapper's one command), for [Config].Forker. The threads are warmed for
// a thread sandbox from the first (most policies sandbox), with the device
// layer of the network off (the default); an orchestrator whose commands
// are not sandboxed on the thread stops the warming.
func NewForker(oneCommand bool) *Forker {
	sandbox.SeedDevices(policy.NetworkOff)
	return unifiedexec.NewWarmForker(oneCommand, sandbox.WarmThread)
}

// ErrNotFound: the program to run is not found or not executable (a
// wrapper exits 127 for it, as a shell does).
var ErrNotFound = unifiedexec.ErrNotFound
