package orchestrator

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRedTeam8SlotsFilledBeforeHostRepo: the 4096 slots are first come, first
// kept. A command's repository whose configuration includes 4100 absent
// files (includes past the survey's 512 are kept, not read; absent ones
// are Protected all the same, and Kept records them) fills every slot in
// one plan. A repository the host adds afterwards (a clone the user makes
// in the workspace while the session runs) is protected by the plans that
// survey it, but never kept, and the budget attack then works on it.
func TestRedTeam8SlotsFilledBeforeHostRepo(t *testing.T) {
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	marker := filepath.Join(filepath.Dir(f.ws), "ran")
	if os.Getenv("RT8_NOFILL") == "" {
		rt8Run(t, f, "git init -q fill && seq 4100 | sed 's#.*#[include]\\n\\tpath = ../absent/&#' >> fill/.git/config")
	}
	rt8Run(t, f, "true")
	t.Logf("kept after the filler: %d paths", len(f.o.kept.list()))
	// The host, during the session: a new repository with a fsmonitor.
	proj := filepath.Join(f.ws, "projB")
	rt8Git(t, f.ws, "init", "-q", proj)
	rt8Git(t, proj, "config", "core.fsmonitor", "tools/fsmon.sh")
	script := filepath.Join(proj, "tools", "fsmon.sh")
	os.MkdirAll(filepath.Dir(script), 0o755)
	os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755)
	if r := rt8Run(t, f, "echo x >> projB/tools/fsmon.sh"); *r.ExitCode == 0 {
		t.Fatalf("projB's script is not read-only to start with")
	}
	rt8Run(t, f, rt8Spend)
	rt8Run(t, f, fmt.Sprintf("printf '%s' >> projB/tools/fsmon.sh; echo exit=$?", rt8Evil(marker)))
	if b, _ := os.ReadFile(script); strings.Contains(string(b), "pwned") {
		t.Errorf("with the kept slots filled by a command's repository, a command rewrote projB's core.fsmonitor script once the budget was spent: %q", b)
	}
	if rt8HostStatus(t, f, proj, marker) {
		t.Errorf("and the host's git status in projB ran it")
	}
}

// TestRedTeam8KeptAfterHostUnsets: kept is for ever. The host's repository
// had core.hooksPath = .githooks (so .githooks was read-only, rightly);
// the user unsets it on the host. Before the change the next command
// could edit .githooks again; now it stays read-only until the
// orchestrator ends.
func TestRedTeam8KeptAfterHostUnsets(t *testing.T) {
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	rt8Git(t, f.ws, "init", "-q")
	rt8Git(t, f.ws, "config", "core.hooksPath", ".githooks")
	os.MkdirAll(filepath.Join(f.ws, ".githooks"), 0o755)
	os.WriteFile(filepath.Join(f.ws, ".githooks", "README"), []byte("x\n"), 0o644)
	if r := rt8Run(t, f, "echo y >> .githooks/README; echo exit=$?"); !strings.Contains(r.Output, "exit=1") {
		t.Fatalf(".githooks is writable while core.hooksPath names it: %q", r.Output)
	}
	rt8Git(t, f.ws, "config", "--unset", "core.hooksPath")
	r := rt8Run(t, f, "echo y >> .githooks/README && mv .githooks docs-hooks; echo exit=$?")
	if !strings.Contains(r.Output, "exit=0") {
		t.Errorf("once the host unset core.hooksPath, .githooks stays read-only for the orchestrator's life: %q", r.Output)
	}
}
