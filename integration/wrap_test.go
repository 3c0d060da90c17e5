//go:build linux

package integration

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// wrap runs `unified-exec [flags] -- argv...` and returns its combined
// output and exit code.
func wrap(t *testing.T, flags []string, argv ...string) (string, int) {
	t.Helper()
	args := append(append(append([]string{}, flags...), "--"), argv...)
	cmd := exec.Command(binary, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), 0
}

// lockedBuffer is the wrapper's output, read while it still writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestWrapForwardsSignals: Ctrl-C on the wrapper reaches the command's
// tree, so the command stops its own way and its exit code is the
// wrapper's; a command that ignores it is ended by a second signal; no
// process is left either way.
func TestWrapForwardsSignals(t *testing.T) {
	cases := []struct {
		name   string
		script string // {tag} is a sleep argument unique to the case
		sigs   int
		// group sends to the wrapper's process group, as a terminal's
		// Ctrl-C does: every process of the wrapper gets it at once.
		group bool
		code  int
		want  []string
	}{
		{"unhandled", "echo ready; sleep {tag}", 1, false, 130, nil},
		{"handler", `trap "echo got-int; exit 3" INT; echo ready; sleep {tag} & wait`, 1, false, 3, []string{"got-int"}},
		{"ignored", `trap "" INT; echo ready; sleep {tag}`, 2, false, 143, []string{"interrupt again: ending the command"}},
		{"terminal", `trap "echo got-int; exit 3" INT; echo ready; sleep {tag} & wait`, 1, true, 3, []string{"got-int"}},
		{"terminal-twice", `trap "" INT; echo ready; sleep {tag}`, 2, true, 143, []string{"interrupt again: ending the command"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tag := fmt.Sprintf("41%d.%d", rand.IntN(1000), rand.IntN(1000))
			cmd := exec.Command(binary, "--", "bash", "-c", strings.ReplaceAll(c.script, "{tag}", tag))
			var out lockedBuffer
			cmd.Stdout, cmd.Stderr = &out, &out
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() {
				cmd.Process.Kill()
				<-done
			})
			waitFor(t, func() bool { return strings.Contains(out.String(), "ready") && len(procsWith(tag)) > 0 })
			for range c.sigs {
				pid := cmd.Process.Pid
				if c.group {
					pid = -pid
				}
				if err := syscall.Kill(pid, syscall.SIGINT); err == syscall.ESRCH {
					break // it has ended; the checks below say whether rightly
				} else if err != nil {
					t.Fatal(err)
				}
				select {
				case err := <-done:
					done <- err
				case <-time.After(time.Second): // longer than echoWindow
				}
			}
			var err error
			select {
			case err = <-done:
				done <- err
			case <-time.After(20 * time.Second):
				t.Fatalf("the wrapper did not end after %d SIGINT; output %q", c.sigs, out.String())
			}
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(out.String(), "again"); n != c.sigs-1 {
				t.Fatalf("%d signals were taken for %d: %q", c.sigs, n+1, out.String())
			}
			if code != c.code {
				t.Fatalf("exit code %d, want %d; output %q", code, c.code, out.String())
			}
			for _, w := range c.want {
				if !strings.Contains(out.String(), w) {
					t.Fatalf("output %q lacks %q", out.String(), w)
				}
			}
			waitFor(t, func() bool { return len(procsWith(tag)) == 0 })
		})
	}
}
