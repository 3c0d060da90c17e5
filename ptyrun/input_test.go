//go:build linux

package ptyrun

import (
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// deaf starts, in a terminal, a program that never reads it (raw mode, so
// the line discipline keeps what it is sent instead of discarding it).
func deaf(t *testing.T, m mode) (*Process, *syncBuf) {
	t.Helper()
	out := new(syncBuf)
	p, err := Start(Spec{Argv: []string{"/bin/bash", "-c", "stty raw -echo; echo deaf-ready; exec sleep 60"}, TTY: true, Output: out, Helper: m.helper})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(out.String(), "deaf-ready") })
	return p, out
}

// within fails the test if f has not returned after d.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return in %v", what, d)
	}
}

// writeEnd waits for a blocked Write's result; it must come once the
// process has ended.
func writeEnd(t *testing.T, wrote <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-wrote:
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not end with the process", what)
		return nil
	}
}

// TryWrite takes what the terminal holds and never waits for the rest: it
// answers terminal queries from the output pump, which must not stall.
func TestTryWriteDoesNotWait(t *testing.T) {
	for _, m := range modes(t) {
		if !m.tty {
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			p, _ := deaf(t, m)
			defer p.Kill(0)
			big := make([]byte, 1<<20)
			var n int
			var err error
			within(t, 20*time.Second, "TryWrite to a terminal nobody reads", func() { n, err = p.TryWrite(big) })
			if err != nil || n <= 0 || n >= len(big) {
				t.Fatalf("TryWrite of 1 MiB to a full terminal: n=%d err=%v; want part of it taken, no error", n, err)
			}
			total := n
			for range 10 {
				within(t, 20*time.Second, "TryWrite to a full terminal", func() { n, err = p.TryWrite(big) })
				if err != nil {
					t.Fatalf("TryWrite to a full terminal: %v", err)
				}
				total += n
			}
			if total >= len(big) {
				t.Fatalf("eleven TryWrites put %d bytes into a terminal nobody reads", total)
			}
			p.Kill(0)
			if _, err := p.TryWrite([]byte("x")); !errors.Is(err, ErrExited) {
				t.Fatalf("TryWrite after exit: %v; want ErrExited", err)
			}
		})
	}
}

// A Write blocked on a terminal nobody reads ends with the process: Kill
// must not wait for it, and it must not wait forever.
func TestBlockedWriteEndsWithProcess(t *testing.T) {
	for _, m := range modes(t) {
		if !m.tty {
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			p, _ := deaf(t, m)
			wrote := make(chan error, 1)
			go func() {
				_, err := p.Write(make([]byte, 1<<20))
				wrote <- err
			}()
			time.Sleep(100 * time.Millisecond) // let it block
			within(t, 20*time.Second, "Kill with a Write blocked on the terminal", func() { p.Kill(0) })
			if err := writeEnd(t, wrote, "the blocked Write"); !errors.Is(err, ErrExited) && !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("blocked Write ended with %v; want ErrExited", err)
			}
		})
	}
}

// A Write from the output sink, blocked on a terminal nobody reads, ends
// when the process does: the pump is not left spinning on the hung-up
// terminal, and Done and Kill return.
func TestSinkWriteEndsWithProcess(t *testing.T) {
	for _, m := range modes(t) {
		if !m.tty {
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			var p *Process
			var once sync.Once
			started := make(chan struct{})
			wrote := make(chan error, 1)
			out := new(syncBuf)
			sink := writerFunc(func(b []byte) (int, error) {
				out.Write(b)
				if strings.Contains(out.String(), "deaf-ready") {
					once.Do(func() {
						<-started
						_, err := p.Write(make([]byte, 1<<20))
						wrote <- err
					})
				}
				return len(b), nil
			})
			var err error
			p, err = Start(Spec{Argv: []string{"/bin/bash", "-c", "stty raw -echo; echo deaf-ready; exec sleep 60"}, TTY: true, Output: sink, Helper: m.helper})
			if err != nil {
				t.Fatal(err)
			}
			close(started)
			waitFor(t, func() bool { return strings.Contains(out.String(), "deaf-ready") })
			time.Sleep(100 * time.Millisecond) // let the sink block
			within(t, 20*time.Second, "Kill with the output sink blocked writing the terminal", func() { p.Kill(0) })
			if err := writeEnd(t, wrote, "the sink's Write"); err == nil {
				t.Fatal("1 MiB written to a terminal nobody reads")
			}
		})
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
