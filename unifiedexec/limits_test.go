//go:build linux

package unifiedexec

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSessionTimeout: a running session no call uses for SessionTimeout
// is ended, and the call that reports its exit says why; one that is
// polled back to back is not idle.
func TestSessionTimeout(t *testing.T) {
	m := newManager(t, Config{SessionTimeout: 2 * time.Second, KillGrace: 100 * time.Millisecond})
	idle := exec1(t, m, ExecRequest{Cmd: "echo hi; sleep 600", Yield: 250 * time.Millisecond})
	busy := exec1(t, m, ExecRequest{Cmd: "sleep 600", Yield: 250 * time.Millisecond})
	deadline := time.Now().Add(30 * time.Second)
	for running(m, idle.SessionID) {
		if time.Now().After(deadline) {
			t.Fatal("the idle session was not ended")
		}
		// Back-to-back polls of the busy one: never idle for long.
		if _, err := m.Write(context.Background(), WriteRequest{SessionID: busy.SessionID, Yield: 250 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
	}
	if !running(m, busy.SessionID) {
		t.Fatal("the session in use was ended")
	}
	r, err := m.Write(context.Background(), WriteRequest{SessionID: idle.SessionID})
	if err != nil || r.ExitCode == nil || !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "session_timeout") }) {
		t.Fatalf("the poll after the timeout: %v %+v", err, r)
	}
	// Said once.
	r, err = m.Write(context.Background(), WriteRequest{SessionID: idle.SessionID})
	if err != nil || len(r.Notes) != 0 {
		t.Fatalf("the second poll: %v %+v", err, r)
	}
}

func running(m *Manager, id int) bool {
	for _, s := range m.List() {
		if s.ID == id {
			return s.Running
		}
	}
	return false
}

// TestExitedTTL: an exited session, unused for ExitedTTL, is forgotten.
func TestExitedTTL(t *testing.T) {
	m := newManager(t, Config{ExitedTTL: 300 * time.Millisecond})
	r := exec1(t, m, ExecRequest{Cmd: "sleep 0.3; echo done", Yield: 250 * time.Millisecond})
	w, err := m.Write(context.Background(), WriteRequest{SessionID: r.SessionID, Yield: 10 * time.Second})
	if err != nil || w.ExitCode == nil {
		t.Fatalf("%v %+v", err, w)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, _, _, err := m.Log(r.SessionID, 0, 0)
		if errors.Is(err, ErrUnknownSession) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the exited session is still kept")
		}
		time.Sleep(500 * time.Millisecond) // longer than the TTL: each read is a use
	}
}

// TestSmallSessionCap: a cap below the protected recent sessions holds;
// exited sessions go first, silently.
func TestSmallSessionCap(t *testing.T) {
	m := newManager(t, Config{MaxSessions: 3, KillGrace: 100 * time.Millisecond})
	var ids []int
	for i := range 5 {
		r := exec1(t, m, ExecRequest{Cmd: "sleep 600", Yield: 250 * time.Millisecond})
		ids = append(ids, r.SessionID)
		if i >= 3 && !slices.Contains(r.Notes, "Session "+strconv.Itoa(ids[i-3])+" was closed to stay within 3 sessions.") {
			t.Fatalf("session %d: notes %v", i, r.Notes)
		}
	}
	if n := len(m.List()); n != 3 {
		t.Fatalf("%d sessions with a cap of 3", n)
	}
	// An exited session goes before a running one, even the most
	// recently used, and silently.
	r := exec1(t, m, ExecRequest{Cmd: "sleep 0.3", Yield: 250 * time.Millisecond})
	if w, err := m.Write(context.Background(), WriteRequest{SessionID: r.SessionID, Yield: 10 * time.Second}); err != nil || w.ExitCode == nil {
		t.Fatalf("%v %+v", err, w)
	}
	before := m.List()
	r = exec1(t, m, ExecRequest{Cmd: "sleep 600", Yield: 250 * time.Millisecond})
	if len(r.Notes) > 0 && strings.Contains(strings.Join(r.Notes, "\n"), "was closed") {
		t.Fatalf("a running session was closed while an exited one was kept: %v", r.Notes)
	}
	after := m.List()
	if len(after) != 3 || after[0].ID != before[0].ID || after[1].ID != before[1].ID || !after[2].Running {
		t.Fatalf("before %+v\nafter %+v", before, after)
	}
}

// TestOutputBudget: Config.MaxOutputTokens is the default and the
// ceiling; a larger ask is lowered with a note, 0 gives only the marker,
// and negative budgets and yields are errors that start nothing.
func TestOutputBudget(t *testing.T) {
	m := newManager(t, Config{MaxOutputTokens: 10})
	cmd := "seq 1 100" // 292 bytes, 73 tokens
	r := exec1(t, m, ExecRequest{Cmd: cmd})
	if !strings.Contains(r.Output, "tokens truncated") || strings.Contains(strings.Join(r.Notes, "\n"), "lowered") {
		t.Fatalf("default: %+v", r)
	}
	r = exec1(t, m, ExecRequest{Cmd: cmd, MaxOutputTokens: new(1000)})
	if !strings.Contains(r.Output, "tokens truncated") || !slices.Contains(r.Notes, "max_output_tokens 1000 is above this server's limit: lowered to 10 ([limits] max_output_tokens).") {
		t.Fatalf("above the limit: %+v", r)
	}
	r = exec1(t, m, ExecRequest{Cmd: cmd, MaxOutputTokens: new(0)})
	if r.Output != "…73 tokens truncated…" || r.OriginalTokenCount != 73 {
		t.Fatalf("zero: %+v", r)
	}
	r = exec1(t, m, ExecRequest{Cmd: "true", MaxOutputTokens: new(0)})
	if r.Output != "" {
		t.Fatalf("zero, no output: %+v", r)
	}
	for _, req := range []ExecRequest{{Cmd: "touch never1", MaxOutputTokens: new(-1)}, {Cmd: "touch never2", Yield: -time.Millisecond}} {
		if _, err := m.Exec(context.Background(), req); err == nil {
			t.Fatalf("%+v: no error", req)
		}
	}
	for _, s := range m.List() {
		if strings.Contains(s.Command, "never") {
			t.Fatalf("a refused request started a command: %+v", s)
		}
	}
}

// TestTruncationReadable: a truncated response counts every line the
// command printed, the dropped middle included, keeps whole lines on
// both sides, and puts the marker on a line of its own.
func TestTruncationReadable(t *testing.T) {
	m := newManager(t, Config{})
	for _, n := range []int{3000, 700_000} { // within the buffer; past it (the middle dropped)
		r := exec1(t, m, ExecRequest{Cmd: "seq 1 " + strconv.Itoa(n), MaxOutputTokens: new(200), Yield: 30 * time.Second})
		header, body, ok := strings.Cut(r.Output, "\n\n")
		if !ok || header != "Total output lines: "+strconv.Itoa(n) {
			t.Fatalf("%d lines: header %q", n, header)
		}
		lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
		marker := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "tokens truncated") })
		if marker < 1 || !strings.HasPrefix(lines[marker], "…") || !strings.HasSuffix(lines[marker], " tokens truncated…") {
			t.Fatalf("%d lines: the marker is not on a line of its own:\n%s", n, body)
		}
		// Every other line is a whole line of seq's, in order.
		next := 1
		for i, l := range lines {
			if i == marker {
				next = n - (len(lines) - 1 - i) + 1
				continue
			}
			if l != strconv.Itoa(next) {
				t.Fatalf("%d lines: line %d is %q, want %d:\n%s", n, i, l, next, body)
			}
			next++
		}
		if next != n+1 {
			t.Fatalf("%d lines: the last line is missing:\n%s", n, body)
		}
	}
}

// TestQuickExitKept: a command that exits within its first window stays
// listed as exited and readable, unless the request says to forget it.
func TestQuickExitKept(t *testing.T) {
	m := newManager(t, Config{})
	r := exec1(t, m, ExecRequest{Cmd: "echo kept"})
	f := exec1(t, m, ExecRequest{Cmd: "echo forgotten", Forget: true})
	if r.ExitCode == nil || f.ExitCode == nil || r.SessionID != 0 {
		t.Fatalf("%+v %+v", r, f)
	}
	list := m.List()
	if len(list) != 1 || list[0].Command != "echo kept" || list[0].Running {
		t.Fatalf("list: %+v", list)
	}
	lines, _, _, err := m.Log(list[0].ID, 0, 0)
	if err != nil || !slices.Equal(lines, []string{"kept"}) {
		t.Fatalf("log: %v %q", err, lines)
	}
	// The exit was reported: a poll says it again, with no output.
	w, err := m.Write(context.Background(), WriteRequest{SessionID: list[0].ID})
	if err != nil || w.ExitCode == nil || w.Output != "" {
		t.Fatalf("poll: %v %+v", err, w)
	}
}

// TestCloseLeavesNothing: after Close, no goroutine the manager started
// is left (janitor, kills, screens' readers, pumps), and no screen.
func TestCloseLeavesNothing(t *testing.T) {
	base := runtime.NumGoroutine()
	screens := screensLive.Load()
	m := New(Config{Workspace: t.TempDir(), SessionTimeout: time.Hour, KillGrace: 200 * time.Millisecond, OnBackgroundExit: func(int, int, []string) {}})
	cmds := []ExecRequest{
		{Cmd: "sleep 60", Timeout: time.Hour},
		{Cmd: "printf '\\033[?1049hscreen'; sleep 60", TTY: true},
		{Cmd: "echo done"},
	}
	for _, req := range cmds {
		req.Login, req.Yield = noLogin, 300*time.Millisecond
		if _, err := m.Exec(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if screensLive.Load() != screens+1 {
		t.Fatalf("%d screens, want %d", screensLive.Load(), screens+1)
	}
	m.Close()
	if screensLive.Load() != screens {
		t.Fatalf("%d screens after Close, %d before", screensLive.Load(), screens)
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines after Close, %d before:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}
