package orchestrator

import (
	"strings"
	"testing"
	"time"
)

// TestRedTeam8KeptMountsCost: a command's repository whose configuration
// includes 4100 files that exist fills the kept slots with paths that
// each later command mounts; the repository then is hidden past the
// search's bound (1100 folders made before it, breadth first), so the
// survey no longer mounts them, but Keep does, for every later command.
// Counts the mounts of its includes a later command carries (the times
// of an exec of true are logged).
func TestRedTeam8KeptMountsCost(t *testing.T) {
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	timeTrue := func() time.Duration {
		start := time.Now()
		for range 5 {
			f.exec(t, "true", false, "")
		}
		return time.Since(start) / 5
	}
	before := timeTrue()
	rt8Run(t, f, "mkdir -p z/q/r/s/fill/inc && cd z/q/r/s/fill && git init -q && for i in $(seq 4100); do : > inc/$i; done && seq 4100 | sed 's#.*#[include]\\n\\tpath = ../inc/&#' >> .git/config")
	rt8Run(t, f, "true")
	t.Logf("kept: %d", len(f.o.kept.list()))
	during := timeTrue()
	// Hide it past the bound: 1100 folders the breadth-first search reads first.
	rt8Run(t, f, `for i in $(seq 20); do mkdir -p $(seq -f "a/$i/%g" 60); done; echo done`)
	after := timeTrue()
	r := rt8Run(t, f, "grep -c ' /.*/z/q/r/s/fill/inc/' /proc/self/mountinfo")
	t.Logf("exec true: %v before, %v with the repository surveyed, %v with it hidden past the bound; mounts of its includes in a command: %q", before, during, after, r.Output)
	// Counted, not timed (the machine's load is no test's to judge).
	if n := strings.TrimSpace(r.Output); n != "0" {
		t.Errorf("every later command carries %s mounts of the hidden repository's includes, which the survey no longer makes", n)
	}
}
