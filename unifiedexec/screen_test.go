//go:build linux

package unifiedexec

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// screenHeader is the line that opens a rendered screen.
var screenHeader = regexp.MustCompile(`(?m)^Screen \(full-screen program, (\d+) rows × (\d+) columns; cursor at row (\d+), column (\d+)(?:, hidden)?\):\n`)

// screenOf returns the rendered screen of a response's output: its rows,
// and the cursor's row and column (1-based).
func screenOf(t *testing.T, out string) (rows []string, row, col string) {
	t.Helper()
	loc := screenHeader.FindStringSubmatchIndex(out)
	if loc == nil {
		t.Fatalf("no screen in the output:\n%s", out)
	}
	m := screenHeader.FindStringSubmatch(out)
	body := strings.TrimSuffix(out[loc[1]:], "\n")
	return strings.Split(body, "\n"), m[3], m[4]
}

// TestScreens: while a program is on the alternate screen, a response
// shows the screen as a terminal would (rows of text, trailing blanks
// trimmed, the cursor named), updated as the program redraws; back on
// the main screen the stream resumes.
func TestScreens(t *testing.T) {
	if _, err := exec1Look("vim"); err != nil {
		t.Skip(err)
	}
	m := newManager(t, Config{})
	dir := t.TempDir()
	file := filepath.Join(dir, "notes.txt")
	os.WriteFile(file, []byte("first line\nsecond line\nthird line\n"), 0o644)
	id := shellSession(t, m)
	live := screensLive.Load()

	w := turn(t, m, id, "vim -u NONE -N "+file+"\n")
	rows, row, col := screenOf(t, w.Output)
	if len(rows) != 24 || rows[0] != "first line" || rows[1] != "second line" || rows[2] != "third line" || rows[3] != "~" || !strings.Contains(rows[23], "notes.txt") {
		t.Fatalf("vim's screen:\n%s", strings.Join(rows, "\n"))
	}
	if row != "1" || col != "1" {
		t.Fatalf("cursor at %s,%s", row, col)
	}
	for _, r := range rows {
		if r != strings.TrimRight(r, " ") || strings.ContainsAny(r, "\x1b\r") {
			t.Fatalf("row %q is not trimmed text", r)
		}
	}
	if !slices.Contains(w.Notes, WaitingNote) {
		t.Fatalf("notes: %v", w.Notes)
	}

	// Edit: the screen follows.
	w = turn(t, m, id, "jdd")
	rows, row, col = screenOf(t, w.Output)
	if rows[0] != "first line" || rows[1] != "third line" || rows[2] != "~" || row != "2" || col != "1" {
		t.Fatalf("after jdd (cursor %s,%s):\n%s", row, col, strings.Join(rows, "\n"))
	}

	// Leave: the stream resumes, with no screen.
	w = turn(t, m, id, ":q!\n")
	if strings.Contains(w.Output, "Screen (") || !strings.HasSuffix(w.Output, "PROMPT> ") {
		t.Fatalf("after leaving vim: %q", w.Output)
	}
	w = turn(t, m, id, "echo back\n")
	if w.Output != "echo back\nback\nPROMPT> " {
		t.Fatalf("the stream after vim: %q", w.Output)
	}
	if n := screensLive.Load(); n != live {
		t.Fatalf("%d screens live after vim left, %d before", n, live)
	}
}

// TestScreenCap: at most maxScreens emulators live at once (each costs
// megabytes); a stopped one makes room.
func TestScreenCap(t *testing.T) {
	base := screensLive.Load()
	var scs []*screen
	defer func() {
		for _, sc := range scs {
			sc.stop()
		}
	}()
	for range maxScreens - base {
		sc := newScreen(80, 24, func([]byte) {})
		if sc == nil {
			t.Fatal("refused below the cap")
		}
		scs = append(scs, sc)
	}
	if newScreen(80, 24, func([]byte) {}) != nil {
		t.Fatal("a screen past the cap")
	}
	scs[0].stop()
	scs[0] = newScreen(80, 24, func([]byte) {})
	if scs[0] == nil {
		t.Fatal("no room after a stop")
	}
}

// TestScreenAnswers: the emulator answers the program's queries (here
// the cursor position), and a screen stops cleanly after answering.
func TestScreenAnswers(t *testing.T) {
	got := make(chan string, 4)
	sc := newScreen(80, 24, func(b []byte) { got <- string(b) })
	sc.write([]byte("\x1b[5;7H\x1b[6n"))
	select {
	case a := <-got:
		if a != "\x1b[5;7R" {
			t.Fatalf("answer %q", a)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
	}
	sc.stop()
	sc.stop() // twice is fine
}

// TestScreensLessTop: less and top show as screens too.
func TestScreensLessTop(t *testing.T) {
	m := newManager(t, Config{})
	if _, err := exec1Look("less"); err == nil {
		r := exec1(t, m, ExecRequest{Cmd: "seq 1 100 | less", TTY: true, Yield: 20 * time.Second})
		rows, _, _ := screenOf(t, r.Output)
		if len(rows) != 24 || rows[0] != "1" || rows[22] != "23" || rows[23] != ":" {
			t.Fatalf("less:\n%s", strings.Join(rows, "\n"))
		}
	}
	if _, err := exec1Look("top"); err == nil {
		r := exec1(t, m, ExecRequest{Cmd: "top -d 10", TTY: true, Rows: 30, Cols: 100, Yield: 20 * time.Second})
		rows, _, _ := screenOf(t, r.Output)
		if len(rows) < 8 || !strings.HasPrefix(rows[0], "top - ") || !slices.ContainsFunc(rows, func(r string) bool { return strings.Contains(r, "PID") && strings.Contains(r, "COMMAND") }) {
			t.Fatalf("top:\n%s", strings.Join(rows, "\n"))
		}
		for _, r := range rows {
			if len([]rune(r)) > 100 {
				t.Fatalf("a row wider than the terminal: %q", r)
			}
		}
	}
}

// TestScreenClampsCounts: a count past the screen in a sequence the
// emulator works through one by one does no more than the screen's
// larger side (red team 41: ESC[99999999b, repeat the last character,
// took 19 s of the server's CPU under the session's lock). A repeat of
// 5000 on an 80×24 screen fills it when taken as given; clamped, it
// repeats 80 times: one row and one character.
func TestScreenClampsCounts(t *testing.T) {
	sc := newScreen(80, 24, func([]byte) {})
	if sc == nil {
		t.Fatal("no screen")
	}
	defer sc.stop()
	sc.write([]byte("\x1b[Hx\x1b[5000b"))
	out := sc.render()
	if n := strings.Count(out, "x"); n != 81 {
		t.Fatalf("the repeat printed %d characters, want 81 (1 + 80):\n%s", n, out)
	}
	// Every other counted sequence takes its clamp too: none runs long,
	// and the screen still renders.
	for _, final := range countedFinals {
		sc.write([]byte("\x1b[999999999" + string(final)))
	}
	sc.write([]byte("\x1b[H\x1b[2Jdone"))
	if out := sc.render(); !strings.Contains(out, "done") {
		t.Fatalf("after the counted sequences the screen is:\n%s", out)
	}
}

// TestScreenSurvivesEmulatorPanic: a panic in the terminal emulator,
// third-party code that parses what a command prints, ends the screen's
// use, not the server: later writes and sizes are ignored, and the screen
// says it is not shown.
func TestScreenSurvivesEmulatorPanic(t *testing.T) {
	sc := newScreen(80, 24, func([]byte) {})
	if sc == nil {
		t.Fatal("no screen")
	}
	defer sc.stop()
	sc.write([]byte("before"))
	sc.emu.RegisterCsiHandler('z', func(ansi.Params) bool { panic("boom") })
	sc.write([]byte("\x1b[z"))
	sc.write([]byte("after"))
	sc.resize(100, 30)
	if out := sc.render(); !strings.Contains(out, "not shown") || !strings.Contains(out, "boom") {
		t.Fatalf("after the emulator's panic the screen is:\n%s", out)
	}
}
