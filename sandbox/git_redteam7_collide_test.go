package sandbox

import (
	"os"
	"strings"
	"testing"
)

// TestRedTeam7ItemKeyCollides: an entry's item is "FILE: KEY" and both may hold
// ": " (a file's name, a subsection), so two entries of different files
// and keys are one item. A command includes, in a new repository's
// configuration, an absent file "L: s.t" (kept read-only only where it
// exists) and L, a link to a file setting [s "t: core"] fsmonitor = V:
// the note tells "…/L: s.t: core.fsmonitor = V", a setting git knows
// nothing of. The next command makes "L: s.t" with [core] fsmonitor = V and
// removes the link: the item is the same line, the same value, and
// nothing is told; the host's git status runs V.
func TestRedTeam7ItemKeyCollides(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "r")
	r := g.ws + "/r"
	g.write(t, "r/decoy", "[s \"t: core\"]\n\tfsmonitor = sh evil.sh\n", 0o644)
	if err := os.Symlink(r+"/decoy", r+"/L"); err != nil {
		t.Fatal(err)
	}
	g.git(t, "r", "config", "--add", "include.path", r+"/L: s.t")
	g.git(t, "r", "config", "--add", "include.path", r+"/L")
	before := g.watch(t)
	var told string
	for _, l := range before.Since(GitState{}) {
		if strings.Contains(l, "fsmonitor") {
			told = l
		}
	}
	t.Logf("told before: %q", told)
	// The next command: the real core.fsmonitor, the decoy's link gone.
	g.write(t, "r/L: s.t", "[core]\n\tfsmonitor = sh evil.sh\n", 0o644)
	if err := os.Remove(r + "/L"); err != nil {
		t.Fatal(err)
	}
	news := g.watch(t).Since(before)
	if len(news) == 0 {
		t.Errorf("core.fsmonitor appeared in %s/L: s.t, and nothing is told", r)
	}
	t.Logf("told after: %q", news)
}
