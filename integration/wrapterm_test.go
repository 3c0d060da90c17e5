//go:build linux

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/unified-exec/unified-exec/approval"
	"github.com/unified-exec/unified-exec/internal/proctree"
	"golang.org/x/sys/unix"
)

// term is the wrapper started in a terminal the test drives, as a person
// at a terminal would run it.
type term struct {
	t    *testing.T
	cmd  *exec.Cmd
	pty  *os.File
	mu   sync.Mutex
	out  strings.Builder
	done chan struct{}
	read chan struct{} // closed when the reader has drained the terminal (EIO)
	err  error
}

// startTerm runs `unified-exec --workspace ws -- argv...` on a new
// terminal of rows×cols, HOME and TERM set.
func startTerm(t *testing.T, ws string, rows, cols uint16, argv ...string) *term {
	t.Helper()
	return startTermFlags(t, ws, nil, rows, cols, argv...)
}

// startTermFlags is startTerm with the wrapper's flags before the "--".
func startTermFlags(t *testing.T, ws string, flags []string, rows, cols uint16, argv ...string) *term {
	t.Helper()
	cmd := exec.Command(binary, slices.Concat([]string{"--workspace", ws}, flags, []string{"--"}, argv)...)
	cmd.Env = append(os.Environ(), "TERM=xterm", "HOME="+ws, "PS1=PROMPT$ ", "LC_ALL=C.UTF-8")
	cmd.Dir = ws
	p, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: rows, Cols: cols})
	if err != nil {
		t.Fatal(err)
	}
	tm := &term{t: t, cmd: cmd, pty: p, done: make(chan struct{}), read: make(chan struct{})}
	go func() {
		// Owner: this test; it ends when the terminal reports EIO (every
		// holder of its other side gone) or the cleanup closes it.
		defer close(tm.read)
		buf := make([]byte, 4096)
		for {
			n, err := p.Read(buf)
			tm.mu.Lock()
			tm.out.Write(buf[:n])
			tm.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() {
		tm.err = cmd.Wait()
		close(tm.done)
	}()
	t.Cleanup(func() {
		select {
		case <-tm.done:
		default:
			cmd.Process.Kill()
			<-tm.done
		}
		p.Close()
		<-tm.read
	})
	return tm
}

func (tm *term) output() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.out.String()
}

// waitFor waits until the output holds s after what was seen before
// (from), and returns the position after it.
func (tm *term) waitFor(from int, s string) int {
	tm.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := tm.output()
		if from <= len(out) {
			if i := strings.Index(out[from:], s); i >= 0 {
				return from + i + len(s)
			}
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("never saw %q; output:\n%q", s, out[min(from, len(out)):])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// approve answers the wrapper's approval question, if it asks one (an
// interactive shell reads its commands from the terminal: the rules
// cannot judge them in advance, so the person at it is asked once).
func (tm *term) approve() int {
	tm.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		out := tm.output()
		if i := strings.Index(out, "[y]es, [n]o? "); i >= 0 {
			tm.send("y\r")
			return i + len("[y]es, [n]o? ")
		}
		if strings.Contains(out, "PROMPT$ ") {
			return 0
		}
		time.Sleep(10 * time.Millisecond)
	}
	tm.t.Fatalf("neither a question nor a prompt:\n%q", tm.output())
	return 0
}

func (tm *term) send(s string) {
	tm.t.Helper()
	if _, err := tm.pty.WriteString(s); err != nil {
		tm.t.Fatal(err)
	}
}

// exit waits for the wrapper to end and returns its exit code.
func (tm *term) exit() int {
	tm.t.Helper()
	select {
	case <-tm.done:
	case <-time.After(30 * time.Second):
		tm.t.Fatalf("the wrapper did not end; output:\n%q", tm.output())
	}
	// What the wrapper wrote last may still wait in the terminal when it
	// has exited: read to the end before anyone looks at the output.
	select {
	case <-tm.read:
	case <-time.After(30 * time.Second):
		tm.t.Fatalf("the terminal stayed open after the wrapper ended (a process left holding it); output:\n%q", tm.output())
	}
	if tm.err == nil {
		return 0
	}
	if ee, ok := tm.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	tm.t.Fatal(tm.err)
	return -1
}

// termMode reads the test's side of the terminal's mode: it must be what
// it was once the wrapper ended.
func termMode(t *testing.T, f *os.File) unix.Termios {
	t.Helper()
	tio, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	return *tio
}

func requireTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("needs %s", name)
	}
}

// TestWrapTerminal: from a terminal, the command gets one of its own
// inside the sandbox, mirrored to the user's: interactive programs work
// (python3's prompt, bash -i with job control, vim editing and saving,
// less paging, top), the window size reaches it at start and on a resize,
// Ctrl-C reaches its foreground job, its exit code is the wrapper's, and
// the user's terminal is left in the mode it had.
func TestWrapTerminal(t *testing.T) {
	requireSandbox(t)

	t.Run("python3", func(t *testing.T) {
		requireTool(t, "python3")
		tm := startTerm(t, t.TempDir(), 24, 80, "python3", "-q")
		before := termMode(t, tm.pty)
		at := tm.waitFor(0, ">>> ")
		tm.send("print(6*7)\r")
		at = tm.waitFor(at, "42")
		at = tm.waitFor(at, ">>> ")
		tm.send("import time; time.sleep(30)\r")
		time.Sleep(300 * time.Millisecond)
		tm.send("\x03") // Ctrl-C reaches python's foreground job
		at = tm.waitFor(at, "KeyboardInterrupt")
		tm.waitFor(at, ">>> ")
		tm.send("raise SystemExit(5)\r")
		if code := tm.exit(); code != 5 {
			t.Fatalf("exit %d, want 5; output:\n%q", code, tm.output())
		}
		if after := termMode(t, tm.pty); after != before {
			t.Fatalf("the terminal's mode was not restored:\nbefore %+v\nafter  %+v", before, after)
		}
	})

	t.Run("bash-job-control", func(t *testing.T) {
		ws := t.TempDir()
		tm := startTerm(t, ws, 24, 80, "bash", "--norc", "--noprofile", "-i")
		at := tm.waitFor(tm.approve(), "PROMPT$ ")
		tm.send("sleep 30 &\r")
		at = tm.waitFor(at, "PROMPT$ ")
		tm.send("jobs\r")
		at = tm.waitFor(at, "Running")
		at = tm.waitFor(at, "PROMPT$ ")
		tm.send("fg\r")
		at = tm.waitFor(at, "sleep 30")
		time.Sleep(300 * time.Millisecond)
		tm.send("\x03") // Ctrl-C ends the job brought to the foreground
		at = tm.waitFor(at, "PROMPT$ ")
		tm.send("echo job:$?\r")
		tm.waitFor(at, "job:130")
		tm.send("exit 4\r")
		if code := tm.exit(); code != 4 {
			t.Fatalf("exit %d, want 4; output:\n%q", code, tm.output())
		}
		if strings.Contains(tm.output(), "cannot set terminal process group") || strings.Contains(tm.output(), "no job control") {
			t.Fatalf("bash has no job control:\n%q", tm.output())
		}
	})

	t.Run("vim", func(t *testing.T) {
		requireTool(t, "vim")
		ws := t.TempDir()
		tm := startTerm(t, ws, 24, 80, "vim", "-u", "NONE", "-N", "-n", "notes.txt")
		tm.waitFor(0, "notes.txt")
		time.Sleep(300 * time.Millisecond)
		tm.send("ihello from vim\x1b")
		time.Sleep(100 * time.Millisecond)
		tm.send(":wq\r")
		if code := tm.exit(); code != 0 {
			t.Fatalf("vim exit %d; output:\n%q", code, tm.output())
		}
		b, err := os.ReadFile(filepath.Join(ws, "notes.txt"))
		if err != nil || string(b) != "hello from vim\n" {
			t.Fatalf("vim's file: %q %v", b, err)
		}
	})

	t.Run("less", func(t *testing.T) {
		requireTool(t, "less")
		ws := t.TempDir()
		var text strings.Builder
		for i := 1; i <= 200; i++ {
			text.WriteString("line " + strings.Repeat("x", i%7) + " n" + strconv.Itoa(i) + "\n")
		}
		if err := os.WriteFile(filepath.Join(ws, "long.txt"), []byte(text.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		tm := startTerm(t, ws, 24, 80, "less", "long.txt")
		at := tm.waitFor(0, " n23")
		if strings.Contains(tm.output(), " n60") {
			t.Fatalf("less dumped the file instead of paging:\n%q", tm.output())
		}
		tm.send(" ")
		tm.waitFor(at, " n40")
		tm.send("q")
		if code := tm.exit(); code != 0 {
			t.Fatalf("less exit %d; output:\n%q", code, tm.output())
		}
	})

	t.Run("top", func(t *testing.T) {
		requireTool(t, "top")
		tm := startTerm(t, t.TempDir(), 24, 80, "top", "-b", "-n", "1")
		tm.waitFor(0, "PID")
		if code := tm.exit(); code != 0 || strings.Contains(tm.output(), "failed tty get") {
			t.Fatalf("top exit %d; output:\n%q", code, tm.output())
		}
		tm = startTerm(t, t.TempDir(), 24, 80, "top", "-n", "1")
		tm.waitFor(0, "PID")
		if code := tm.exit(); code != 0 || strings.Contains(tm.output(), "failed tty get") {
			t.Fatalf("top exit %d; output:\n%q", code, tm.output())
		}
	})

	t.Run("restored-after-kill", func(t *testing.T) {
		// The serving program killed while the command has the terminal:
		// the user's terminal is still put back as it was.
		tm := startTerm(t, t.TempDir(), 24, 80, "sleep", "60")
		before := termMode(t, tm.pty)
		deadline := time.Now().Add(20 * time.Second)
		for termMode(t, tm.pty).Lflag&unix.ICANON != 0 {
			if time.Now().After(deadline) {
				t.Fatal("the terminal never went raw")
			}
			time.Sleep(10 * time.Millisecond)
		}
		serving := proctree.ServingPid(tm.cmd.Process.Pid)
		if serving == tm.cmd.Process.Pid {
			t.Fatal("no serving program under the relay")
		}
		unix.Kill(serving, unix.SIGKILL)
		tm.exit()
		if after := termMode(t, tm.pty); after != before {
			t.Fatalf("the terminal stayed raw after the program was killed:\nbefore %+v\nafter  %+v", before, after)
		}
	})

	t.Run("resize", func(t *testing.T) {
		requireTool(t, "tput")
		tm := startTerm(t, t.TempDir(), 30, 101, "bash", "--norc", "--noprofile", "-i")
		at := tm.waitFor(tm.approve(), "PROMPT$ ")
		tm.send("echo size:$(tput lines)x$(tput cols)\r")
		at = tm.waitFor(at, "size:30x101")
		at = tm.waitFor(at, "PROMPT$ ")
		if err := pty.Setsize(tm.pty, &pty.Winsize{Rows: 40, Cols: 123}); err != nil {
			t.Fatal(err)
		}
		// The wrapper gets SIGWINCH from the terminal and passes the
		// size on; wait for the command to see it.
		deadline := time.Now().Add(20 * time.Second)
		for {
			tm.send("echo size:$(tput lines)x$(tput cols)\r")
			at = tm.waitFor(at, "PROMPT$ ")
			if strings.Contains(tm.output(), "size:40x123") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the new size never reached the command:\n%q", tm.output())
			}
			time.Sleep(100 * time.Millisecond)
		}
		tm.send("exit\r")
		tm.exit()
	})
}

// TestWrapTerminalGitNoteShown: a command cannot hide the wrapper's Git
// note on the person's terminal. It set a value that held a carriage
// return, an erase-line and a conceal sequence (core.pager =
// "less\r\e[2KALL FINE\e[8m") and left the terminal concealed: the note
// was erased and what followed it invisible. The note's values are
// escaped now, and a note on a terminal starts by resetting the text
// attributes.
func TestWrapTerminalGitNoteShown(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	ws := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", ws).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	tm := startTerm(t, ws, 24, 200, "sh", "-c", `git init -q sub && git -C sub config core.pager "$(printf 'less\r\033[2KALL FINE\033[8m')" && printf 'done\033[8m'`)
	if code := tm.exit(); code != 0 {
		t.Fatalf("exit %d: %q", code, tm.output())
	}
	out := tm.output()
	i := strings.Index(out, "unified-exec: Git:")
	if i < 0 {
		t.Fatalf("no Git note: %q", out)
	}
	if !strings.HasSuffix(out[:i], approval.TerminalReset()) {
		t.Errorf("the note does not reset the text attributes the command left concealed: %q", out)
	}
	note, _, _ := strings.Cut(out[i:], "\n")
	note = strings.TrimSuffix(note, "\r") // the terminal's own, before its newline
	if strings.ContainsAny(note, "\x1b\r") || !strings.Contains(note, `less\r\x1b[2KALL FINE\x1b[8m`) {
		t.Errorf("the command's value reaches the terminal unescaped: %q", note)
	}
}

// TestWrapTerminalQuestionNotConcealed: a command that printed a question
// of its own and left the terminal concealed (ESC [8m) before a denial had
// the wrapper's real question — run again WITHOUT the sandbox? — printed
// invisibly under it (or scrolled away in a one-line scroll region): a
// person answering the line they saw approved the run outside the
// sandbox. The question resets the attributes and the scroll region first.
func TestWrapTerminalQuestionNotConcealed(t *testing.T) {
	requireSandbox(t)
	ws := t.TempDir()
	pol := filepath.Join(ws, "policy.toml")
	if err := os.WriteFile(pol, []byte("[approval]\nmode = \"on-failure\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Outside the writable roots, but writable without the sandbox (as
	// root and as an ordinary user): the refusal is the sandbox's.
	outside, err := os.MkdirTemp("/var/tmp", "ue-concealed-")
	if err != nil {
		t.Skipf("no /var/tmp to write outside the writable roots: %v", err)
	}
	defer os.RemoveAll(outside)
	target := outside + "/made"
	tm := startTermFlags(t, ws, []string{"--policy", pol}, 24, 200, "sh", "-c", `printf 'All tests passed. Clean up? [y]es, [n]o? \033[8m\033[?25l\033[1;1r\033(0'; touch `+target)
	at := tm.waitFor(0, "\x1b[8m")
	end := tm.waitFor(at, "WITHOUT")
	question := tm.output()[at:end]
	if !strings.Contains(question, "WITHOUT") {
		t.Fatalf("no question about running without the sandbox: %q", question)
	}
	if i := strings.Index(question, approval.TerminalReset()); i < 0 || i > strings.Index(question, "WITHOUT") {
		t.Errorf("the question is printed under the command's conceal sequence: %q", question)
	}
	tm.send("n\r")
	if code := tm.exit(); code == 0 {
		t.Errorf("the denied write succeeded: %q", tm.output())
	}
	if _, err := os.Stat(target); err == nil {
		t.Error("the command ran outside the sandbox after the answer no")
	}
}
