package orchestrator

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/approval"
	"github.com/unified-exec/unified-exec/policy"
	"github.com/unified-exec/unified-exec/sandbox"
	"golang.org/x/sys/unix"
)

// warmUp runs sandboxed commands until one ran on a warmed thread (the
// threads prepared before the orchestrator knew its commands are
// sandboxed are cold), so the next comes to a warmed one too.
func warmUp(t *testing.T, f *fixture) {
	t.Helper()
	used, _ := sandbox.WarmedThreads()
	for i := 0; i < 4; i++ {
		if r, err := f.exec(t, "true", false, ""); err != nil || *r.ExitCode != 0 {
			t.Fatalf("true: %v %+v", err, r)
		}
		if now, _ := sandbox.WarmedThreads(); now > used {
			time.Sleep(50 * time.Millisecond) // the next one is being warmed
			return
		}
	}
	t.Fatal("no sandboxed command ran on a warmed thread")
}

// TestWarmThreadSeesNewMounts: a thread warmed ahead holds a copy of the
// program's mounts as they were then, and one built ahead its sandbox
// made from that copy. A mount made in the program's namespace since (an
// unsandboxed command's, as root) is in the next sandboxed command's
// view all the same: the built threads are found not to fit, the warmed
// one's copy stale, and a fresh one made, as without either.
func TestWarmThreadSeesNewMounts(t *testing.T) {
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	warmUp(t, f)
	buildUp(t, f)
	mnt := filepath.Join(f.ws, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=64k"); err != nil {
		t.Fatalf("a mount in the program's namespace: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(mnt, "marker"), []byte("fresh-mount"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stale := sandbox.WarmedThreads()
	r, err := f.exec(t, "cat mnt/marker", false, "")
	if err != nil || !strings.Contains(r.Output, "fresh-mount") {
		t.Fatalf("the mount made after the thread was warmed is not in the command's view: %v %+v", err, r)
	}
	if _, now := sandbox.WarmedThreads(); now != stale+1 {
		t.Fatalf("the warmed thread was not found stale (%d → %d)", stale, now)
	}
}

// TestWarmThreadUnsandboxed: an approved unsandboxed run that comes to a
// thread warmed for a sandboxed one runs in the program's mount namespace
// and sees its terminals, as a run on a cold thread does (root: the only
// case where an unsandboxed command takes a prepared thread, for its
// cgroup).
func TestWarmThreadUnsandboxed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("an ordinary user's unsandboxed commands take no prepared thread (no cgroup)")
	}
	f := newFixture(t, "on-request", "[sandbox]\nmode = \"workspace-write\"\n", approval.ApproveOnce)
	warmUp(t, f)
	own, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		t.Fatal(err)
	}
	used, _ := sandbox.WarmedThreads()
	r, err := f.exec(t, "readlink /proc/self/ns/mnt; ls /dev/pts | wc -l", true, "needs the host")
	if err != nil || *r.ExitCode != 0 {
		t.Fatalf("unsandboxed run: %v %+v", err, r)
	}
	out := strings.Fields(r.Output)
	if len(out) < 2 || out[0] != own {
		t.Fatalf("the unsandboxed command ran in mount namespace %q, want the program's %s", r.Output, own)
	}
	if now, _ := sandbox.WarmedThreads(); now != used {
		t.Fatalf("the unsandboxed run counted as a sandbox taking over a warmed thread")
	}
}

// TestWarmThreadNoLeaks: warmed threads that are used, and those retired
// unused when the orchestrator closes, leave no descriptor and no
// goroutine behind.
func TestWarmThreadNoLeaks(t *testing.T) {
	requireSandbox(t)
	// Every descriptor but Landlock rulesets, and the rulesets but those
	// of recent plans, which the sandbox keeps for a burst of commands.
	fds := fdsButRulesets
	rulesets := func() int {
		ents, _ := os.ReadDir("/proc/self/fd")
		n := 0
		for _, e := range ents {
			if target, _ := os.Readlink("/proc/self/fd/" + e.Name()); strings.Contains(target, "landlock-ruleset") {
				n++
			}
		}
		return n - sandbox.KeptRulesets()
	}
	// One orchestrator first: what the process keeps for good (inotify,
	// kept rulesets) is then there before the count.
	g := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	warmUp(t, g)
	g.o.Close()
	time.Sleep(100 * time.Millisecond)
	beforeFDs, beforeG, beforeRulesets := fds(), runtime.NumGoroutine(), rulesets()
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	warmUp(t, f)
	for i := 0; i < 3; i++ {
		if r, err := f.exec(t, "true", false, ""); err != nil || *r.ExitCode != 0 {
			t.Fatalf("true: %v %+v", err, r)
		}
	}
	f.o.Close()
	for deadline := time.Now().Add(5 * time.Second); fds() > beforeFDs || runtime.NumGoroutine() > beforeG || rulesets() > beforeRulesets; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("descriptors %d → %d, Landlock rulesets not kept for a plan %d → %d, goroutines %d → %d after the orchestrator closed", beforeFDs, fds(), beforeRulesets, rulesets(), beforeG, runtime.NumGoroutine())
		}
	}
}

// fdsButRulesets counts the program's descriptors but Landlock rulesets.
func fdsButRulesets() int {
	ents, _ := os.ReadDir("/proc/self/fd")
	n := 0
	for _, e := range ents {
		if target, _ := os.Readlink("/proc/self/fd/" + e.Name()); !strings.Contains(target, "landlock-ruleset") {
			n++
		}
	}
	return n
}

// TestNewForkerWarmsFirstCommand: the Forker unified-exec makes before it
// reads its policy (NewForker) warms its first thread, so the wrapper's
// one command runs on a warmed thread; an orchestrator whose commands
// are not sandboxed takes it all the same and runs its command
// unsandboxed (the thread goes back first).
func TestNewForkerWarmsFirstCommand(t *testing.T) {
	requireSandbox(t)
	for _, mode := range []string{"workspace-write", "danger-full-access"} {
		t.Run(mode, func(t *testing.T) {
			pol, err := policy.Parse([]byte("[approval]\nmode = \"never\"\n[sandbox]\nmode = \""+mode+"\"\n"), "test-policy.toml")
			if err != nil {
				t.Fatal(err)
			}
			o, err := New(Config{Policy: pol, Workspace: t.TempDir(), OneCommand: true, Forker: NewForker(true)})
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			used, _ := sandbox.WarmedThreads()
			outFile, err := os.CreateTemp(t.TempDir(), "out")
			if err != nil {
				t.Fatal(err)
			}
			defer outFile.Close()
			code, err := o.Run(context.Background(), RunRequest{Argv: []string{"sh", "-c", "grep ^NoNewPrivs /proc/self/status"}, Stdout: outFile, Stderr: outFile})
			b, _ := os.ReadFile(outFile.Name())
			out := string(b)
			if err != nil || code != 0 {
				t.Fatalf("run: %v %d %q", err, code, out)
			}
			now, _ := sandbox.WarmedThreads()
			sandboxed := strings.Contains(out, "NoNewPrivs:\t1")
			switch {
			case mode == "workspace-write" && (now != used+1 || !sandboxed):
				t.Errorf("the wrapper's command did not run sandboxed on the thread warmed first (warmed threads used %d → %d): %q", used, now, out)
			case mode == "danger-full-access" && (now != used || sandboxed):
				t.Errorf("the unsandboxed command ran on a warmed thread or sandboxed (%d → %d): %q", used, now, out)
			}
		})
	}
}
