package orchestrator

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/approval"
	"github.com/unified-exec/unified-exec/policy"
	"github.com/unified-exec/unified-exec/unifiedexec"
)

// TestSecretMadeBetweenCalls: a secret store the host makes between two
// sandboxed calls — after the plans had kept their listing of the home
// (see sandbox.dirNames), just after a call, made in place or moved in —
// is unreadable from the next call.
func TestSecretMadeBetweenCalls(t *testing.T) {
	requireSandbox(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	call := sandboxedCalls(t)
	for _, c := range []struct {
		name, path string
		make       func(path string) error
	}{
		{"made in place", ".aws/credentials", func(p string) error {
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				return err
			}
			return os.WriteFile(p, []byte("SECRET-made\n"), 0o600)
		}},
		{"moved in", ".ssh/id_rsa", func(p string) error {
			staged := filepath.Join(home, "staged")
			if err := os.MkdirAll(staged, 0o700); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(staged, "id_rsa"), []byte("SECRET-moved\n"), 0o600); err != nil {
				return err
			}
			return os.Rename(staged, filepath.Dir(p))
		}},
		{"a file of the home", ".netrc", func(p string) error {
			return os.WriteFile(p, []byte("SECRET-netrc\n"), 0o600)
		}},
	} {
		call("true")
		time.Sleep(150 * time.Millisecond) // the home settles: the next plan keeps its listing
		call("true")
		path := filepath.Join(home, c.path)
		if err := c.make(path); err != nil {
			t.Fatal(err)
		}
		if out := call("cat " + path); strings.Contains(out, "SECRET") {
			t.Errorf("%s: %s, made after the last call, was read by the next: %q", c.name, c.path, out)
		}
	}
}

// sandboxedCalls runs commands through a workspace-write orchestrator
// that never asks, and returns their output.
func sandboxedCalls(t *testing.T) func(cmd string) string {
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	return func(cmd string) string {
		t.Helper()
		r, err := f.exec(t, cmd, false, "")
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		return r.Output
	}
}

// TestRepoMadeWhereAFolderWasMoved: a repository a command makes with a
// hook and core.fsmonitor, at the path of a folder an earlier search had
// read and that the command moved away (with its parent) first, is
// reported, and its hook is not writable from the next call (red team
// 17: the search kept the moved folder's listing for the path).
func TestRepoMadeWhereAFolderWasMoved(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	requireSandbox(t)
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	run := func(cmd string) (string, []string) {
		t.Helper()
		r, err := f.exec(t, cmd, false, "")
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		return r.Output, r.Notes
	}
	run("mkdir -p decoy/proj")
	run("true")
	_, notes := run(`mv decoy old && mkdir -p decoy/proj && git init -q decoy/proj && printf '#!/bin/sh\necho PWNED\n' > decoy/proj/.git/hooks/pre-commit && git -C decoy/proj config core.fsmonitor ./evil.sh; echo rc=$?`)
	if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, "core.fsmonitor") }) {
		t.Errorf("the repository made at the moved folder's path went unreported: %q", notes)
	}
	if out, _ := run("echo more >> decoy/proj/.git/hooks/pre-commit; echo rc=$?"); strings.Contains(out, "rc=0") {
		t.Errorf("its hook is writable from the next call: %q", out)
	}
}

// TestSessionLeftRunningReadsNoLaterSecret: a secret store the host makes
// while a sandboxed session runs on — in a home holding none of the
// unreadable paths, or in ~/.config holding no other — is unreadable to
// that session too (red team 17: the folder was granted whole, and what
// was made in it later readable until the next call).
func TestSessionLeftRunningReadsNoLaterSecret(t *testing.T) {
	requireSandbox(t)
	for _, c := range []struct{ secret, link, target string }{
		{".aws/credentials", "", ""},
		{".config/gh/hosts.yml", "", ""},
		// A dotfiles manager's link, dangling until the secret is made
		// (red team 18: the link's folder was granted whole).
		{".netrc", ".netrc", "dotfiles/netrc"},
	} {
		secret := c.secret
		t.Run(secret, func(t *testing.T) {
			root, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			home := filepath.Join(root, "home")
			if err := os.MkdirAll(filepath.Join(home, ".config", "other"), 0o755); err != nil {
				t.Fatal(err)
			}
			if c.link != "" {
				if err := os.MkdirAll(filepath.Join(home, filepath.Dir(c.target)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(c.target, filepath.Join(home, c.link)); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("HOME", home)
			// The home is in /tmp: /tmp is no writable root here (in one,
			// what the command may write it may read).
			f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\nexclude_slash_tmp = true\nexclude_tmpdir_env_var = true\n")
			path := filepath.Join(home, secret)
			r, err := f.o.Exec(context.Background(), Request{ExecRequest: unifiedexec.ExecRequest{
				Cmd:   "cat ~/.config/other/../../.config/other >/dev/null 2>&1; for i in $(seq 50); do [ -e " + path + " ] && break; sleep 0.1; done; cat " + path + "; echo tried",
				Login: noLogin, Yield: 300 * time.Millisecond}})
			if err != nil || r.SessionID == 0 {
				t.Fatalf("no session left running: %v %+v", err, r)
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte("SECRET-later\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			out := r.Output
			for !strings.Contains(out, "tried") {
				w, err := f.o.Write(context.Background(), unifiedexec.WriteRequest{SessionID: r.SessionID, Yield: 2 * time.Second})
				if err != nil {
					t.Fatalf("after %q: %v", out, err)
				}
				out += w.Output
			}
			if strings.Contains(out, "SECRET") {
				t.Errorf("the running session read ~/%s, made after it started: %q", secret, out)
			}
		})
	}
}

// TestRepoMadeBySessionThatEndedAlone: a session left running makes a
// repository whose configuration runs a program after the call's check,
// and ends before any other call: its end tells the host (the exit
// callback's last lines), and the audit log has it (red team 18: nothing
// ever named it). One made while nothing runs on is in the audit log once
// the orchestrator closes.
func TestRepoMadeBySessionThatEndedAlone(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	requireSandbox(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(dir, "audit.jsonl")
	pol, err := policy.Parse([]byte("[approval]\nmode = \"never\"\n[audit]\npath = \""+audit+"\"\n[sandbox]\nmode = \"workspace-write\"\n"), "test-policy.toml")
	if err != nil {
		t.Fatal(err)
	}
	exits := make(chan []string, 1)
	o, err := New(Config{Policy: pol, Workspace: ws, Prompter: &approval.Scripted{}, OnBackgroundExit: func(id, code int, last []string) { exits <- last }})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			o.Close()
		}
	}()
	r, err := o.Exec(context.Background(), Request{ExecRequest: unifiedexec.ExecRequest{
		Cmd: "sleep 1; git init -q sub && git -C sub config core.fsmonitor ./evil.sh; echo made", Login: noLogin, Yield: 300 * time.Millisecond}})
	if err != nil || r.SessionID == 0 {
		t.Fatalf("no session left running: %v %+v", err, r)
	}
	select {
	case last := <-exits:
		if !slices.ContainsFunc(last, func(l string) bool { return strings.Contains(l, "core.fsmonitor") }) {
			t.Errorf("the session's end did not name the repository it made: %q", last)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the session left running never ended")
	}
	// Made outside any session (as a session's child that outlived
	// the checks would): the last look at Close finds it.
	if out, err := ownedOutput(exec.Command("sh", "-c", "cd "+ws+" && git init -q late && git -C late config core.fsmonitor ./evil.sh")); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	o.Close()
	closed = true
	b, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), filepath.Join(ws, "late", ".git", "config")) {
		t.Errorf("the repository made after the last call is not in the audit log after Close:\n%s", b)
	}
}
