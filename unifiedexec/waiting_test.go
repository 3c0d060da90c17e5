//go:build linux

package unifiedexec

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/ptyrun"
)

// TestWaitingForInput: a REPL's turn ends at its prompt, long before the
// yield deadline, and says so; a quiet program is not cut short.
func TestWaitingForInput(t *testing.T) {
	m := newManager(t, Config{})
	r := exec1(t, m, ExecRequest{Cmd: "python3 -i -q", TTY: true, Yield: 20 * time.Second})
	if r.SessionID == 0 || r.WallTime > 10*time.Second || !slices.Contains(r.Notes, WaitingNote) {
		t.Fatalf("first prompt: %+v", r)
	}
	w, err := m.Write(context.Background(), WriteRequest{SessionID: r.SessionID, Chars: "print(1+1)\n", Yield: 20 * time.Second})
	if err != nil || !strings.Contains(w.Output, "2\n") || !slices.Contains(w.Notes, WaitingNote) || w.WallTime > 10*time.Second {
		t.Fatalf("turn: %v %+v", err, w)
	}
	// A slow computation is not a prompt.
	w, err = m.Write(context.Background(), WriteRequest{SessionID: r.SessionID, Chars: "import time; time.sleep(0.6); print('slept')\n", Yield: 20 * time.Second})
	if err != nil || !strings.Contains(w.Output, "slept") {
		t.Fatalf("returned before the computation ended: %v %+v", err, w)
	}
	// A quiet program in a terminal runs its whole window.
	q := exec1(t, m, ExecRequest{Cmd: "sleep 5", TTY: true, Yield: 700 * time.Millisecond})
	if q.WallTime < 650*time.Millisecond || slices.Contains(q.Notes, WaitingNote) {
		t.Fatalf("quiet program cut short: %+v", q)
	}
}

// BenchmarkInteractiveTurn: write_stdin("print(1+1)\n") to python3 -i;
// reports the median turn.
func BenchmarkInteractiveTurn(b *testing.B) {
	m := New(Config{Workspace: b.TempDir()})
	defer m.Close()
	r, err := m.Exec(context.Background(), ExecRequest{Cmd: "python3 -i -q", TTY: true, Login: noLogin, Yield: 10 * time.Second})
	if err != nil || r.SessionID == 0 {
		b.Fatal(err, r)
	}
	var turns []time.Duration
	for b.Loop() {
		start := time.Now()
		w, err := m.Write(context.Background(), WriteRequest{SessionID: r.SessionID, Chars: "print(1+1)\n", Yield: 10 * time.Second})
		if err != nil || !strings.Contains(w.Output, "2") {
			b.Fatal(err, w)
		}
		turns = append(turns, time.Since(start))
	}
	sort.Slice(turns, func(i, j int) bool { return turns[i] < turns[j] })
	b.ReportMetric(float64(turns[len(turns)/2].Microseconds())/1000, "median-ms")
}

// A terminal query that arrives before Exec has the process (the pump can
// run before Start returns) is still answered, once the process is
// attached; under load it was lost and the program waited forever.
func TestQueryBeforeAttach(t *testing.T) {
	s := &session{tty: true, buf: newHeadTail(1 << 20), calls: make(chan struct{}, 1)}
	s.clean.out = s.appendClean
	s.clean.reply = s.reply
	s.Write([]byte("\x1b[6n")) // the query, before the process is known
	proc, err := ptyrun.Start(ptyrun.Spec{
		Argv:   []string{"bash", "-c", `read -s -t 10 -d R r; echo "got:${r#*[}"`},
		TTY:    true,
		Output: s,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Kill(time.Second)
	s.attach(proc)
	select {
	case <-proc.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the program did not end: its query was not answered")
	}
	r := s.respond(time.Now(), 1000)
	if !strings.Contains(r.Output, "got:1;1") || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("the reply did not reach the program: %+v", r)
	}
}

// BenchmarkVimTurns: an interactive shell opens a file in vim, types a
// line, saves and quits, and shows the file, each turn typed as soon as
// the last returned: reports the median turn and the runs whose
// keystrokes were lost (the file must be shown holding the line: typed
// too early, the command after vim is swallowed by vim on its way out).
func BenchmarkVimTurns(b *testing.B) {
	if _, err := exec1Look("vim"); err != nil {
		b.Skip(err)
	}
	m := New(Config{Workspace: b.TempDir()})
	defer m.Close()
	id := shellSession(b, m)
	file := filepath.Join(b.TempDir(), "notes.txt")
	var turns []time.Duration
	lost, i := 0, 0
	timed := func(chars string) *Response {
		start := time.Now()
		w := turn(b, m, id, chars)
		turns = append(turns, time.Since(start))
		return w
	}
	for b.Loop() {
		i++
		line := fmt.Sprintf("hello %d", i)
		timed("vim -u NONE -N -i NONE " + file + "\n")
		timed("cc" + line) // replace the line, stay in insert mode
		timed("\x1b:wq\n") // Escape, save, quit
		w := timed("cat " + file + "\n")
		if !strings.Contains(w.Output, "\n"+line+"\nPROMPT> ") {
			lost++
			if lost <= 3 {
				got, _ := os.ReadFile(file)
				b.Logf("run %d: the file holds %q; cat gave %q", i, got, w.Output)
			}
		}
	}
	b.ReportMetric(medianMS(turns), "median-ms")
	b.ReportMetric(float64(lost), "lost")
}
