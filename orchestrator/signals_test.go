package orchestrator

import (
	"bytes"
	"context"
	"github.com/unified-exec/unified-exec/unifiedexec"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/approval"
	"github.com/unified-exec/unified-exec/policy"
)

// waitingPrompter is someone at the prompt who never answers.
type waitingPrompter struct{ asked chan struct{} }

func (w *waitingPrompter) Ask(ctx context.Context, q approval.Question) (approval.Answer, error) {
	close(w.asked)
	<-ctx.Done()
	return approval.Deny, context.Cause(ctx)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type runOutcome struct {
	code int
	err  error
}

func startRun(o *Orchestrator, req RunRequest) <-chan runOutcome {
	done := make(chan runOutcome, 1)
	go func() {
		code, err := o.Run(context.Background(), req)
		done <- runOutcome{code, err}
	}()
	return done
}

func awaitRun(t *testing.T, done <-chan runOutcome) runOutcome {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return")
		return runOutcome{}
	}
}

// A signal at the approval prompt ends the run: nothing runs, and the exit
// code is the signal's.
func TestRunSignalAtPrompt(t *testing.T) {
	requireSandbox(t)
	ws := t.TempDir()
	pol, err := policy.Parse([]byte("[approval]\nmode = \"untrusted\"\n"), "test-policy.toml")
	if err != nil {
		t.Fatal(err)
	}
	p := &waitingPrompter{asked: make(chan struct{})}
	o, err := New(Config{Policy: pol, Workspace: ws, Prompter: p})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	sigs := make(chan os.Signal, 1)
	w, _ := runOutput(t, &syncBuffer{})
	done := startRun(o, RunRequest{Argv: []string{"touch", "made"}, Stdout: w, Stderr: w, Signals: sigs})
	select {
	case <-p.asked:
	case <-time.After(20 * time.Second):
		t.Fatal("never asked")
	}
	sigs <- syscall.SIGINT
	r := awaitRun(t, done)
	if r.err != nil || r.code != 130 {
		t.Fatalf("code %d err %v, want 130", r.code, r.err)
	}
	if _, err := os.Stat(filepath.Join(ws, "made")); err == nil {
		t.Fatal("the command ran although the prompt was interrupted")
	}
}

// While the command runs, the first signal reaches it (its handler runs and
// its exit code is the wrapper's); the second ends it; the same signal
// twice at once (a terminal's Ctrl-C, relayed) counts once.
func TestRunForwardsSignals(t *testing.T) {
	f := newFixture(t, "never", "")
	for _, c := range []struct {
		script string
		gaps   []time.Duration // before each SIGINT after the first
		code   int
	}{
		{`trap "echo got-int; exit 3" INT; echo ready; sleep 30 & wait`, nil, 3},
		{`trap "" INT; echo ready; sleep 30`, []time.Duration{2 * unifiedexec.SignalEchoWindow}, 143},
		// The echo is dropped: the command, ignoring the first, is still
		// running when the third arrives and ends it.
		{`trap "" INT; echo ready; sleep 30`, []time.Duration{time.Millisecond, 2 * unifiedexec.SignalEchoWindow}, 143},
	} {
		sigs := make(chan os.Signal, 1)
		out := &syncBuffer{}
		w, _ := runOutput(t, out)
		done := startRun(f.o, RunRequest{Argv: []string{"bash", "-c", c.script}, Stdout: w, Stderr: w, Signals: sigs})
		for deadline := time.Now().Add(20 * time.Second); !strings.Contains(out.String(), "ready"); {
			if time.Now().After(deadline) {
				t.Fatalf("%s: never ready: %q", c.script, out.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		sigs <- syscall.SIGINT
		for i, gap := range c.gaps {
			time.Sleep(gap)
			select {
			case r := <-done:
				t.Fatalf("%s: ended (%d, %v) before SIGINT %d", c.script, r.code, r.err, i+2)
			default:
			}
			sigs <- syscall.SIGINT
		}
		r := awaitRun(t, done)
		if r.err != nil || r.code != c.code {
			t.Fatalf("%s: code %d err %v, want %d; output %q", c.script, r.code, r.err, c.code, out.String())
		}
	}
}
