package orchestrator

import (
	"testing"
)

// rt10 (red team 10 of the config reserve).

// rt10Spend makes za and zb, each of whose .git/config includes 512 small
// files named config (in node_modules/, which the repository search skips,
// so the search's 1024 folders are not spent), and zc, whose config holds
// 200 000 entries: the 1024 includes take the whole reserve, zc the budget.
var rt10Spend = []string{
	`for r in za zb; do git init -q $r; (cd $r/.git && mkdir -p $(seq -f ../node_modules/%g 512) && seq 512 | awk '{printf "[include]\n\tpath = ../node_modules/%d/config\n", $1; printf "[x]\n\ty = 1\n" > ("../node_modules/" $1 "/config")}' >> config); done`,
	"mkdir zc && cd zc && " + rt8Spend,
}

// TestRedTeam10ReserveSpentByIncludes: the reserve is for "a file named config",
// whoever includes it: a command's two repositories, older than projA's
// config once the host's git remote add rewrote it, include 1024 files
// named config and spend the reserve, a third the budget; in the next
// session projA's config is read from neither, and a command rewrites its
// core.fsmonitor script.
func TestRedTeam10ReserveSpentByIncludes(t *testing.T) {
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	proj, script, marker := rt9Host(t, f)
	for _, c := range rt10Spend {
		rt8Run(t, f, c)
	}
	rt8Git(t, proj, "remote", "add", "origin", "https://example.invalid/projA.git")
	f.o.Close()
	g := rt8Reopen(t, f)
	rt9Attack(t, g, proj, script, marker)
}

// TestRedTeam10SearchBoundHidesHost: the repository search reads 1024 folders
// of the workspace; a command makes 2000 empty ones whose names sort
// before projA, and in the next session projA is not found at all: its
// core.fsmonitor script is not kept, and a command rewrites it. No change
// by the host is needed.
func TestRedTeam10SearchBoundHidesHost(t *testing.T) {
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	proj, script, marker := rt9Host(t, f)
	rt8Run(t, f, "mkdir $(seq -f 'd%04g' 2000)")
	f.o.Close()
	g := rt8Reopen(t, f)
	rt9Attack(t, g, proj, script, marker)
}
