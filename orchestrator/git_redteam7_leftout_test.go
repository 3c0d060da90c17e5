package orchestrator

import (
	"strings"
	"testing"
)

// TestRedTeam7PagerKindsHideFsmonitor: pager.<name> ranks with what runs a
// program, and each <name> is a kind of its own, so one file of harmless
// pager.<name> = false (a boolean: no program) fills the fifty lines and
// the sixteen kinds named; a core.fsmonitor in a repository sorted after
// is never named, one of "N more of N other kinds or places (N of them
// known to make git run a program)", all the others pager booleans. The
// host's git status runs it.
func TestRedTeam7PagerKindsHideFsmonitor(t *testing.T) {
	notes := hostGitAfter(t, []string{
		`git init -q a && for i in $(seq 100 199); do git -C a config pager.p$i false; done && git init -q z && git -C z config core.fsmonitor $EVIL`,
	}, []string{"-C", "z", "status"})
	var note string
	for _, n := range notes {
		if strings.HasPrefix(n, "Git: this appeared") {
			note = n
		}
	}
	t.Logf("note tail: %s", note[max(0, len(note)-700):])
	if !strings.Contains(note, "core.fsmonitor") {
		t.Errorf("the note never names the core.fsmonitor git status runs")
	}
}
