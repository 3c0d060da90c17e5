//go:build linux

package unifiedexec

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// cancelWhenLogged cancels once the session's log holds want (the log,
// not the window's observer: output may come before the window starts).
// The goroutine ends then, or after 20 s.
func cancelWhenLogged(m *Manager, id <-chan int, want string, cancel context.CancelFunc) {
	defer cancel()
	deadline := time.Now().Add(20 * time.Second)
	var sid int
	select {
	case sid = <-id:
	case <-time.After(20 * time.Second):
		return
	}
	for time.Now().Before(deadline) {
		lines, _, _, _ := m.Log(sid, 0, 0)
		if strings.Contains(strings.Join(lines, "\n"), want) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCancelConsumesNothing: a call whose context ends during its window
// returns the context's error and takes nothing from the session: the
// output and the exit it saw are the next call's. Exec names the session
// to Started before its window.
func TestCancelConsumesNothing(t *testing.T) {
	m := newManager(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	ids := make(chan int, 1)
	started := 0
	go cancelWhenLogged(m, ids, "two", cancel)
	r, err := m.Exec(ctx, ExecRequest{Cmd: "echo one; echo two; sleep 2; echo three; exit 3", Login: noLogin, Yield: 30 * time.Second,
		Started: func(id int) { started = id; ids <- id }})
	if !errors.Is(err, context.Canceled) || r != nil {
		t.Fatalf("cancelled exec: %v %+v", err, r)
	}
	if started < firstID {
		t.Fatalf("Started was not told the session id: %d", started)
	}
	var out string
	for {
		p, err := m.Write(context.Background(), WriteRequest{SessionID: started, Yield: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		out += p.Output
		if p.ExitCode != nil {
			if *p.ExitCode != 3 {
				t.Fatalf("exit %d", *p.ExitCode)
			}
			break
		}
	}
	if out != "one\ntwo\nthree\n" {
		t.Fatalf("output after the cancelled call: %q", out)
	}

	// A poll cancelled after the command printed and exited.
	r = exec1(t, m, ExecRequest{Cmd: "sleep 0.5; echo late; exit 4", Yield: 250 * time.Millisecond})
	ctx, cancel = context.WithCancel(context.Background())
	ids = make(chan int, 1)
	ids <- r.SessionID
	go cancelWhenLogged(m, ids, "late", cancel)
	p, err := m.Write(ctx, WriteRequest{SessionID: r.SessionID, Yield: 30 * time.Second})
	if err == nil {
		if p.ExitCode == nil || p.Output != "late\n" {
			t.Fatalf("poll: %+v", p)
		}
		return
	}
	p, err = m.Write(context.Background(), WriteRequest{SessionID: r.SessionID, Yield: 10 * time.Second})
	if err != nil || p.ExitCode == nil || *p.ExitCode != 4 || p.Output != "late\n" {
		t.Fatalf("poll after a cancelled poll: %v %+v", err, p)
	}
}
