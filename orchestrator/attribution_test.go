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

	"github.com/unified-exec/unified-exec/policy"
	"github.com/unified-exec/unified-exec/ptyrun"
	"github.com/unified-exec/unified-exec/sandbox"
	"github.com/unified-exec/unified-exec/unifiedexec"
)

// noisyProfile makes HOME a folder whose login profile prints what
// pyenv's init prints in the sandbox (to stderr) and a line to stdout,
// and returns it.
func noisyProfile(t *testing.T) string {
	t.Helper()
	home, _ := filepath.EvalSymlinks(t.TempDir())
	rc := "echo 'rc: loading'\n" +
		"echo \"mktemp: failed to create file via template '$HOME/.pyenv/shims/.pyenv-shim.XXXXXX': Permission denied\" >&2\n" +
		"echo 'pyenv: cannot rehash: couldn'\\''t acquire lock' >&2\n" +
		"export FROM_PROFILE=yes\n"
	os.WriteFile(filepath.Join(home, ".bashrc"), []byte(rc), 0o644)
	os.WriteFile(filepath.Join(home, ".bash_profile"), []byte(". ~/.bashrc\n"), 0o644)
	t.Setenv("HOME", home)
	return home
}

// TestAttribution holds each case of the issue to the right answer, on
// both spawn paths, with the default login (the snapshot): a noisy
// profile adds nothing to a command's output and is never blamed; exit
// codes alone (grep -q, exit 3, exit 7) are not denials; a command's own
// EACCES (a script without x; as an ordinary user, a file no one may
// read) is not; a write outside the writable roots the user could make
// is, naming the path; a connection with the network off is, counted.
func TestAttribution(t *testing.T) {
	requireSandbox(t)
	if !sandbox.HostStatus().NetWatch {
		t.Skip("no seccomp user notifications here")
	}
	home := noisyProfile(t)
	outsideDir := outside(t)
	unreadable := filepath.Join(outsideDir, "secret")
	os.WriteFile(unreadable, []byte("x"), 0o000)
	cases := []struct {
		name, cmd string
		// note is what the denial note must say ("" = no note).
		note string
		// root: whether the case holds as root (who may read anything).
		root bool
	}{
		{"noisy profile", "echo hi; exit 3", "", true},
		{"grep -q no match", "grep -q nomatch", "", true},
		{"exit 7", "exit 7", "", true},
		{"script without x", "printf 'echo x\\n' > s; ./s", "", true},
		{"own EACCES", "cat " + unreadable, "", false},
		{"write outside", "touch " + outsideDir + "/new", "writing " + outsideDir + "/new (outside the writable roots): touch: cannot touch '" + outsideDir + "/new': ", true},
		{"sandbox in a path", "mkdir -p sandbox/landlock && echo sandbox/landlock/seccomp: Operation not permitted >&2; exit 1", "", true},
		{"curl", "curl -sS --max-time 5 http://1.1.1.1/", "network access is off: 1 socket call (AF_INET ×1) refused: curl: (7)", true},
		{"python", "python3 -c 'import socket; socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)'", "network access is off: 1 socket call (AF_INET6 ×1) refused: PermissionError: [Errno 1] Operation not permitted", true},
		{"git fetch", "git ls-remote https://1.1.1.1/x.git", "network access is off: ", true},
		{"pip", "python3 -m pip download --no-deps --retries 0 --timeout 5 -d dl --index-url http://1.1.1.1/simple nothing-here", "network access is off: ", true},
	}
	root := os.Getuid() == 0
	// The spawn paths: forked from a sandboxed thread; through the helper,
	// a namespace per session; through the helper without namespaces
	// (a host that refuses them: Landlock carved, seccomp).
	for _, spawn := range []string{"thread", "helper", "plain"} {
		pol, err := policy.Parse([]byte("[approval]\nmode = \"never\"\n[sandbox]\nexclude_slash_tmp = true\n"), "t.toml")
		if err != nil {
			t.Fatal(err)
		}
		ws := filepath.Join(t.TempDir(), "ws")
		os.MkdirAll(ws, 0o755)
		cfg := Config{Policy: pol, Workspace: ws, HelperPerSession: spawn == "helper"}
		if spawn == "plain" {
			cfg.Manager = unifiedexec.New(unifiedexec.Config{Workspace: ws, NoIsolation: true})
			st := sandbox.HostStatus()
			st.Namespaces, st.ThreadSandbox = false, false
			st.NamespaceErr = "none here (test)"
			cfg.Status = &st
			pol.Sandbox.Required = false
		}
		o, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(o.Close)
		for _, c := range cases {
			t.Run(spawn+"/"+c.name, func(t *testing.T) {
				if root && !c.root {
					t.Skip("root reads every file")
				}
				if prog := strings.Fields(c.cmd)[0]; prog == "curl" || prog == "python3" || prog == "git" {
					if _, err := exec.LookPath(prog); err != nil {
						t.Skip(err)
					}
				}
				if strings.Contains(c.cmd, "-m pip") && ptyrun.RunOwned(exec.Command("python3", "-m", "pip", "--version")) != nil {
					t.Skip("no pip here")
				}
				// The longest window: pip starts slowly on a busy machine.
				r, err := o.Exec(context.Background(), Request{ExecRequest: unifiedexec.ExecRequest{Cmd: c.cmd, Yield: unifiedexec.MaxYield}})
				if err != nil {
					t.Fatal(err)
				}
				if r.ExitCode == nil || *r.ExitCode == 0 {
					t.Fatalf("want a failure: %+v", r)
				}
				notes := strings.Join(r.Notes, "\n")
				if strings.Contains(r.Output, "rc: loading") || strings.Contains(r.Output, "pyenv") || strings.Contains(notes, "pyenv") {
					t.Fatalf("the profile's output reached the response: %q %q", r.Output, notes)
				}
				switch {
				case c.note == "" && strings.Contains(notes, "sandbox blocked"):
					t.Fatalf("taken for a denial: %q (output %q)", notes, r.Output)
				case c.note != "" && !strings.Contains(notes, "The sandbox blocked this ("+c.note):
					t.Fatalf("notes %q, want %q (output %q)", notes, c.note, r.Output)
				}
			})
		}
		r, err := o.Exec(context.Background(), Request{ExecRequest: unifiedexec.ExecRequest{Cmd: `echo "$FROM_PROFILE"`}})
		if err != nil || strings.TrimSpace(r.Output) != "yes" {
			t.Fatalf("the profile's environment: %v %q", err, r.Output)
		}
		snaps := o.Manager().Snapshots()
		if len(snaps) != 1 || !strings.Contains(snaps[0].Output, "cannot rehash") || snaps[0].Sandbox != "workspace-write, network off" {
			t.Fatalf("snapshots: %+v", snaps)
		}
		if spawn != "plain" && strings.HasPrefix(snaps[0].File, home) { // (plain: a manager of the test's, its default folder)
			t.Fatalf("the snapshot lies in HOME, under /tmp, which commands may write: %s", snaps[0].File)
		}
	}
}

// TestSnapshotReadOnly: commands cannot change the snapshot they read,
// which later commands (unsandboxed retries too) run.
func TestSnapshotReadOnly(t *testing.T) {
	requireSandbox(t)
	noisyProfile(t)
	f := newFixture(t, "never", "")
	r, err := f.o.Exec(context.Background(), Request{ExecRequest: unifiedexec.ExecRequest{Cmd: `echo "$BASH_ENV"`}})
	if err != nil || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("the first login command: %v %+v", err, r)
	}
	snaps := f.o.Manager().Snapshots()
	if len(snaps) != 1 {
		t.Fatalf("snapshots: %+v", snaps)
	}
	file := snaps[0].File
	r, err = f.o.Exec(context.Background(), Request{ExecRequest: unifiedexec.ExecRequest{Cmd: "echo evil >> " + file + "; mv " + file + " " + file + ".x; rm -f " + file + "; cat " + file + " >/dev/null && echo readable"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Output, "readable") {
		t.Fatalf("the snapshot is not readable in the sandbox: %q", r.Output)
	}
	b, err := os.ReadFile(file)
	if err != nil || strings.Contains(string(b), "evil") {
		t.Fatalf("a command changed the snapshot: %v %q", err, b)
	}
}

// watchGoroutines counts the goroutines of NetWatches.
func watchGoroutines() int {
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	return strings.Count(string(buf[:n]), "sandbox.(*NetWatch)")
}

// TestNetWatchEnds: a run that exited leaves no goroutine of its watch;
// a session still running keeps its watch — a socket call after its
// first window is refused with EPERM, as the filter alone would, not
// ENOSYS — and the watch ends with the session.
func TestNetWatchEnds(t *testing.T) {
	requireSandbox(t)
	if !sandbox.HostStatus().NetWatch {
		t.Skip("no seccomp user notifications here")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip(err)
	}
	for _, helper := range []bool{false, true} {
		pol, _ := policy.Parse([]byte("[approval]\nmode = \"never\"\n"), "t.toml")
		o, err := New(Config{Policy: pol, Workspace: t.TempDir(), HelperPerSession: helper})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		ctx := context.Background()
		r, err := o.Exec(ctx, Request{ExecRequest: unifiedexec.ExecRequest{Cmd: "exit 3", Login: noLogin}})
		if err != nil || r.ExitCode == nil {
			t.Fatal(err, r)
		}
		if n := watchGoroutines(); n != 0 {
			t.Fatalf("helper=%v: %d goroutines of an exited run's watch", helper, n)
		}
		cmd := "sleep 0.6; python3 -c 'import socket; socket.socket()' 2>&1 | tail -1; sleep 600"
		r, err = o.Exec(ctx, Request{ExecRequest: unifiedexec.ExecRequest{Cmd: cmd, Login: noLogin, Yield: 250 * time.Millisecond}})
		if err != nil || r.ExitCode != nil {
			t.Fatal(err, r)
		}
		var out string
		for deadline := time.Now().Add(20 * time.Second); !strings.Contains(out, "Error") && time.Now().Before(deadline); {
			w, err := o.Manager().Write(ctx, unifiedexec.WriteRequest{SessionID: r.SessionID, Yield: 250 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			out += w.Output
		}
		if !strings.Contains(out, "PermissionError: [Errno 1] Operation not permitted") {
			t.Fatalf("helper=%v: a refusal after the first window: %q", helper, out)
		}
		if n := watchGoroutines(); n == 0 {
			t.Fatalf("helper=%v: the running session's watch is gone", helper)
		}
		o.Manager().Kill(ctx, r.SessionID)
		deadline := time.Now().Add(20 * time.Second)
		for watchGoroutines() > 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := watchGoroutines(); n != 0 {
			t.Fatalf("helper=%v: %d goroutines of the watch outlived the session", helper, n)
		}
	}
}

// TestSnapshotDirUnreadable: a snapshot folder under a deny_read path is
// not chosen (commands could not read it).
func TestSnapshotDirUnreadable(t *testing.T) {
	for _, c := range []struct {
		dir  string
		deny []string
		want bool
	}{
		{"/home/u/.cache/unified-exec", []string{"~/.cache"}, true},
		{"/home/u/.cache/unified-exec", []string{"~"}, true},
		{"/home/u/.cache/unified-exec", []string{"~/.ssh", "/home/u/.cache/unified-exec"}, true},
		{"/home/u/.cache/unified-exec", []string{"~/.ssh", "~/.cache2"}, false},
		{"/var/tmp/unified-exec-1000", []string{"~/.cache"}, false},
	} {
		if got := unreadable(c.dir, c.deny, "/home/u"); got != c.want {
			t.Errorf("unreadable(%q, %q) = %v", c.dir, c.deny, got)
		}
	}
}
