//go:build linux

package unifiedexec

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// watcher is an Observe callback that says when a string has arrived.
type watcher struct {
	mu   sync.Mutex
	seen strings.Builder
	want string
	hit  chan struct{}
}

func watch(want string) *watcher { return &watcher{want: want, hit: make(chan struct{})} }

func (w *watcher) observe(b []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	was := strings.Contains(w.seen.String(), w.want)
	w.seen.Write(b)
	if !was && strings.Contains(w.seen.String(), w.want) {
		close(w.hit)
	}
}

// TestCancelConsumesNothing: a call whose context ends during its window
// returns the context's error and takes nothing from the session: the
// output and the exit it saw are the next call's. Exec names the session
// to Started before its window.
func TestCancelConsumesNothing(t *testing.T) {
	m := newManager(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	w := watch("two")
	started := 0
	go func() {
		select {
		case <-w.hit:
		case <-time.After(20 * time.Second):
		}
		cancel()
	}()
	r, err := m.Exec(ctx, ExecRequest{Cmd: "echo one; echo two; sleep 1; echo three; exit 3", Login: noLogin, Yield: 30 * time.Second,
		Observe: w.observe, Started: func(id int) { started = id }})
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
	w = watch("late")
	go func() {
		<-w.hit
		// Cancelled once the command is gone: the window may already
		// have ended at the exit; either way nothing is lost.
		cancel()
	}()
	p, err := m.Write(ctx, WriteRequest{SessionID: r.SessionID, Yield: 30 * time.Second, Observe: w.observe})
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
