//go:build linux

package unifiedexec

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/ptyrun"
)

// TestResize: a write can resize the terminal; the program sees the new
// size (its foreground job gets SIGWINCH) and so does its screen.
func TestResize(t *testing.T) {
	m := newManager(t, Config{})
	r := exec1(t, m, ExecRequest{Cmd: `trap 'echo "winch $(stty size)"' WINCH; stty size; while :; do sleep 0.05; done`, TTY: true, Yield: 500 * time.Millisecond})
	if !strings.Contains(r.Output, "24 80") {
		t.Fatalf("initial size: %+v", r)
	}
	w, err := m.Write(context.Background(), WriteRequest{SessionID: r.SessionID, Rows: 30, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	// The loop waits in sleep, not in read -t: bash 5.2 ran the trap
	// inside the read, and there the command substitution's stty hung
	// in 8 of 30 sessions as the ordinary user, which
	// CI's run of that user failed on (session 20). If a resize still
	// shows no answer, the size is moved and moved back, the same
	// dimensions again (the resize itself is one ioctl whose error Write
	// returns).
	resized := func(out string, again []WriteRequest, want string) string {
		out = pollWithin(t, m, r.SessionID, out, want, 5*time.Second)
		for i := 0; i < 3 && !strings.Contains(out, want); i++ {
			for _, req := range again {
				req.SessionID, req.Yield = r.SessionID, 500*time.Millisecond
				w, err := m.Write(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				out += w.Output
			}
			out = pollWithin(t, m, r.SessionID, out, want, 5*time.Second)
		}
		if !strings.Contains(out, want) {
			t.Fatalf("no %q in %q", want, out)
		}
		return out
	}
	resized(w.Output, []WriteRequest{{Rows: 31, Cols: 101}, {Rows: 30, Cols: 100}}, "winch 30 100")
	// One dimension alone keeps the other.
	w, err = m.Write(context.Background(), WriteRequest{SessionID: r.SessionID, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	out := resized(w.Output, []WriteRequest{{Cols: 121}, {Cols: 120}}, "winch 30 120")
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "winch ") && !strings.HasPrefix(l, "winch 30 ") {
			t.Fatalf("a resize of the width alone changed the rows: %q", l)
		}
	}
	// Pipes have no terminal.
	p := exec1(t, m, ExecRequest{Cmd: "sleep 60", Yield: 250 * time.Millisecond})
	if _, err := m.Write(context.Background(), WriteRequest{SessionID: p.SessionID, Rows: 10}); !errors.Is(err, ptyrun.ErrNoStdin) {
		t.Fatalf("resizing a pipe session: %v", err)
	}

	if _, err := exec1Look("vim"); err != nil {
		return
	}
	v := exec1(t, m, ExecRequest{Cmd: "vim -u NONE -N -i NONE", TTY: true, Yield: 20 * time.Second})
	w, err = m.Write(context.Background(), WriteRequest{SessionID: v.SessionID, Rows: 10, Cols: 40, Yield: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rows, _, _ := screenOf(t, w.Output)
	if !strings.Contains(w.Output, "10 rows × 40 columns") || len(rows) > 10 || len(rows) < 9 || rows[1] != "~" {
		t.Fatalf("vim after a resize:\n%s", w.Output)
	}
}

// pollWithin polls a session until its output, after out, holds want, or
// for d; it returns the output.
func pollWithin(t *testing.T, m *Manager, id int, out, want string, d time.Duration) string {
	t.Helper()
	for deadline := time.Now().Add(d); !strings.Contains(out, want) && time.Now().Before(deadline); {
		w, err := m.Write(context.Background(), WriteRequest{SessionID: id, Yield: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		out += w.Output
	}
	return out
}

// TestTimeout: a command that runs past its timeout has its whole tree
// ended, and the response that reports the exit says why, whether a call
// watches it then or not.
func TestTimeout(t *testing.T) {
	m := newManager(t, Config{KillGrace: 500 * time.Millisecond})
	tag := "61.7"
	r := exec1(t, m, ExecRequest{Cmd: "echo started; sleep " + tag + " & sleep " + tag, Timeout: time.Second, Yield: 30 * time.Second})
	if r.ExitCode == nil || !strings.Contains(r.Output, "started") || !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "timeout_ms") }) {
		t.Fatalf("watched: %+v", r)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(procsWith("sleep "+tag)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("survivors: %v", procsWith("sleep "+tag))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Not watched when it fires: the next poll says so.
	r = exec1(t, m, ExecRequest{Cmd: "sleep 60", Timeout: 300 * time.Millisecond, Yield: 250 * time.Millisecond})
	if r.SessionID == 0 {
		t.Fatalf("%+v", r)
	}
	for running(m, r.SessionID) {
		time.Sleep(20 * time.Millisecond)
	}
	w, err := m.Write(context.Background(), WriteRequest{SessionID: r.SessionID})
	if err != nil || w.ExitCode == nil || !slices.ContainsFunc(w.Notes, func(n string) bool { return strings.Contains(n, "timeout_ms") }) {
		t.Fatalf("poll: %v %+v", err, w)
	}
	// A command done in time is not ended, nor said to be.
	r = exec1(t, m, ExecRequest{Cmd: "true", Timeout: time.Hour})
	if r.ExitCode == nil || *r.ExitCode != 0 || len(r.Notes) != 0 {
		t.Fatalf("in time: %+v", r)
	}
	if _, err := m.Exec(context.Background(), ExecRequest{Cmd: "true", Timeout: -time.Second}); err == nil {
		t.Fatal("a negative timeout was taken")
	}
}
