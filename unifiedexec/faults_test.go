//go:build linux

package unifiedexec

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestKillIgnoringSIGTERM: a command that ignores SIGTERM is killed after
// the grace period, with its whole tree.
func TestKillIgnoringSIGTERM(t *testing.T) {
	for _, noIso := range []bool{false, true} {
		t.Run(fmt.Sprintf("noIsolation=%v", noIso), func(t *testing.T) {
			m := newManager(t, Config{KillGrace: 300 * time.Millisecond, NoIsolation: noIso})
			tag := fmt.Sprintf("5%d.%d", rand.IntN(1000), rand.IntN(1000))
			r := exec1(t, m, ExecRequest{Cmd: "trap '' TERM; echo ready; while :; do sleep " + tag + " || true; done", Yield: 300 * time.Millisecond})
			if r.SessionID == 0 {
				t.Fatalf("exited: %+v", r)
			}
			start := time.Now()
			k, err := m.Kill(context.Background(), r.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			if k.ExitCode == nil || *k.ExitCode != 128+9 {
				t.Fatalf("want SIGKILL (137), got exit %v: %+v", fmtCode(k.ExitCode), k)
			}
			if el := time.Since(start); el > 10*time.Second {
				t.Fatalf("kill took %v", el)
			}
			deadline := time.Now().Add(10 * time.Second)
			for len(procsWith(tag)) > 0 {
				if time.Now().After(deadline) {
					t.Fatalf("survivors: %v", procsWith(tag))
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// TestClosedStdoutKeepsRunning: a command that closes its output and keeps
// running is still a running process; its exit is reported when it comes.
func TestClosedStdoutKeepsRunning(t *testing.T) {
	m := newManager(t, Config{})
	r := exec1(t, m, ExecRequest{Cmd: "echo before; exec >&- 2>&-; sleep 1; exit 6", Yield: 250 * time.Millisecond})
	if r.SessionID == 0 || r.Output != "before\n" {
		t.Fatalf("first window: %+v", r)
	}
	w, err := m.Write(context.Background(), WriteRequest{SessionID: r.SessionID, Yield: 10 * time.Second})
	if err != nil || w.ExitCode == nil || *w.ExitCode != 6 {
		t.Fatalf("exit not reported: %v %+v", err, w)
	}
}

// TestUnwatchedFloodKeepsTail: a flood nobody watches is slowed, not cut:
// its last line and its exit code still arrive.
func TestUnwatchedFloodKeepsTail(t *testing.T) {
	m := New(Config{Workspace: t.TempDir(), BufferBytes: 64 << 10})
	defer m.Close()
	r, err := m.Exec(context.Background(), ExecRequest{Cmd: "sleep 0.5; seq 1 2000000; echo flood-end", Login: noLogin, Yield: time.Millisecond})
	if err != nil || r.SessionID == 0 {
		t.Fatalf("%v %+v", err, r)
	}
	id := r.SessionID
	time.Sleep(time.Second) // unwatched: the buffer fills, reading slows
	var all strings.Builder
	for i := 0; i < 60; i++ {
		w, err := m.Write(context.Background(), WriteRequest{SessionID: id, Yield: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		all.WriteString(w.Output)
		if w.ExitCode != nil {
			if *w.ExitCode != 0 || !strings.Contains(w.Output, "2000000\nflood-end") {
				t.Fatalf("exit %d, last output %q", *w.ExitCode, tailOf(w.Output, 200))
			}
			return
		}
	}
	t.Fatalf("the flood never ended; last output %q", tailOf(all.String(), 200))
}

func tailOf(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestQueryFloodDoesNotStall: a program that asks the terminal for the
// cursor position far more often than its input holds answers, and never
// reads them, still runs to its end: answers are written without waiting
// (those the terminal has no room for are dropped), so the pump that reads
// the program's output never blocks on its input. Before, the pump blocked
// writing an answer, the program blocked writing output, and Kill waited
// for both forever.
func TestQueryFloodDoesNotStall(t *testing.T) {
	m := newManager(t, Config{KillGrace: 300 * time.Millisecond})
	flood := `python3 -c 'import os, tty; tty.setraw(0)
for _ in range(200): os.write(1, b"\x1b[6n" * 1000)
os.write(1, b"flood-done\r\n")'`
	r := exec1(t, m, ExecRequest{Cmd: flood, TTY: true, Yield: 20 * time.Second})
	if r.ExitCode == nil || *r.ExitCode != 0 || !strings.Contains(r.Output, "flood-done") {
		t.Errorf("the query flood did not run to its end in 20 s: exit %v, output tail %q", r.ExitCode, r.Output[max(0, len(r.Output)-200):])
	}
	if r.ExitCode == nil {
		done := make(chan struct{})
		go func() {
			defer close(done)
			m.Kill(context.Background(), r.SessionID)
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("Kill did not return in 20 s")
		}
	}
}

func fmtCode(c *int) string {
	if c == nil {
		return "none"
	}
	return fmt.Sprint(*c)
}
