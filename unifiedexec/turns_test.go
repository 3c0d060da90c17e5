//go:build linux

package unifiedexec

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// shellSession starts an interactive bash in a terminal with a known
// prompt and no rc files, and waits for its first prompt.
func shellSession(t testing.TB, m *Manager) int {
	t.Helper()
	r, err := m.Exec(context.Background(), ExecRequest{
		Cmd:   `PS1='PROMPT> ' exec bash --norc --noprofile -i`,
		Login: noLogin, TTY: true, Yield: 20 * time.Second,
	})
	if err != nil || r.SessionID == 0 || !strings.Contains(r.Output, "PROMPT> ") {
		t.Fatalf("bash -i: %v %+v", err, r)
	}
	return r.SessionID
}

// turn writes chars and waits (up to 20 s, ending early at a prompt).
func turn(t testing.TB, m *Manager, id int, chars string) *Response {
	t.Helper()
	w, err := m.Write(context.Background(), WriteRequest{SessionID: id, Chars: chars, Yield: 20 * time.Second})
	if err != nil {
		t.Fatalf("write %q: %v", chars, err)
	}
	if w.ExitCode != nil {
		t.Fatalf("write %q: the shell exited: %+v", chars, w)
	}
	return w
}

// backToBack is one program opened and left from an interactive shell,
// each turn typed as soon as the last one returned: leave must bring the
// shell's prompt back, and the command typed right after it must run.
type backToBack struct {
	name  string
	open  string // typed at the shell prompt
	ready string // the open turn's output contains it
	leave string // typed to the program
}

var backToBacks = []backToBack{
	{"vim", "vim -u NONE -N\n", "", ":q\n"},
	{"less", "less /etc/passwd\n", "", "q"},
	{"python", "python3 -q\n", ">>> ", "exit()\n"},
	{"bash", "bash --norc --noprofile\n", "", "exit\n"},
}

// TestBackToBackTurns: programs typed into a shell with no pause between
// the turns lose no keystroke: the turn that leaves the program ends at
// the shell's prompt (not while the program still restores the terminal,
// which would discard what is typed next), and the command typed next
// runs. 100 repetitions of each, zero losses.
func TestBackToBackTurns(t *testing.T) {
	reps := 100
	if testing.Short() {
		reps = 10
	}
	for _, p := range backToBacks {
		if _, err := exec1Look(p.open); err != nil {
			t.Logf("skipping %s: %v", p.name, err)
			continue
		}
		t.Run(p.name, func(t *testing.T) {
			m := newManager(t, Config{})
			id := shellSession(t, m)
			for i := range reps {
				if w := turn(t, m, id, p.open); !strings.Contains(w.Output, p.ready) || !slices.Contains(w.Notes, WaitingNote) {
					t.Fatalf("rep %d: open: %+v", i, w)
				}
				w := turn(t, m, id, p.leave)
				if !strings.HasSuffix(w.Output, "PROMPT> ") || !slices.Contains(w.Notes, WaitingNote) {
					t.Fatalf("rep %d: leaving %s did not end at the shell's prompt: %q %v", i, p.name, w.Output, w.Notes)
				}
				mark := fmt.Sprintf("mark-%d", i)
				w = turn(t, m, id, "echo "+mark+"\n")
				if !strings.Contains(w.Output, "\n"+mark+"\n") {
					t.Fatalf("rep %d: the command typed after leaving %s was lost: %q %v", i, p.name, w.Output, w.Notes)
				}
			}
		})
	}
}

// exec1Look checks the program of a shell line is installed.
func exec1Look(line string) (string, error) {
	name := strings.Fields(line)[0]
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if st, err := os.Stat(filepath.Join(dir, name)); err == nil && !st.IsDir() {
			return filepath.Join(dir, name), nil
		}
	}
	return "", fmt.Errorf("%s is not installed", name)
}

// TestWaitingAfterOutput: a turn that ends because the program waits for
// input returns everything it printed first (the program can be blocked
// reading while its output is still on its way to the session).
func TestWaitingAfterOutput(t *testing.T) {
	m := newManager(t, Config{})
	reps := 40
	if testing.Short() {
		reps = 10
	}
	for i := range reps {
		r := exec1(t, m, ExecRequest{Cmd: `python3 -c "print('banner'); input('> ')"`, TTY: true, Yield: 20 * time.Second})
		if !slices.Contains(r.Notes, WaitingNote) {
			t.Fatalf("run %d: not waiting: %+v", i, r)
		}
		if r.Output != "banner\n> " {
			t.Fatalf("run %d: waiting for input, but the output is %q", i, r.Output)
		}
		m.Kill(context.Background(), r.SessionID)
	}
}
