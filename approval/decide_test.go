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
		{"source", U, sh("source ./env.sh"), false, NeedsApproval, ByUnjudged, "", "source"},
		{"var in command position", U, sh("$CMD -la"), false, NeedsApproval, ByUnjudged, "", "command name is computed"},
		{"redirect to file", U, sh("echo hi > out.txt"), false, NeedsApproval, ByMode, "", "redirection"},
		{"append to file", U, sh("ls >> log"), false, NeedsApproval, ByMode, "", "redirection"},
		{"redirect devnull ok", U, sh("ls 2>/dev/null"), false, Skip, BySafeList, "", ""},
		{"dup ok", U, sh("ls 2>&1 | head"), false, Skip, BySafeList, "", ""},
		{"heredoc to shell", U, sh("bash <<EOF\ntouch x\nEOF"), false, NeedsApproval, ByMode, "", "here-document"},
		{"heredoc to cat ok", U, sh("cat <<EOF\nhello\nEOF"), false, Skip, BySafeList, "", ""},
		{"herestring python", U, sh("python3 <<< 'print(1)'"), false, NeedsApproval, ByMode, "", ""},
		{"parse error", U, sh("ls &&& ("), false, NeedsApproval, ByMode, "", "does not parse"},
		{"parse error hides rm (on-request)", R, sh("rm -rf /\necho ${x@Q"), false, NeedsApproval, ByMode, "", "rules cannot be checked"},
		{"parse error under never", N, sh("rm -rf /\necho ${x@Q"), false, Forbidden, "", "", "approval mode is never"},
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
		{"escalation with prompt rule", R, sh("git push"), true, NeedsApproval, ByRule, policy.ModeDangerFullAccess, "needs /etc"},
		{"escalation with prompt rule never", N, sh("git push"), true, Forbidden, ByRule, "", "approval mode is never"},
		{"escalation with allow rule asks", U, sh("make test"), true, NeedsApproval, ByMode, policy.ModeDangerFullAccess, ""},
		// Variables and assignments.
		{"PATH assignment prefix", U, sh("PATH=. ls"), false, NeedsApproval, ByMode, "", "PATH"},
		{"PATH assignment statement", U, sh("PATH=.; ls"), false, NeedsApproval, ByMode, "", "PATH"},
		{"export", U, sh("export PATH=. && ls"), false, NeedsApproval, ByMode, "", "export"},
		{"assignment allowed to run sandboxed", R, sh("FOO=1 make build"), false, Skip, ByMode, "", ""},
		{"variable argument", U, sh("echo $HOME"), false, NeedsApproval, ByMode, "", "computed"},
		{"quoted dollar is literal", U, sh("echo '$HOME'"), false, Skip, BySafeList, "", ""},
		{"arithmetic", U, sh("(( x = 1 + 2 ))"), false, NeedsApproval, ByMode, "", "arithmetic"},
		{"glob command", U, sh("/bin/l? -la"), false, NeedsApproval, ByUnjudged, "", "pattern"},
		{"brace command", U, sh("{ls,-la}"), false, NeedsApproval, ByMode, "", "pattern"},
		{"glob argument fine", U, sh("cat *.go"), false, Skip, BySafeList, "", ""},
		{"test bracket is not a glob", U, sh("[ -f x ] && cat x"), false, Skip, BySafeList, "", ""},
		{"ANSI-C quoted name", R, sh("$'rm' -f x"), false, Forbidden, ByRule, "", ""},
		{"ANSI-C escapes", U, sh(`$'\x72m' -f x`), false, Forbidden, ByRule, "", "no deleting"},
		{"backslash in name", R, sh(`r\m x`), false, Forbidden, ByRule, "", ""},
		{"quotes in name", R, sh(`"r"m x`), false, Forbidden, ByRule, "", ""},
		{"bash --norc -c", R, []string{"/bin/bash", "--norc", "-c", "rm x"}, false, Forbidden, ByRule, "", ""},
		{"bash -o pipefail -c", U, []string{"bash", "-o", "pipefail", "-c", "ls | head"}, false, Skip, BySafeList, "", ""},
		{"subst in assignment", R, sh("x=$(rm y)"), false, Forbidden, ByRule, "", ""},
		{"proc subst output", R, sh("ls > >(rm y)"), false, Forbidden, ByRule, "", ""},
		{"comment is not a command", U, sh("echo ok # rm x"), false, Skip, BySafeList, "", ""},
		{"newline separates", R, sh("ls\nrm x"), false, Forbidden, ByRule, "", ""},
		{"background", R, sh("rm x &"), false, Forbidden, ByRule, "", ""},
		{"case body", R, sh("case a in a) rm x;; esac"), false, Forbidden, ByRule, "", ""},
		{"tee writes", U, sh("ls | tee out"), false, NeedsApproval, ByMode, "", "known-safe"},
		// Wrappers and their options.
		{"xargs -n value", R, sh("ls | xargs -n 1 rm"), false, Forbidden, ByRule, "", ""},
		{"xargs -I", R, sh("ls | xargs -I{} rm {}"), false, Forbidden, ByRule, "", ""},
		{"xargs echo rm is not rm", R, sh("ls | xargs echo rm"), false, Skip, ByMode, "", ""},
		{"sudo -u value", R, sh("sudo -u root rm x"), false, Forbidden, ByRule, "", ""},
		{"env -S split", R, sh("env -S 'rm -f x'"), false, Forbidden, ByRule, "", ""},
		{"env -u value", R, sh("env -u HOME rm x"), false, Forbidden, ByRule, "", ""},
		{"timeout -s value", R, sh("timeout -s KILL 5 rm x"), false, Forbidden, ByRule, "", ""},
		{"nice -n value", R, sh("nice -n 5 rm x"), false, Forbidden, ByRule, "", ""},
		{"command rm", R, sh("command rm x"), false, Forbidden, ByRule, "", ""},
		{"exec rm", R, sh("exec rm x"), false, Forbidden, ByRule, "", ""},
		{"flock -c", R, sh("flock /tmp/l -c 'rm x'"), false, Forbidden, ByRule, "", ""},
		{"flock command", R, sh("flock /tmp/l rm x"), false, Forbidden, ByRule, "", ""},
		{"watch joins words", R, sh("watch -n 1 'ls; rm x'"), false, Forbidden, ByRule, "", ""},
		{"su -c", R, sh("su root -c 'rm x'"), false, Forbidden, ByRule, "", ""},
		{"bash -c inside bash -lc", R, []string{"bash", "-lc", `sh -c 'bash -c "rm x"'`}, false, Forbidden, ByRule, "", ""},
		{"bash -l -c", U, []string{"bash", "-l", "-c", "ls"}, false, Skip, BySafeList, "", ""},
		{"sh -c argv", R, []string{"sh", "-c", "git push"}, false, NeedsApproval, ByRule, policy.ModeDangerFullAccess, ""},
		{"zsh -c safe", U, []string{"zsh", "-c", "pwd"}, false, Skip, BySafeList, "", ""},
		{"script piped to shell", U, sh("echo 'touch x' | bash"), false, NeedsApproval, ByUnjudged, "", "cannot be read"},
		{"script file", U, sh("bash ./build.sh"), false, NeedsApproval, ByUnjudged, "", "cannot be read"},
		{"heredoc via env", U, sh("env python3 <<EOF\nprint(1)\nEOF"), false, NeedsApproval, ByMode, "", "here-document"},
		{"loop variable", U, sh("while read l; do echo $l; done <<EOF\na\nEOF"), false, NeedsApproval, ByMode, "", "computed"},
		{"variable in a test", U, sh("[[ $x -eq 1 ]] && ls"), false, NeedsApproval, ByMode, "", "variable"},
		{"empty script", U, sh(""), false, Skip, BySafeList, "", ""},
		// Flag edge cases of the safe list.
		{"sed -n then -e", U, sh("sed -n 1p -e '1e touch x' f"), false, NeedsApproval, ByMode, "", ""},
		{"sed -n several files", U, sh("sed -n 5p a b"), false, Skip, BySafeList, "", ""},
		{"sed without -n", U, sh("sed 1p f"), false, NeedsApproval, ByMode, "", ""},
		{"sort -o in a cluster", U, sh("sort -uo out in"), false, NeedsApproval, ByMode, "", ""},
		{"sort --output=", U, sh("sort --output=out in"), false, NeedsApproval, ByMode, "", ""},
		{"rg -z in a cluster", U, sh("rg -uz foo"), false, NeedsApproval, ByMode, "", ""},
		{"rg --pre=", U, sh("rg --pre=./x foo"), false, NeedsApproval, ByMode, "", ""},
		{"tree -o", U, sh("tree -o out.txt"), false, NeedsApproval, ByMode, "", ""},
		{"tree -L", U, sh("tree -L 2"), false, Skip, BySafeList, "", ""},
		{"printf -v", U, sh("printf -v PATH ."), false, NeedsApproval, ByMode, "", ""},
		{"date -s", U, sh("date -s tomorrow"), false, NeedsApproval, ByMode, "", ""},
		{"git --no-pager log", U, sh("git --no-pager log -1"), false, Skip, BySafeList, "", ""},
		{"git textconv", U, sh("git show --textconv HEAD:x"), false, NeedsApproval, ByMode, "", ""},
		{"git --git-dir", U, sh("git --git-dir=/x status"), false, NeedsApproval, ByMode, "", ""},
		{"git bare", U, sh("git"), false, NeedsApproval, ByMode, "", ""},
		{"absolute git", U, []string{"/usr/local/bin/git", "status"}, false, Skip, BySafeList, "", ""},
		{"find -ok", U, sh("find . -ok rm {} \\;"), false, Forbidden, ByRule, "", ""},
		{"find -fls", U, sh("find . -fls out"), false, NeedsApproval, ByMode, "", ""},
		// Redirections.
		{"read redirect ok", U, sh("cat < in.txt"), false, Skip, BySafeList, "", ""},
		{"devnull ok", U, sh("cat f > /dev/null"), false, Skip, BySafeList, "", ""},
		{"all to file", U, sh("ls &> out"), false, NeedsApproval, ByMode, "", "redirection"},
		{"dup to file", U, sh("ls >&out"), false, NeedsApproval, ByMode, "", ""},
		{"clobber", U, sh("ls >| out"), false, NeedsApproval, ByMode, "", "redirection"},
		{"redirect still runs under on-request", R, sh("echo hi > out.txt"), false, Skip, ByMode, "", ""},
		{"empty argv", U, []string{}, false, Forbidden, ByMode, "", "empty"},
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
	approved := Request{Argv: sh("touch x"), Cwd: "/w", Justification: "first"}
	W, D := policy.ModeWorkspaceWrite, policy.ModeDangerFullAccess
	cases := []struct {
		name    string
		req     Request
		sandbox string
		want    bool
	}{
		{"same request", approved, W, true},
		{"justification is not part of the key", Request{Argv: sh("touch x"), Cwd: "/w", Justification: "other"}, W, true},
		{"other command", Request{Argv: sh("touch y"), Cwd: "/w"}, W, false},
		{"other spacing is another command", Request{Argv: sh("touch  x"), Cwd: "/w"}, W, false},
		{"other shell flags", Request{Argv: []string{"/bin/bash", "-c", "touch x"}, Cwd: "/w"}, W, false},
		{"other shell", Request{Argv: []string{"/bin/sh", "-lc", "touch x"}, Cwd: "/w"}, W, false},
		{"other cwd", Request{Argv: sh("touch x"), Cwd: "/v"}, W, false},
		{"tty", Request{Argv: sh("touch x"), Cwd: "/w", TTY: true}, W, false},
		{"escalated", Request{Argv: sh("touch x"), Cwd: "/w", Escalated: true}, D, false},
		{"without the sandbox", approved, D, false},
		{"another sandbox", approved, policy.ModeReadOnly, false},
		{"argv split differently", Request{Argv: []string{"/bin/bash", "-lc", "touch", "x"}, Cwd: "/w"}, W, false},
	}
	var c Cache
	if c.Approved(Question{Request: approved, Sandbox: W}) {
		t.Fatal("the zero Cache approves")
	}
	c.ApproveForSession(Question{Kind: KindApprove, Request: approved, Sandbox: W})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.Approved(Question{Kind: KindApprove, Request: tc.req, Sandbox: tc.sandbox}); got != tc.want {
				t.Fatalf("Approved = %v, want %v", got, tc.want)
			}
		})
	}
	// An unsandboxed approval covers that exact command only.
	c.ApproveForSession(Question{Kind: KindRetryUnsandboxed, Request: approved, Sandbox: D})
	if !c.Approved(Question{Kind: KindRetryUnsandboxed, Request: approved, Sandbox: D}) {
		t.Fatal("the unsandboxed approval is not remembered")
	}
	if c.Approved(Question{Kind: KindRetryUnsandboxed, Request: Request{Argv: sh("touch y"), Cwd: "/w"}, Sandbox: D}) {
		t.Fatal("the unsandboxed approval covers another command")
	}
}

func TestCanonical(t *testing.T) {
	if got := Canonical([]string{"bash", "-lc", "echo 'hi' && ls"}); got != `bash -lc 'echo '\''hi'\'' && ls'` {
		t.Fatal(got)
	}
}

// TestDefaultPolicy: the rules of the embedded policy.toml do what its
// comments say.
func TestDefaultPolicy(t *testing.T) {
	p := policy.Default()
	cases := []struct {
		name    string
		argv    []string
		want    Outcome
		sandbox string
	}{
		{"ls runs", sh("ls -la"), Skip, policy.ModeWorkspaceWrite},
		{"build runs sandboxed", sh("make && go test ./..."), Skip, policy.ModeWorkspaceWrite},
		{"rm in the workspace runs", sh("rm -rf build"), Skip, policy.ModeWorkspaceWrite},
		{"rm -rf /", sh("rm -rf /"), Forbidden, ""},
		{"rm -fr ~ in a chain", sh("cd /tmp && rm -fr ~"), Forbidden, ""},
		{"rm -rf $HOME", sh("rm -rf $HOME"), Forbidden, ""},
		{"rm -rf /* via xargs", sh("echo | xargs rm -rf /*"), Forbidden, ""},
		{"sudo", sh("sudo apt-get install x"), Forbidden, ""},
		{"absolute sudo", []string{"/usr/bin/sudo", "ls"}, Forbidden, ""},
		{"git push asks with the network", sh("git push origin HEAD"), NeedsApproval, policy.ModeDangerFullAccess},
		{"git pull runs sandboxed", sh("git pull"), Skip, policy.ModeWorkspaceWrite},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Decide(Request{Argv: c.argv}, p)
			if d.Outcome != c.want || (c.sandbox != "" && d.Sandbox != c.sandbox) {
				t.Fatalf("%v in %s (%s), want %v in %s", d.Outcome, d.Sandbox, d.Reason, c.want, c.sandbox)
			}
		})
	}
}
