package orchestrator

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/sandbox"
	"github.com/unified-exec/unified-exec/unifiedexec"
)

// buildUp runs sandboxed commands, a pause after each (the way an agent's
// calls come), until one was forked from a thread sandboxed ahead for its
// plan; the next one is then built too.
func buildUp(t *testing.T, f *fixture) {
	t.Helper()
	for i := 0; i < 8; i++ {
		used, _ := sandbox.BuiltThreads()
		if r, err := f.exec(t, "true", false, ""); err != nil || *r.ExitCode != 0 {
			t.Fatalf("true: %v %+v", err, r)
		}
		time.Sleep(150 * time.Millisecond)
		if now, _ := sandbox.BuiltThreads(); now > used {
			return
		}
	}
	t.Fatal("no sandboxed command was forked from a thread built ahead for its plan")
}

// TestBuiltThreadUsed: after a pause, a call with the last call's plan is
// forked from the thread built ahead for it, and is sandboxed there as a
// thread sandboxed at the call is.
func TestBuiltThreadUsed(t *testing.T) {
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	buildUp(t, f)
	used, _ := sandbox.BuiltThreads()
	outside := outsideMarker(t)
	r, err := f.exec(t, "grep ^NoNewPrivs /proc/self/status; echo x > "+outside+"; echo wrote=$?; echo y > ok; echo ws=$?", false, "")
	if err != nil {
		t.Fatal(err)
	}
	if now, _ := sandbox.BuiltThreads(); now != used+1 {
		t.Fatalf("the call was not forked from the thread built for it (%d → %d): %+v", used, now, r)
	}
	for _, want := range []string{"NoNewPrivs:\t1", "wrote=1", "ws=0"} {
		if !strings.Contains(r.Output, want) {
			t.Errorf("the command on the built thread: %q lacks %q", r.Output, want)
		}
	}
	if _, err := os.Stat(outside); err == nil {
		t.Errorf("a command on a built thread wrote %s, outside the writable roots", outside)
	}
	// A session with a terminal: opened in the built thread's own
	// terminal instance, where it is the only one.
	time.Sleep(150 * time.Millisecond)
	used, _ = sandbox.BuiltThreads()
	r, err = f.o.Exec(context.Background(), Request{ExecRequest: unifiedexec.ExecRequest{Cmd: "tty; ls /dev/pts", TTY: true, Login: noLogin}})
	if err != nil {
		t.Fatal(err)
	}
	if now, _ := sandbox.BuiltThreads(); now != used+1 {
		t.Fatalf("the terminal session was not forked from a built thread (%d → %d): %+v", used, now, r)
	}
	if fields := strings.Fields(r.Output); len(fields) != 3 || fields[0] != "/dev/pts/0" || fields[1] != "0" || fields[2] != "ptmx" {
		t.Errorf("the terminal session on a built thread: %q, want its own instance (/dev/pts/0; 0 ptmx)", r.Output)
	}
}

// TestBuiltThreadRepoSwapped: a thread sandboxed ahead holds the
// repository's hooks folder read-only by the folder it was then (a mount
// follows the folder it is on). The hooks folder moved aside and another
// made in its place (same paths, so the same plan) while the agent
// thinks — what a session left running could do where its own view did
// not protect the repository, or the user — must not leave the new one
// writable: the built thread is found not to fit and the command is
// sandboxed afresh.
func TestBuiltThreadRepoSwapped(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	if out, err := exec.Command("git", "init", "-q", f.ws).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	buildUp(t, f)
	buildUp(t, f) // built for the plan with the repository's paths made
	hooks := filepath.Join(f.ws, ".git", "hooks")
	if err := os.Rename(hooks, hooks+"-old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	_, unfit := sandbox.BuiltThreads()
	r, err := f.exec(t, "echo planted > .git/hooks/pre-commit; echo rc=$?", false, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(hooks, "pre-commit")); err == nil {
		t.Fatalf("a command wrote the swapped repository's hooks: %+v", r)
	}
	if _, now := sandbox.BuiltThreads(); now <= unfit {
		t.Errorf("no built thread was found unfit (%d → %d): %+v", unfit, now, r)
	}
}

// TestBuiltThreadProtectedFileRelinked: a protected file moved aside and
// linked back under its name (red team 33) is the same file, but the
// read-only mount a built thread holds went with the other name: the
// built thread is found not to fit (the file has two names now), and
// the command cannot replace the repository's configuration.
func TestBuiltThreadProtectedFileRelinked(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	if out, err := exec.Command("git", "init", "-q", f.ws).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	buildUp(t, f)
	buildUp(t, f)
	config := filepath.Join(f.ws, ".git", "config")
	if err := os.Rename(config, config+"-old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(config+"-old", config); err != nil {
		t.Fatal(err)
	}
	_, unfit := sandbox.BuiltThreads()
	r, err := f.exec(t, "rm -f .git/config; echo '[core]' > .git/config; echo rc=$?", false, "")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(config); strings.HasPrefix(string(b), "[core]\n") && len(b) == len("[core]\n") {
		t.Fatalf("a command replaced the repository's configuration: %+v", r)
	}
	if _, now := sandbox.BuiltThreads(); now <= unfit {
		t.Errorf("no built thread was found unfit (%d → %d): %+v", unfit, now, r)
	}
}

// TestBuiltThreadSecretMovedIn: the plan's Landlock layer grants the
// entries beside an unreadable folder one by one, by the files they are.
// One moved into the unreadable folder after a thread was sandboxed for
// the plan, and a folder of the same name made in its place (same
// names, so the same plan), must not be readable there by the next
// command — on a built thread, nor through a ruleset kept for the plan.
func TestBuiltThreadSecretMovedIn(t *testing.T) {
	home, err := os.MkdirTemp("/var/tmp", "ue-home-")
	if err != nil {
		t.Skip("no /var/tmp to make a home outside the writable roots in")
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	for _, d := range []string{".ssh", "docs"} {
		if err := os.Mkdir(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, "docs", "note"), []byte("moved-secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	r, err := f.exec(t, "cat "+filepath.Join(home, "docs", "note"), false, "")
	if err != nil || !strings.Contains(r.Output, "moved-secret") {
		t.Fatalf("the note beside ~/.ssh is not readable to start with: %v %+v", err, r)
	}
	buildUp(t, f)
	if err := os.Rename(filepath.Join(home, "docs"), filepath.Join(home, ".ssh", "docs")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(home, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err = f.exec(t, "cat "+filepath.Join(home, ".ssh", "docs", "note"), false, "")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(r.Output, "moved-secret") {
		t.Fatalf("a file moved into ~/.ssh after the thread was sandboxed was readable there: %+v", r)
	}
}

// TestBuiltThreadNoLeaks: threads built ahead, used or retired unused
// (a plan that changed, the orchestrator closed), leave no descriptor
// and no goroutine behind.
func TestBuiltThreadNoLeaks(t *testing.T) {
	fds := fdsButRulesets
	g := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	buildUp(t, g)
	g.o.Close()
	time.Sleep(100 * time.Millisecond)
	beforeFDs, beforeG := fds(), runtime.NumGoroutine()
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	buildUp(t, f)
	// A repository made: the next plan is another, the built thread
	// is retired.
	if err := os.MkdirAll(filepath.Join(f.ws, "sub", ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(f.ws, "sub", ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	for i := 0; i < 3; i++ {
		if r, err := f.exec(t, "true", false, ""); err != nil || *r.ExitCode != 0 {
			t.Fatalf("true: %v %+v", err, r)
		}
		time.Sleep(100 * time.Millisecond)
	}
	f.o.Close()
	for deadline := time.Now().Add(5 * time.Second); fds() > beforeFDs || runtime.NumGoroutine() > beforeG; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("descriptors %d → %d, goroutines %d → %d after the orchestrator closed", beforeFDs, fds(), beforeG, runtime.NumGoroutine())
		}
	}
}
