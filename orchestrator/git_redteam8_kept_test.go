package orchestrator

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unified-exec/unified-exec/approval"
	"github.com/unified-exec/unified-exec/policy"
	"github.com/unified-exec/unified-exec/unifiedexec"
)

// rt8 (red team 8 of the kept paths): each test spends the survey's
// budget with the workspace's own repository, as
// TestKeptProtectedPastTheBudget does, then tries to have the host's git
// status in projA run a program a command planted.

const rt8Spend = "git init -q . && { printf '[x]\\n'; seq 200000 | sed 's/.*/\\ta& = b/'; } >> .git/config"

func rt8Git(t *testing.T, dir string, args ...string) {
	t.Helper()
	c := exec.Command("git", append([]string{"-C", dir}, args...)...)
	c.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	if out, err := ownedOutput(c); err != nil {
		t.Fatalf("git %v: %v %s", args, err, out)
	}
}

func rt8Run(t *testing.T, f *fixture, cmd string) *unifiedexec.Response {
	t.Helper()
	r, err := f.exec(t, cmd, false, "")
	if err != nil || r.ExitCode == nil {
		t.Fatalf("%s: %v %+v", cmd, err, r)
	}
	t.Logf("$ %.120s\n  exit %d\n  out %.400q\n  notes %.300q", cmd, *r.ExitCode, r.Output, r.Notes)
	return r
}

// rt8HostStatus runs the host's git status in dir and reports whether the
// planted program ran (it appends to marker).
func rt8HostStatus(t *testing.T, f *fixture, dir, marker string) bool {
	t.Helper()
	c := exec.Command("git", "-C", dir, "status", "--short")
	c.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+filepath.Dir(f.ws))
	out, _ := ownedOutput(c)
	t.Logf("host: git status in %s:\n%s", dir, out)
	_, err := os.Stat(marker)
	return err == nil
}

func rt8Evil(marker string) string {
	return fmt.Sprintf("#!/bin/sh\\necho pwned >> %s\\n", marker)
}

// TestRedTeam8IncludeCreatedPastTheBudget: projA's configuration includes a
// file that is not there yet (an optional local override, include.path =
// ../local.gitconfig). Nothing existing to keep, so nothing kept; once the
// budget is spent projA's config is unread and the include unlooked-at, and
// a command writes it with a core.fsmonitor.
func TestRedTeam8IncludeCreatedPastTheBudget(t *testing.T) {
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	proj := filepath.Join(f.ws, "projA")
	rt8Git(t, f.ws, "init", "-q", proj)
	rt8Git(t, proj, "config", "include.path", "../local.gitconfig")
	marker := filepath.Join(filepath.Dir(f.ws), "ran")
	rt8Run(t, f, "true")
	rt8Run(t, f, rt8Spend)
	r := rt8Run(t, f, fmt.Sprintf("printf '%s' > projA/evil.sh && chmod +x projA/evil.sh && printf '[core]\\n\\tfsmonitor = ./evil.sh\\n' > projA/local.gitconfig; echo exit=$?", rt8Evil(marker)))
	rt8Run(t, f, "true")
	if rt8HostStatus(t, f, proj, marker) && !rt8Told(r, "local.gitconfig: core.fsmonitor = ./evil.sh") {
		t.Errorf("the host's git status in projA ran a program planted through projA's absent include, once the budget was spent")
	}
}

// TestRedTeam8LinkedProgramPastTheBudget: projA's core.fsmonitor names
// tools/fsmon.sh, a link to scripts/fsmon.sh (a common layout: a bin/
// of links). The plan keeps the link's target, never the link; Keep
// drops nothing of it, but the link itself is in a plain folder.
func TestRedTeam8LinkedProgramPastTheBudget(t *testing.T) {
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	proj := filepath.Join(f.ws, "projA")
	rt8Git(t, f.ws, "init", "-q", proj)
	rt8Git(t, proj, "config", "core.fsmonitor", "tools/fsmon.sh")
	os.MkdirAll(filepath.Join(proj, "scripts"), 0o755)
	os.MkdirAll(filepath.Join(proj, "tools"), 0o755)
	os.WriteFile(filepath.Join(proj, "scripts", "fsmon.sh"), []byte("#!/bin/sh\n"), 0o755)
	os.Symlink("../scripts/fsmon.sh", filepath.Join(proj, "tools", "fsmon.sh"))
	marker := filepath.Join(filepath.Dir(f.ws), "ran")
	rt8Run(t, f, "true")
	rt8Run(t, f, rt8Spend)
	r := rt8Run(t, f, fmt.Sprintf("printf '%s' > projA/evil.sh && chmod +x projA/evil.sh && ln -sfn ../evil.sh projA/tools/fsmon.sh; echo exit=$?", rt8Evil(marker)))
	rt8Run(t, f, "true")
	if rt8HostStatus(t, f, proj, marker) && !rt8Told(r, "projA/evil.sh, now holds") {
		t.Errorf("the host's git status in projA ran a program through its re-pointed core.fsmonitor link, once the budget was spent")
	}
}

// TestRedTeam8LinkedFolderProgramPastTheBudget: core.fsmonitor = bin/fsmon.sh
// where bin is a link to tools (the program kept is tools/fsmon.sh):
// the command replaces the link bin with a folder of its own.
func TestRedTeam8LinkedFolderProgramPastTheBudget(t *testing.T) {
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	proj := filepath.Join(f.ws, "projA")
	rt8Git(t, f.ws, "init", "-q", proj)
	rt8Git(t, proj, "config", "core.fsmonitor", "bin/fsmon.sh")
	os.MkdirAll(filepath.Join(proj, "tools"), 0o755)
	os.WriteFile(filepath.Join(proj, "tools", "fsmon.sh"), []byte("#!/bin/sh\n"), 0o755)
	os.Symlink("tools", filepath.Join(proj, "bin"))
	marker := filepath.Join(filepath.Dir(f.ws), "ran")
	rt8Run(t, f, "true")
	rt8Run(t, f, rt8Spend)
	r := rt8Run(t, f, fmt.Sprintf("rm projA/bin && mkdir projA/bin && printf '%s' > projA/bin/fsmon.sh && chmod +x projA/bin/fsmon.sh; echo exit=$?", rt8Evil(marker)))
	rt8Run(t, f, "true")
	if rt8HostStatus(t, f, proj, marker) && !rt8Told(r, "projA/bin/fsmon.sh, now holds") {
		t.Errorf("the host's git status in projA ran a program planted behind its core.fsmonitor's linked folder, once the budget was spent")
	}
}

// TestRedTeam8KeptForgottenOnRestart: the kept paths live in one
// orchestrator's memory; the repository that spends the budget lives in
// the workspace. The next orchestrator on the same workspace (the next
// agent session) surveys it first, so projA's script is never kept.
func TestRedTeam8KeptForgottenOnRestart(t *testing.T) {
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	proj := filepath.Join(f.ws, "projA")
	rt8Git(t, f.ws, "init", "-q", proj)
	rt8Git(t, proj, "config", "core.fsmonitor", "tools/fsmon.sh")
	script := filepath.Join(proj, "tools", "fsmon.sh")
	os.MkdirAll(filepath.Dir(script), 0o755)
	os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755)
	marker := filepath.Join(filepath.Dir(f.ws), "ran")
	rt8Run(t, f, rt8Spend)
	f.o.Close()
	// The next session: same workspace, same policy, a new orchestrator.
	g := rt8Reopen(t, f)
	rt8Run(t, g, fmt.Sprintf("printf '%s' >> projA/tools/fsmon.sh; echo exit=$?", rt8Evil(marker)))
	if b, _ := os.ReadFile(script); strings.Contains(string(b), "pwned") {
		t.Errorf("the next orchestrator on the workspace let a command rewrite projA's core.fsmonitor script: %q", b)
	}
	if rt8HostStatus(t, g, proj, marker) {
		t.Errorf("and the host's git status in projA ran it")
	}
}

// rt8Reopen is a new orchestrator on f's workspace and audit log, with
// the same policy (the next agent session).
func rt8Reopen(t *testing.T, f *fixture) *fixture {
	t.Helper()
	pol, err := policy.Parse([]byte("[approval]\nmode = \"never\"\n[audit]\npath = \""+f.audit+"\"\n[sandbox]\nmode = \"workspace-write\"\n"), "test-policy.toml")
	if err != nil {
		t.Fatal(err)
	}
	p := &approval.Scripted{}
	o, err := New(Config{Policy: pol, Workspace: f.ws, Prompter: p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	return &fixture{o: o, p: p, ws: f.ws, audit: f.audit}
}

// rt8Told: r's notes say s.
func rt8Told(r *unifiedexec.Response, s string) bool {
	return strings.Contains(strings.Join(r.Notes, "\n"), s)
}
