package orchestrator

import (
	"context"
	"net"
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
	for i := 0; i < 20; i++ {
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

// onBuilt runs exec until a call is forked from a thread built for its
// plan (a socket another process makes in /tmp changes the plan, and the
// built threads then fit no call: tests run beside other packages), a
// pause before each; it returns that call's response.
func onBuilt(t *testing.T, exec func() (*unifiedexec.Response, error)) *unifiedexec.Response {
	t.Helper()
	for i := 0; i < 10; i++ {
		time.Sleep(150 * time.Millisecond)
		used, _ := sandbox.BuiltThreads()
		r, err := exec()
		if err != nil {
			t.Fatal(err)
		}
		if now, _ := sandbox.BuiltThreads(); now > used {
			return r
		}
	}
	t.Fatal("in 10 calls, none was forked from a thread built for its plan")
	return nil
}

// untilBuiltChecked runs attack, each time with a fixture of its own,
// until a run had a built thread checked against its call (checked; see
// onBuilt for why one may not be). Every run must hold.
func untilBuiltChecked(t *testing.T, attack func(t *testing.T) (checked bool)) {
	t.Helper()
	for i := 0; i < 5 && !t.Failed(); i++ {
		if attack(t) {
			return
		}
	}
	if !t.Failed() {
		t.Fatal("in 5 runs, no built thread was checked against the call: the plan kept changing")
	}
}

// checkedUnfit reports whether a built thread was checked against the
// call made since BuiltThreads gave used and unfit, and fails t if one
// was used: a built thread must not fit after what the test changed.
func checkedUnfit(t *testing.T, used, unfit uint64, r *unifiedexec.Response) bool {
	t.Helper()
	nowUsed, nowUnfit := sandbox.BuiltThreads()
	if nowUsed > used {
		t.Errorf("a built thread was used after what it was built from changed (%d → %d): %+v", used, nowUsed, r)
	}
	return nowUnfit > unfit
}

// repoFixture is a fixture whose workspace is a git repository.
func repoFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	if out, err := ownedOutput(exec.Command("git", "init", "-q", f.ws)); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	return f
}

// TestBuiltThreadUsed: after a pause, a call with the last call's plan is
// forked from the thread built ahead for it, and is sandboxed there as a
// thread sandboxed at the call is.
func TestBuiltThreadUsed(t *testing.T) {
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	buildUp(t, f)
	outside := outsideMarker(t)
	r := onBuilt(t, func() (*unifiedexec.Response, error) {
		return f.exec(t, "grep ^NoNewPrivs /proc/self/status; echo x > "+outside+"; echo wrote=$?; echo y > ok; echo ws=$?", false, "")
	})
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
	r = onBuilt(t, func() (*unifiedexec.Response, error) {
		return f.o.Exec(context.Background(), Request{ExecRequest: unifiedexec.ExecRequest{Cmd: "tty; ls /dev/pts", TTY: true, Login: noLogin}})
	})
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
	untilBuiltChecked(t, func(t *testing.T) bool {
		f := repoFixture(t)
		buildUp(t, f)
		buildUp(t, f) // built for the plan with the repository's paths made
		hooks := filepath.Join(f.ws, ".git", "hooks")
		if err := os.Rename(hooks, hooks+"-old"); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(hooks, 0o755); err != nil {
			t.Fatal(err)
		}
		used, unfit := sandbox.BuiltThreads()
		r, err := f.exec(t, "echo planted > .git/hooks/pre-commit; echo rc=$?", false, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(hooks, "pre-commit")); err == nil {
			t.Fatalf("a command wrote the swapped repository's hooks: %+v", r)
		}
		return checkedUnfit(t, used, unfit, r)
	})
}

// TestBuiltThreadProtectedFileRelinked: a protected file moved aside and
// linked back under its name (red team 33) is the same file, but the
// read-only mount a built thread holds went with the other name — and
// with it removed, is gone: the built thread is found not to fit (the
// file has two names; the thread no longer sees it under a mount), and
// the command cannot replace the repository's configuration, as under a
// sandbox built at the call.
func TestBuiltThreadProtectedFileRelinked(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for _, removeOther := range []bool{false, true} {
		t.Run(map[bool]string{false: "two-names", true: "other-name-removed"}[removeOther], func(t *testing.T) {
			untilBuiltChecked(t, func(t *testing.T) bool {
				f := repoFixture(t)
				buildUp(t, f)
				buildUp(t, f)
				config := filepath.Join(f.ws, ".git", "config")
				if err := os.Rename(config, config+"-old"); err != nil {
					t.Fatal(err)
				}
				if err := os.Link(config+"-old", config); err != nil {
					t.Fatal(err)
				}
				if removeOther {
					if err := os.Remove(config + "-old"); err != nil {
						t.Fatal(err)
					}
				}
				used, unfit := sandbox.BuiltThreads()
				r, err := f.exec(t, "rm -f .git/config; echo '[core]' > .git/config; echo rc=$?", false, "")
				if err != nil {
					t.Fatal(err)
				}
				if b, _ := os.ReadFile(config); string(b) == "[core]\n" {
					t.Fatalf("a command replaced the repository's configuration: %+v", r)
				}
				return checkedUnfit(t, used, unfit, r)
			})
		})
	}
}

// TestBuiltThreadPinnedFolderSwapped: the folders above a protected path
// are mount points in a sandbox (pinned), so that no command can move
// one away and plant a repository with hooks at the path the user's git
// uses. The workspace's folder swapped for another while the agent
// thinks — the workspace moved into the new one, every protected path
// the same file (red team 34) — must not leave the new folder movable:
// the built thread is found not to fit (the folders it pinned are part
// of what it is checked against).
func TestBuiltThreadPinnedFolderSwapped(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	untilBuiltChecked(t, func(t *testing.T) bool {
		f := repoFixture(t)
		parent := filepath.Dir(f.ws) // holds the workspace and the audit log
		buildUp(t, f)
		buildUp(t, f)
		old := parent + "-old"
		if err := os.Rename(parent, old); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(parent, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, e := range []string{"ws", "audit.jsonl"} {
			if err := os.Rename(filepath.Join(old, e), filepath.Join(parent, e)); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Remove(old); err != nil {
			t.Fatal(err)
		}
		used, unfit := sandbox.BuiltThreads()
		moved := parent + "-moved"
		t.Cleanup(func() { os.RemoveAll(moved) })
		r, err := f.exec(t, "mv "+parent+" "+moved+"; echo mv=$?; mkdir -p "+f.ws+"/.git/hooks && echo evil > "+f.ws+"/.git/hooks/pre-commit; echo plant=$?", false, "")
		if err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(f.ws, ".git", "hooks", "pre-commit")); err == nil && strings.Contains(string(b), "evil") {
			t.Fatalf("a command moved the workspace's folder away and planted a hook at the repository's path: %+v", r)
		}
		return checkedUnfit(t, used, unfit, r)
	})
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

// remakeInPlace removes dir, with what it holds moved aside, and makes it
// again under the same name, what it held moved back: on ext4 the new
// folder usually gets the old one's inode number. Made while a thread is
// built ahead, the new folder has lost the pin the build put on the old.
func remakeInPlace(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	side := dir + "-side"
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(side, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Rename(filepath.Join(dir, e.Name()), filepath.Join(side, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, mode); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Rename(filepath.Join(side, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(side); err != nil {
		t.Fatal(err)
	}
}

// TestBuiltThreadPinnedFolderRemade (red team 35): a folder the sandbox
// pins, removed and made again in place after a thread was built (same
// name, often the same inode number), has no pin in that thread's
// namespace. A command there must not be able to move it away and plant
// what the plan protects: a protected file below it, a hook at the
// repository's path, the audit log beside the workspace.
func TestBuiltThreadPinnedFolderRemade(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	t.Run("protected-file", func(t *testing.T) {
		untilBuiltChecked(t, func(t *testing.T) bool {
			f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\nprotected = [\"a/b/secret.txt\"]\n")
			b := filepath.Join(f.ws, "a", "b")
			secret := filepath.Join(b, "secret.txt")
			if err := os.MkdirAll(b, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(secret, []byte("orig\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			buildUp(t, f)
			buildUp(t, f)
			remakeInPlace(t, b, 0o755)
			used, unfit := sandbox.BuiltThreads()
			r, err := f.exec(t, "mv a/b a/b2; echo mv=$?; mkdir a/b; echo evil > a/b/secret.txt; echo w=$?", false, "")
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(secret); strings.Contains(string(got), "evil") {
				t.Fatalf("a command moved the pinned folder away and wrote the protected path: %+v", r)
			}
			return checkedUnfit(t, used, unfit, r)
		})
	})
	t.Run("workspace-parent", func(t *testing.T) {
		untilBuiltChecked(t, func(t *testing.T) bool {
			f := repoFixture(t)
			parent := filepath.Dir(f.ws) // holds the workspace and the audit log
			buildUp(t, f)
			buildUp(t, f)
			remakeInPlace(t, parent, 0o755)
			used, unfit := sandbox.BuiltThreads()
			moved := parent + "-moved"
			t.Cleanup(func() { os.RemoveAll(moved) })
			r, err := f.exec(t, "mv "+parent+" "+moved+"; echo mv=$?; mkdir -p "+f.ws+"/.git/hooks && echo evil > "+f.ws+"/.git/hooks/pre-commit; echo plant=$?; echo forged > "+f.audit+"; echo audit=$?", false, "")
			if err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(filepath.Join(f.ws, ".git", "hooks", "pre-commit")); err == nil && strings.Contains(string(b), "evil") {
				t.Fatalf("a command moved the workspace's folder away and planted a hook at the repository's path: %+v", r)
			}
			if b, _ := os.ReadFile(f.audit); strings.HasPrefix(string(b), "forged") { // (the log itself records the command's text)
				t.Fatalf("a command moved the workspace's folder away and forged the audit log: %+v", r)
			}
			return checkedUnfit(t, used, unfit, r)
		})
	})
	t.Run("socket-folder", func(t *testing.T) {
		untilBuiltChecked(t, func(t *testing.T) bool {
			dir, err := os.MkdirTemp("", "agent-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir); os.RemoveAll(dir + "-moved") })
			sock := filepath.Join(dir, "agent.sock")
			l, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			t.Setenv("SSH_AUTH_SOCK", sock)
			f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
			buildUp(t, f)
			buildUp(t, f)
			remakeInPlace(t, dir, 0o700)
			used, unfit := sandbox.BuiltThreads()
			r, err := f.exec(t, "mv "+dir+" "+dir+"-moved; echo mv=$?; mkdir "+dir+" && echo fake > "+sock+"; echo plant=$?", false, "")
			if err != nil {
				t.Fatal(err)
			}
			if st, err := os.Lstat(sock); err == nil && st.Mode().IsRegular() {
				t.Fatalf("a command moved the agent socket's folder away and put a file at $SSH_AUTH_SOCK: %+v", r)
			}
			return checkedUnfit(t, used, unfit, r)
		})
	})
}
