package approval

import (
	"strings"
	"testing"

	"github.com/unified-exec/unified-exec/policy"
)

func testPolicy(t *testing.T, mode string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse([]byte(`
[approval]
mode = "`+mode+`"
[[rule]]
pattern = ["rm"]
decision = "forbid"
reason = "no deleting"
[[rule]]
pattern = ["git", ["push", "fetch"]]
decision = "prompt"
reason = "talks to the remote"
sandbox = "danger-full-access"
[[rule]]
pattern = ["make", "test"]
decision = "allow"
reason = "the test suite"
[[rule]]
pattern = ["curl"]
decision = "prompt"
[[rule]]
pattern = ["npm"]
decision = "allow"
[[rule]]
pattern = ["npm", "publish"]
decision = "forbid"
`), "test.toml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func sh(script string) []string { return []string{"/bin/bash", "-lc", script} }

func TestDecide(t *testing.T) {
	type tc struct {
		name      string
		mode      string
		argv      []string
		escalated bool
		want      Outcome
		by        string
		sandbox   string // "" = the policy's
		reason    string // substring of the reason
	}
	U, F, R, N := policy.ApprovalUntrusted, policy.ApprovalOnFailure, policy.ApprovalOnRequest, policy.ApprovalNever
	cases := []tc{
		// untrusted: the safe list.
		{"ls", U, sh("ls -la"), false, Skip, BySafeList, "", "known-safe"},
		{"cat file", U, sh("cat README.md"), false, Skip, BySafeList, "", ""},
		{"grep pipeline", U, sh("grep -r foo . | head -5 | wc -l"), false, Skip, BySafeList, "", ""},
		{"and chain safe", U, sh("pwd && ls && echo done"), false, Skip, BySafeList, "", ""},
		{"touch asks", U, sh("touch x"), false, NeedsApproval, ByMode, "", "known-safe list"},
		{"safe then unsafe", U, sh("ls && touch x"), false, NeedsApproval, ByMode, "", ""},
		{"absolute ls", U, sh("/usr/bin/ls /"), false, Skip, BySafeList, "", ""},
		{"argv not shell", U, []string{"ls", "-l"}, false, Skip, BySafeList, "", ""},
		{"argv unsafe", U, []string{"python3", "x.py"}, false, NeedsApproval, ByMode, "", ""},
		{"git status", U, sh("git status --short"), false, Skip, BySafeList, "", ""},
		{"git log", U, sh("git log -n 5 --oneline"), false, Skip, BySafeList, "", ""},
		{"git diff", U, sh("git diff HEAD~1"), false, Skip, BySafeList, "", ""},
		{"git show", U, sh("git show HEAD"), false, Skip, BySafeList, "", ""},
		{"git -c", U, sh("git -c core.pager=evil log"), false, NeedsApproval, ByMode, "", ""},
		{"git diff output", U, sh("git diff --output=/tmp/x"), false, NeedsApproval, ByMode, "", ""},
		{"git diff ext-diff", U, sh("git diff --ext-diff"), false, NeedsApproval, ByMode, "", ""},
		{"git log -c sub", U, sh("git log -c"), false, NeedsApproval, ByMode, "", ""},
		{"git -C status", U, sh("git -C sub status"), false, Skip, BySafeList, "", ""},
		{"git commit", U, sh("git commit -m x"), false, NeedsApproval, ByMode, "", ""},
		{"git branch list", U, sh("git branch -a"), false, Skip, BySafeList, "", ""},
		{"git branch create", U, sh("git branch feature"), false, NeedsApproval, ByMode, "", ""},
		{"git branch delete", U, sh("git branch -D main"), false, NeedsApproval, ByMode, "", ""},
		{"find plain", U, sh("find . -name '*.go'"), false, Skip, BySafeList, "", ""},
		{"find exec", U, sh("find . -exec rm {} ;"), false, Forbidden, ByRule, "", ""},
		{"find execdir", U, sh("find . -execdir touch x \\;"), false, NeedsApproval, ByMode, "", ""},
		{"find delete", U, sh("find . -delete"), false, NeedsApproval, ByMode, "", ""},
		{"find fprint", U, sh("find . -fprint out"), false, NeedsApproval, ByMode, "", ""},
		{"rg plain", U, sh("rg -n foo src"), false, Skip, BySafeList, "", ""},
		{"rg pre", U, sh("rg --pre ./evil foo"), false, NeedsApproval, ByMode, "", ""},
		{"rg -z", U, sh("rg -z foo"), false, NeedsApproval, ByMode, "", ""},
		{"sed print", U, sh("sed -n 10p file"), false, Skip, BySafeList, "", ""},
		{"sed range", U, sh("sed -n 1,20p file"), false, Skip, BySafeList, "", ""},
		{"sed in place", U, sh("sed -i s/a/b/ file"), false, NeedsApproval, ByMode, "", ""},
		{"sed script", U, sh("sed -n '1e touch x' file"), false, NeedsApproval, ByMode, "", ""},
		{"sort output", U, sh("sort -o out in"), false, NeedsApproval, ByMode, "", ""},
		{"sort plain", U, sh("sort in"), false, Skip, BySafeList, "", ""},
		// Not judgeable statically.
		{"cmd subst", U, sh("echo $(touch x)"), false, NeedsApproval, ByMode, "", "substitution"},
		{"backticks", U, sh("ls `whoami`"), false, NeedsApproval, ByMode, "", "substitution"},
		{"proc subst", U, sh("cat <(ls)"), false, NeedsApproval, ByMode, "", "process substitution"},
		{"eval", U, sh("eval ls"), false, NeedsApproval, ByMode, "", "eval"},
		{"source", U, sh("source ./env.sh"), false, NeedsApproval, ByMode, "", ""},
		{"var in command position", U, sh("$CMD -la"), false, NeedsApproval, ByMode, "", "command position"},
		{"redirect to file", U, sh("echo hi > out.txt"), false, NeedsApproval, ByMode, "", "redirection"},
		{"append to file", U, sh("ls >> log"), false, NeedsApproval, ByMode, "", "redirection"},
		{"redirect devnull ok", U, sh("ls 2>/dev/null"), false, Skip, BySafeList, "", ""},
		{"dup ok", U, sh("ls 2>&1 | head"), false, Skip, BySafeList, "", ""},
		{"heredoc to shell", U, sh("bash <<EOF\ntouch x\nEOF"), false, NeedsApproval, ByMode, "", "here-document"},
		{"heredoc to cat ok", U, sh("cat <<EOF\nhello\nEOF"), false, Skip, BySafeList, "", ""},
		{"herestring python", U, sh("python3 <<< 'print(1)'"), false, NeedsApproval, ByMode, "", ""},
		{"parse error", U, sh("ls &&& ("), false, NeedsApproval, ByMode, "", "does not parse"},
		{"function", U, sh("f() { ls; }; f"), false, NeedsApproval, ByMode, "", "function"},
		{"param arg", U, sh("cat $FILE"), false, NeedsApproval, ByMode, "", "computed"},
		{"subshell safe", U, sh("(cd src && ls)"), false, Skip, BySafeList, "", ""},
		{"if safe", U, sh("if true; then ls; fi"), false, Skip, BySafeList, "", ""},
		// Rules.
		{"forbid rm in chain", U, sh("echo hi && rm -f keep"), false, Forbidden, ByRule, "", "no deleting"},
		{"forbid rm under on-request", R, sh("echo hi; rm -rf build"), false, Forbidden, ByRule, "", "no deleting"},
		{"forbid absolute rm", F, sh("/bin/rm x"), false, Forbidden, ByRule, "", ""},
		{"forbid via xargs", R, sh("ls | xargs rm"), false, Forbidden, ByRule, "", ""},
		{"forbid via env", R, sh("env FOO=1 rm x"), false, Forbidden, ByRule, "", ""},
		{"forbid via timeout", R, sh("timeout 5 rm x"), false, Forbidden, ByRule, "", ""},
		{"forbid nested bash", R, sh(`bash -c "ls; rm -rf x"`), false, Forbidden, ByRule, "", ""},
		{"forbid in subst", R, sh("echo $(rm x)"), false, Forbidden, ByRule, "", ""},
		{"forbid in loop", R, sh("for f in a b; do rm $f; done"), false, Forbidden, ByRule, "", ""},
		{"forbid never asked", N, sh("rm x"), false, Forbidden, ByRule, "", "no deleting"},
		{"prompt git push", R, sh("git push origin main"), false, NeedsApproval, ByRule, policy.ModeDangerFullAccess, "talks to the remote"},
		{"prompt alternative", F, sh("git fetch"), false, NeedsApproval, ByRule, policy.ModeDangerFullAccess, ""},
		{"prompt under never", N, sh("git push"), false, Forbidden, "", "", "approval mode is never"},
		{"prompt beats allow", R, sh("make test && curl x"), false, NeedsApproval, ByRule, "", ""},
		{"forbid beats allow", R, sh("npm publish"), false, Forbidden, ByRule, "", ""},
		{"allow rule untrusted", U, sh("make test"), false, Skip, ByRule, "", "the test suite"},
		{"allow plus safe", U, sh("make test && ls"), false, Skip, ByRule, "", ""},
		{"allow prefix only", U, sh("make install"), false, NeedsApproval, ByMode, "", ""},
		{"allow npm", U, sh("npm install"), false, Skip, ByRule, "", ""},
		{"sudo forbidden by default? no rule here", R, sh("sudo ls"), false, Skip, ByMode, "", ""},
		// Modes.
		{"on-request runs", R, sh("touch x"), false, Skip, ByMode, "", "on-request"},
		{"on-failure runs", F, sh("make build"), false, Skip, ByMode, "", ""},
		{"never runs sandboxed", N, sh("touch x"), false, Skip, ByMode, "", ""},
		{"escalation asks", R, sh("touch /etc/x"), true, NeedsApproval, ByMode, policy.ModeDangerFullAccess, "without the sandbox"},
		{"escalation never", N, sh("touch /etc/x"), true, Forbidden, ByMode, policy.ModeDangerFullAccess, "approval mode is never"},
		{"escalation untrusted safe", U, sh("ls"), true, NeedsApproval, ByMode, policy.ModeDangerFullAccess, ""},
		{"escalation forbidden rule", R, sh("rm x"), true, Forbidden, ByRule, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Decide(Request{Argv: c.argv, Cwd: "/w", Escalated: c.escalated, Justification: "needs /etc"}, testPolicy(t, c.mode))
			if d.Outcome != c.want {
				t.Fatalf("outcome %v, want %v (reason %q, parsed %+v)", d.Outcome, c.want, d.Reason, d.Parsed)
			}
			if c.by != "" && d.By != c.by {
				t.Errorf("by %q, want %q (%s)", d.By, c.by, d.Reason)
			}
			sb := c.sandbox
			if sb == "" {
				sb = policy.ModeWorkspaceWrite
			}
			if d.Outcome != Forbidden && d.Sandbox != sb {
				t.Errorf("sandbox %q, want %q", d.Sandbox, sb)
			}
			if !strings.Contains(d.Reason, c.reason) {
				t.Errorf("reason %q lacks %q", d.Reason, c.reason)
			}
		})
	}
	if len(cases) < 60 {
		t.Fatalf("only %d cases", len(cases))
	}
}

// TestSubstitutionNeverSafe: whatever the substitution holds, a line with
// one is not known-safe.
func TestSubstitutionNeverSafe(t *testing.T) {
	for _, s := range []string{"ls $(pwd)", "echo `ls`", "cat <(ls)", "ls ${X:-$(ls)}", "echo \"$(ls)\""} {
		d := Decide(Request{Argv: sh(s)}, testPolicy(t, policy.ApprovalUntrusted))
		if d.Outcome == Skip {
			t.Errorf("%q rated safe", s)
		}
	}
}

func TestCache(t *testing.T) {
	var c Cache
	req := Request{Argv: sh("touch x"), Cwd: "/w"}
	if c.Approved(req) {
		t.Fatal("empty cache approves")
	}
	c.ApproveForSession(req)
	if !c.Approved(req) {
		t.Fatal("not remembered")
	}
	for _, other := range []Request{
		{Argv: sh("touch y"), Cwd: "/w"},
		{Argv: sh("touch x"), Cwd: "/v"},
		{Argv: sh("touch x"), Cwd: "/w", TTY: true},
		{Argv: sh("touch x"), Cwd: "/w", Escalated: true},
		{Argv: sh("touch  x"), Cwd: "/w"},
	} {
		if c.Approved(other) {
			t.Errorf("%+v approved by a different request", other)
		}
	}
}

func TestCanonical(t *testing.T) {
	if got := Canonical([]string{"bash", "-lc", "echo 'hi' && ls"}); got != `bash -lc 'echo '\''hi'\'' && ls'` {
		t.Fatal(got)
	}
}

func TestRefusalMessage(t *testing.T) {
	p := testPolicy(t, policy.ApprovalOnRequest)
	d := Decide(Request{Argv: sh("git push")}, p)
	msg := RefusalMessage(Question{Kind: KindApprove, Request: Request{Argv: sh("git push")}, Reason: d.Reason, Rule: d.Rule}, "test.toml")
	if !strings.Contains(msg, "git push") || !strings.Contains(msg, "line") || !strings.Contains(msg, "test.toml") {
		t.Fatal(msg)
	}
}
