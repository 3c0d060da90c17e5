package orchestrator

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// rt9 (red team 9 of the oldest-first survey order).

// rt9Host makes projA, the host's repository, with core.fsmonitor naming a
// script of its work tree.
func rt9Host(t *testing.T, f *fixture) (proj, script, marker string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	proj = filepath.Join(f.ws, "projA")
	rt8Git(t, f.ws, "init", "-q", proj)
	rt8Git(t, proj, "config", "core.fsmonitor", "tools/fsmon.sh")
	script = filepath.Join(proj, "tools", "fsmon.sh")
	os.MkdirAll(filepath.Dir(script), 0o755)
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return proj, script, filepath.Join(filepath.Dir(f.ws), "ran")
}

// rt9Attack: in a fresh orchestrator (the next session) the command
// appends to projA's fsmonitor script; the host's git status in projA
// must not run it untold.
func rt9Attack(t *testing.T, g *fixture, proj, script, marker string) {
	t.Helper()
	r := rt8Run(t, g, fmt.Sprintf("printf '%s' >> projA/tools/fsmon.sh; echo exit=$?", rt8Evil(marker)))
	rt8Run(t, g, "true")
	b, _ := os.ReadFile(script)
	if strings.Contains(string(b), "pwned") {
		t.Errorf("a command rewrote projA's core.fsmonitor script: %q (notes %q)", b, r.Notes)
	}
	if rt8HostStatus(t, g, proj, marker) && !rt8Told(r, "fsmon.sh") {
		t.Errorf("the host's git status in projA ran the planted program, untold")
	}
}

// TestRedTeam9CommondirNoConfig: a gitdir whose own config is absent sorts as
// the oldest (changedAt fails: at = 0), but the survey parses
// <commondir>/config for it, a file the command made, as big as it likes:
// it spends the budget before projA's (older) config is read.
func TestRedTeam9CommondirNoConfig(t *testing.T) {
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	proj, script, marker := rt9Host(t, f)
	rt8Run(t, f, "mkdir -p zz/.git/objects zz/big && echo 'ref: refs/heads/main' > zz/.git/HEAD && echo ../big > zz/.git/commondir && { printf '[x]\\n'; seq 200000 | sed 's/.*/\\ta& = b/'; } > zz/big/config")
	f.o.Close()
	g := rt8Reopen(t, f)
	rt9Attack(t, g, proj, script, marker)
}

// TestRedTeam9HostConfigChangedSince: the order holds only while the host's
// config is older than the command's. Any ordinary host git command that
// writes .git/config (git config, git remote add, git branch -u, git
// checkout -b --track, git submodule init...) rewrites it through a lock
// file and a rename: a new inode, a change time newer than the command's
// repository. The next session then surveys the command's first.
func TestRedTeam9HostConfigChangedSince(t *testing.T) {
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	proj, script, marker := rt9Host(t, f)
	rt8Run(t, f, rt8Spend)
	rt8Git(t, proj, "remote", "add", "origin", "https://example.invalid/projA.git")
	f.o.Close()
	g := rt8Reopen(t, f)
	rt9Attack(t, g, proj, script, marker)
}
