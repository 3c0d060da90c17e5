package sandbox

import (
	"os"
	"strings"
	"testing"
)

// TestRedTeam7ProgramRewrittenInTheMiddle: a program the configuration names,
// past what contentOf hashes of its start (64 MiB; 1 MiB here), rewritten
// in its middle at the same size (past its first 64 MiB, before its last
// 64 KiB), is told the same: the host's git runs the new program, and the
// note after the command that rewrote it says nothing. (A program in
// /dev/shm, which commands write and no mount covers, is what red team 24
// rewrote after it was told.)
func TestRedTeam7ProgramRewrittenInTheMiddle(t *testing.T) {
	old := maxHashed
	maxHashed = 1 << 20
	t.Cleanup(func() { maxHashed = old })
	g := newGitTree(t)
	g.repo(t, "r")
	prog := g.ws + "/r/fsm.sh"
	// A shell script: its head, a middle of no-ops, its tail.
	head := "#!/bin/sh\n# " + strings.Repeat("a", int(maxHashed)) + "\n"
	mid := strings.Repeat(":\n", 1<<20)
	tail := strings.Repeat("#", int(maxTailHashed)) + "\nexit 0\n"
	body := []byte(head + mid + tail)
	if err := os.WriteFile(prog, body, 0o755); err != nil {
		t.Fatal(err)
	}
	g.git(t, "r", "config", "core.fsmonitor", "sh "+prog)
	before := g.watch(t)
	// The command rewrites the middle: same size, same head and tail.
	evil := []byte("touch /tmp/pwned\n")
	copy(body[len(head)+1000:], evil)
	if err := os.WriteFile(prog, body, 0o755); err != nil {
		t.Fatal(err)
	}
	if news := g.watch(t).Since(before); len(news) == 0 {
		t.Errorf("a program git runs was rewritten in its middle, and nothing is told")
	}
}
