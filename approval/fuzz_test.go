package approval

import (
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"

	"github.com/unified-exec/unified-exec/policy"
)

// FuzzDecide: Decide never panics; a script with a substitution is never
// known-safe; a forbidden word at the start of any simple command is
// never allowed to run.
func FuzzDecide(f *testing.F) {
	for _, s := range []string{"ls -la", "echo $(rm x)", "cat <(ls)", "a && b | c", "bash -c 'rm x'", "find . -exec rm {} +", "x=1; $x", "cat <<EOF\nhi\nEOF",
		"git -C . -c a=b push", "env -S 'rm x'", "timeout --signal KILL 5 rm", "cd / && rm -rf *", "eval 'rm x'", "{r,}m x",
		"sh <<'EOF'\nrm x\nEOF", "xargs -I{} rm {}", "git -c 'alias.x=!rm y' x", "d=$(mktemp); rm $d",
		"alias r=rm\nr x", "GIT_CONFIG_PARAMETERS=\"'alias.x=!rm y'\" git x", "echo ${_@P}", "x='a[$(rm y)]'; echo $((x))",
		"tmux new -d 'rm x' \\; split-window", "BASH_ALIASES[r]=rm; r x", "git -c core.pager='rm x' log",
		"declare -n r=$x; read 'a[$(rm y)]'", "pwsh -c 'rm x'", "screen -dmS s rm x"} {
		f.Add(s)
	}
	p, err := policy.Parse([]byte("[approval]\nmode = \"untrusted\"\n[[rule]]\npattern = [\"rm\"]\ndecision = \"forbid\"\n"), "fuzz.toml")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, script string) {
		d := Decide(Request{Argv: []string{"/bin/bash", "-lc", script}}, p)
		if d.Outcome == Skip && d.By == BySafeList && hasSubstitution(script) {
			t.Fatalf("%q with a substitution rated known-safe", script)
		}
		if strings.HasPrefix(script, "rm ") && d.Outcome == Skip {
			t.Fatalf("%q not forbidden: %v (%s)", script, d.Outcome, d.Reason)
		}
	})
}

// hasSubstitution reports whether the shell parser finds a command or
// process substitution in script (comments and quotes excluded).
func hasSubstitution(script string) bool {
	f, err := syntax.NewParser().Parse(strings.NewReader(script), "")
	if err != nil {
		return false
	}
	found := false
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst:
			found = true
		}
		return !found
	})
	return found
}
