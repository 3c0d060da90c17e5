//go:build linux

package unifiedexec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/ptyrun"
)

// batchScheduling is whether TestMain put the process under SCHED_BATCH,
// as unified-exec does.
var batchScheduling bool

func TestMain(m *testing.M) {
	ptyrun.MaybeRunHelper(nil)
	// As `unified-exec` itself does: sessions then start the default
	// way, forked from a (sandboxed) thread in the program's namespace.
	// Not when fuzzing: the fuzzer's workers talk to it over inherited
	// descriptors that the re-run would not pass on.
	if !slices.ContainsFunc(os.Args, func(a string) bool { return strings.HasPrefix(a, "-test.fuzz") }) {
		ptyrun.EnterNamespace()
	}
	// UE_SCHED=other keeps the normal policy, to measure what batch
	// scheduling changes.
	batchScheduling = os.Getenv("UE_SCHED") != "other"
	if err := ptyrun.BatchScheduling(batchScheduling); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func newManager(t *testing.T, cfg Config) *Manager {
	t.Helper()
	if cfg.Workspace == "" {
		cfg.Workspace = t.TempDir()
	}
	m := New(cfg)
	t.Cleanup(m.Close)
	return m
}

// noLogin: tests run `bash -c`, so the machine's login scripts (pyenv's
// rehash lock, say) neither slow them nor break when a test kills a shell.
var noLogin = new(bool)

func exec1(t *testing.T, m *Manager, req ExecRequest) *Response {
	t.Helper()
	if req.Login == nil {
		req.Login = noLogin
	}
	r, err := m.Exec(context.Background(), req)
	if err != nil {
		t.Fatalf("exec %q: %v", req.Cmd, err)
	}
	return r
}

var chunkRe = regexp.MustCompile(`^Chunk ID: [0-9a-f]{6}\nWall time: \d+\.\d{4} seconds\n`)

func TestEchoHi(t *testing.T) {
	m := newManager(t, Config{})
	r := exec1(t, m, ExecRequest{Cmd: "echo hi"})
	if r.ExitCode == nil || *r.ExitCode != 0 || r.SessionID != 0 || r.Output != "hi\n" {
		t.Fatalf("got %+v", r)
	}
	text := r.Text()
	if !chunkRe.MatchString(text) || !strings.HasSuffix(text, "Process exited with code 0\nOriginal token count: 1\nOutput:\nhi\n") {
		t.Fatalf("text:\n%s", text)
	}
	r2 := exec1(t, m, ExecRequest{Cmd: "echo hi"})
	if r2.ChunkID == r.ChunkID {
		t.Fatal("chunk ids repeat")
	}
}

func TestEarlyExitAndYieldClamp(t *testing.T) {
	m := newManager(t, Config{})
	start := time.Now()
	r := exec1(t, m, ExecRequest{Cmd: "sleep 0.05", Yield: 30 * time.Second})
	if el := time.Since(start); el > 5*time.Second || r.ExitCode == nil {
		t.Fatalf("sleep 0.05 took %v (%+v)", el, r)
	}
	r = exec1(t, m, ExecRequest{Cmd: "sleep 0.8; echo ready", Yield: time.Millisecond})
	if r.SessionID < 1000 || r.ExitCode != nil {
		t.Fatalf("want a session, got %+v", r)
	}
	if r.WallTime < MinYield {
		t.Fatalf("window %v shorter than the 250ms clamp", r.WallTime)
	}
	id := r.SessionID
	var out string
	for i := 0; i < 100; i++ {
		r2, err := m.Write(context.Background(), WriteRequest{SessionID: id, Yield: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		out += r2.Output
		if r2.ExitCode != nil {
			if *r2.ExitCode != 0 || !strings.Contains(out, "ready") {
				t.Fatalf("got %q exit %d", out, *r2.ExitCode)
			}
			break
		}
	}
	_, err := m.Write(context.Background(), WriteRequest{SessionID: id, Chars: "x"})
	if !errors.Is(err, ErrSessionExited) || !strings.Contains(err.Error(), "code 0") {
		t.Fatalf("write after exit: %v", err)
	}
	// An empty poll still answers.
	if _, err := m.Write(context.Background(), WriteRequest{SessionID: id}); err != nil {
		t.Fatal(err)
	}
}

func TestExitCodes(t *testing.T) {
	m := newManager(t, Config{})
	if r := exec1(t, m, ExecRequest{Cmd: "exit 17"}); *r.ExitCode != 17 {
		t.Fatalf("exit 17: %d", *r.ExitCode)
	}
	if r := exec1(t, m, ExecRequest{Cmd: "kill -TERM $$"}); *r.ExitCode != 128+15 {
		t.Fatalf("SIGTERM: %d", *r.ExitCode)
	}
}

func TestEnvironment(t *testing.T) {
	m := newManager(t, Config{Env: append(os.Environ(), "NO_COLOR=0", "TERM=vt100")})
	for _, tty := range []bool{false, true} {
		r := exec1(t, m, ExecRequest{Cmd: `[ -t 1 ] && echo term=yes || echo term=no; echo "T=$TERM N=$NO_COLOR P=$PAGER L=$LC_ALL C=[$COLORTERM]"`, TTY: tty})
		want := "term=no\nT=dumb N=1 P=cat L=C.UTF-8 C=[]"
		if tty {
			want = "term=yes\nT=xterm-256color N=1 P=cat L=C.UTF-8 C=[]"
		}
		if strings.TrimSpace(r.Output) != want {
			t.Errorf("tty=%v: got %q want %q", tty, r.Output, want)
		}
	}
}

func TestInteractiveCat(t *testing.T) {
	m := newManager(t, Config{})
	r := exec1(t, m, ExecRequest{Cmd: "cat", TTY: true, Yield: 300 * time.Millisecond})
	id := r.SessionID
	if id == 0 {
		t.Fatalf("no session: %+v", r)
	}
	w, err := m.Write(context.Background(), WriteRequest{SessionID: id, Chars: "hello\n", Yield: time.Second})
	if err != nil || !strings.Contains(w.Output, "hello") {
		t.Fatalf("echo: %v %+v", err, w)
	}
	w, err = m.Write(context.Background(), WriteRequest{SessionID: id, Chars: "\u0004", Yield: 5 * time.Second})
	if err != nil || w.ExitCode == nil || *w.ExitCode != 0 {
		t.Fatalf("^D: %v %+v", err, w)
	}
}

func TestPythonREPL(t *testing.T) {
	m := newManager(t, Config{})
	// Both windows end early at python's prompt; they are long so that a
	// loaded machine's slow start is waited out.
	r := exec1(t, m, ExecRequest{Cmd: "python3 -i -q", TTY: true, Yield: 20 * time.Second})
	if r.SessionID == 0 {
		t.Fatalf("python exited: %+v", r)
	}
	w, err := m.Write(context.Background(), WriteRequest{SessionID: r.SessionID, Chars: "print(40+2)\n", Yield: 20 * time.Second})
	if err != nil || !strings.Contains(w.Output, "42") {
		t.Fatalf("python: %v %q", err, w.Output)
	}
}

func TestTruncationVector(t *testing.T) {
	m := newManager(t, Config{})
	r := exec1(t, m, ExecRequest{Cmd: `for i in $(seq 1 999); do printf 'EXEC-LINE-%04d xxxxxxxxxxxxxxxxxxxx\n' $i; done`, MaxOutputTokens: new(50)})
	if r.OriginalTokenCount != 8991 {
		t.Fatalf("token count %d", r.OriginalTokenCount)
	}
	if !strings.HasPrefix(r.Output, "Total output lines: 999\n\n") || !strings.Contains(r.Output, "tokens truncated…") ||
		!strings.HasSuffix(r.Output, "EXEC-LINE-0999 xxxxxxxxxxxxxxxxxxxx\n") {
		t.Fatalf("output:\n%s", r.Output)
	}
}

func TestHugeOutputKeepsTail(t *testing.T) {
	m := newManager(t, Config{})
	r := exec1(t, m, ExecRequest{Cmd: `head -c 100000000 /dev/zero | tr '\0' 'y' | fold -w 100; echo TAIL-MARK`, Yield: 30 * time.Second})
	if r.ExitCode == nil || !strings.HasSuffix(r.Output, "TAIL-MARK\n") || r.OriginalTokenCount < 25_000_000 {
		t.Fatalf("exit %v tokens %d tail %q", r.ExitCode, r.OriginalTokenCount, r.Output[max(0, len(r.Output)-100):])
	}
}

func TestNoDescendantsSurvive(t *testing.T) {
	for _, noIso := range []bool{false, true} {
		t.Run(fmt.Sprintf("noIsolation=%v", noIso), func(t *testing.T) {
			m := New(Config{Workspace: t.TempDir(), NoIsolation: noIso})
			tag := fmt.Sprintf("77%d.%d", time.Now().UnixNano()%1000, os.Getpid()%1000)
			var ids []int
			for _, script := range []string{"setsid sleep %s & sleep %[1]s", "bash --norc -ic 'sleep %s & sleep %[1]s' </dev/null", "(sleep %s &); sleep %[1]s"} {
				r := exec1(t, m, ExecRequest{Cmd: fmt.Sprintf(script, tag), Yield: 300 * time.Millisecond})
				if r.SessionID == 0 {
					t.Fatalf("%s exited: %+v", script, r)
				}
				ids = append(ids, r.SessionID)
			}
			if _, err := m.Kill(context.Background(), ids[0]); err != nil {
				t.Fatal(err)
			}
			m.Close()
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

func TestPruning(t *testing.T) {
	m := newManager(t, Config{KillGrace: 100 * time.Millisecond})
	var ids []int
	var warned bool
	for i := 0; i < 68; i++ {
		r := exec1(t, m, ExecRequest{Cmd: "sleep 60", Yield: time.Millisecond})
		ids = append(ids, r.SessionID)
		for _, n := range r.Notes {
			if strings.HasPrefix(n, "Warning:") {
				if i+1 < 60 {
					t.Fatalf("warned at %d sessions", i+1)
				}
				warned = true
			}
		}
	}
	if !warned {
		t.Fatal("no warning near the cap")
	}
	list := m.List()
	if len(list) != 64 {
		t.Fatalf("%d sessions live", len(list))
	}
	have := map[int]bool{}
	for _, s := range list {
		have[s.ID] = true
	}
	for _, id := range ids[len(ids)-8:] {
		if !have[id] {
			t.Fatalf("recent session %d pruned", id)
		}
	}
	if have[ids[0]] {
		t.Fatal("oldest session not pruned")
	}
	if _, err := m.Write(context.Background(), WriteRequest{SessionID: ids[0]}); !errors.Is(err, ErrUnknownSession) || !strings.Contains(err.Error(), "list_sessions") {
		t.Fatalf("pruned session: %v", err)
	}
}

func TestKeysAndLog(t *testing.T) {
	m := newManager(t, Config{})
	r := exec1(t, m, ExecRequest{Cmd: "cat -v", TTY: true, Yield: 300 * time.Millisecond})
	w, err := m.Write(context.Background(), WriteRequest{SessionID: r.SessionID, Keys: []string{"Up", "Enter"}, Yield: time.Second})
	if err != nil || !strings.Contains(w.Output, "^[[A") {
		t.Fatalf("Up: %v %q", err, w.Output)
	}
	w, err = m.Write(context.Background(), WriteRequest{SessionID: r.SessionID, Keys: []string{"C-c"}, Yield: 5 * time.Second})
	if err != nil || w.ExitCode == nil || *w.ExitCode != 130 {
		t.Fatalf("C-c: %v %+v", err, w)
	}
	r = exec1(t, m, ExecRequest{Cmd: "seq 1 500; sleep 30", Yield: 500 * time.Millisecond})
	lines, first, total, err := m.Log(r.SessionID, -1, 3)
	for deadline := time.Now().Add(15 * time.Second); err == nil && total < 500 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond) // a loaded machine: seq is still writing
		lines, first, total, err = m.Log(r.SessionID, -1, 3)
	}
	if err != nil || strings.Join(lines, ",") != "498,499,500" || first != 497 || total != 500 {
		t.Fatalf("log: %v %v %d %d", err, lines, first, total)
	}
	lines, _, _, _ = m.Log(r.SessionID, 10, 2)
	if strings.Join(lines, ",") != "11,12" {
		t.Fatalf("offset: %v", lines)
	}
}

func TestCleanOutput(t *testing.T) {
	m := newManager(t, Config{})
	r := exec1(t, m, ExecRequest{Cmd: `printf '\033[31mred\033[0m \033]0;title\007ok\n10%%\r50%%\r100%%\n'`, TTY: true})
	if r.Output != "red ok\n100%\n" {
		t.Fatalf("got %q", r.Output)
	}
	r = exec1(t, m, ExecRequest{Cmd: `printf '\033[6n'; read -s -d R reply; echo "got-reply"`, TTY: true, Yield: 5 * time.Second})
	if r.ExitCode == nil || !strings.Contains(r.Output, "got-reply") {
		t.Fatalf("cursor query: %+v", r)
	}
	r = exec1(t, m, ExecRequest{Cmd: `printf 'a\xff\xfeb\n'`})
	if r.Output != "a\uFFFDb\n" {
		t.Fatalf("invalid utf-8: %q", r.Output)
	}
}

// TestCleanOutputBounded: a cursor movement with a huge count pads to the
// terminal's width and no further (the server used to pad until memory ran
// out), and 8-bit controls are stripped while UTF-8 text is kept.
func TestCleanOutputBounded(t *testing.T) {
	m := newManager(t, Config{})
	r := exec1(t, m, ExecRequest{
		Cmd:  `printf '\033[99999999999999999999Cx\n\033[100000000Cy\n\x9b31mred\xc2\x9b0m \xc2\x9d0;t\xc2\x9c\x9d0;t\x07€ ✛ Ŝ\n'`,
		TTY:  true,
		Cols: 100,
	})
	pad := strings.Repeat(" ", 99)
	if want := pad + "x\n" + pad + "y\nred € ✛ Ŝ\n"; r.Output != want {
		t.Fatalf("tty: got %q, want %q", r.Output, want)
	}
	r = exec1(t, m, ExecRequest{Cmd: `printf '\033[99999999999999999999Cx\n'`})
	if want := strings.Repeat(" ", defaultWidth-1) + "x\n"; r.Output != want {
		t.Fatalf("pipe: got %q, want %q", r.Output, want)
	}
}

func TestErrors(t *testing.T) {
	m := newManager(t, Config{})
	ctx := context.Background()
	if _, err := m.Exec(ctx, ExecRequest{Cmd: "  "}); !errors.Is(err, ErrEmptyCommand) {
		t.Fatalf("empty: %v", err)
	}
	if _, err := m.Exec(ctx, ExecRequest{Cmd: "true", Workdir: "nope"}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("workdir: %v", err)
	}
	if _, err := m.Exec(ctx, ExecRequest{Cmd: "true", Shell: "/bin/nosuchsh"}); err == nil || !strings.Contains(err.Error(), "/bin/nosuchsh") {
		t.Fatalf("shell: %v", err)
	}
	if _, err := m.Write(ctx, WriteRequest{SessionID: 4242}); !errors.Is(err, ErrUnknownSession) || !strings.Contains(err.Error(), "4242") {
		t.Fatalf("unknown: %v", err)
	}
	r := exec1(t, m, ExecRequest{Cmd: "sleep 30", Yield: time.Millisecond})
	if _, err := m.Write(ctx, WriteRequest{SessionID: r.SessionID, Chars: "x"}); !errors.Is(err, ptyrun.ErrNoStdin) || !strings.Contains(err.Error(), "tty=true") {
		t.Fatalf("pipe write: %v", err)
	}
}

func procsWith(s string) []string {
	var found []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), s) {
			found = append(found, e.Name()+":"+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}
