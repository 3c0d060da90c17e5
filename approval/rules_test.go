package approval

import (
	"strings"
	"testing"

	"github.com/unified-exec/unified-exec/policy"
)

// The home directory and working directory the rule tests judge in.
const (
	testHome = "/home/alice"
	testCwd  = "/home/alice/ws"
)

func defaultIn(t *testing.T, mode string) *policy.Policy {
	t.Helper()
	p := policy.Default()
	p.Approval.Mode = mode
	return p
}

// TestRulesSeeThrough: every spelling of what the default policy's rules
// guard (rm -r of / or ~, git push, changing user) is matched, through the
// real decision function, in the default approval mode (on-request), where
// only a rule can stop or ask.
func TestRulesSeeThrough(t *testing.T) {
	type tc struct {
		name string
		argv []string
		want Outcome // Forbidden: an rm or privilege rule; NeedsApproval: git push
	}
	F, A := Forbidden, NeedsApproval
	cases := []tc{
		// The list.
		{"git -C . push", sh("git -C . push"), A},
		{"git --no-pager push", sh("git --no-pager push"), A},
		{"timeout --signal KILL 5 git push", sh("timeout --signal KILL 5 git push"), A},
		{"env --split-string 'git push'", sh("env --split-string 'git push'"), A},
		{"rm -f -r ~", sh("rm -f -r ~"), F},
		{"rm -rf -- ~", sh("rm -rf -- ~"), F},
		{`rm -rf "$HOME"`, sh(`rm -rf "$HOME"`), F},
		{"rm -rf /.", sh("rm -rf /."), F},
		{"pkexec id", sh("pkexec id"), F},
		{"runuser -u x id", sh("runuser -u x id"), F},

		// git's global options.
		{"git -c k=v push", sh("git -c core.pager=x push"), A},
		{"git --git-dir=", sh("git --git-dir=.git push"), A},
		{"git --git-dir DIR", sh("git --git-dir .git push origin main"), A},
		{"git --work-tree=", sh("git --work-tree=. push"), A},
		{"git --namespace X", sh("git --namespace x push"), A},
		{"git -P", sh("git -P push"), A},
		{"git --paginate", sh("git --paginate push"), A},
		{"git --bare", sh("git --bare push"), A},
		{"git --exec-path=", sh("git --exec-path=/usr/lib/git-core push"), A},
		{"git --literal-pathspecs", sh("git --literal-pathspecs --no-optional-locks push"), A},
		{"git --config-env", sh("git --config-env=core.pager=PAGER push"), A},
		{"git many globals", sh("git --no-pager -C . -c a.b=c --git-dir=.git push --force"), A},
		{"git -c alias", sh("git -c alias.p=push p"), A},
		{"git -c shell alias", sh("git -c 'alias.p=!git push' p"), A},
		{"git -c alias to rm", sh("git -c 'alias.x=!rm -rf ~' x"), F},
		{"git push --force", sh("git push --force origin main"), A},

		// How the program is named.
		{"/usr/bin/git push", sh("/usr/bin/git push"), A},
		{`\git push`, sh(`\git push`), A},
		{"'git' push", sh("'git' push"), A},
		{"g''it push", sh("g''it push"), A},
		{`"git" "push"`, sh(`"git" "push"`), A},
		{"ANSI-C quoted", sh(`$'\x67it' push`), A},
		{"braces", sh("{git,push}"), A},
		{"argv not a shell line", []string{"/usr/bin/git", "-C", "/x", "push"}, A},
		{"/bin/rm", sh("/bin/rm -rf ~"), F},
		{`\rm`, sh(`\rm -rf ~`), F},
		{"r''m", sh("r''m -rf ~"), F},
		{"ANSI-C rm", sh(`$'\x72m' -rf ~`), F},

		// Wrappers, their long options and options with values.
		{"command git push", sh("command git push"), A},
		{"command -p", sh("command -p git push"), A},
		{"exec git push", sh("exec git push"), A},
		{"exec -a", sh("exec -a name git push"), A},
		{"nohup git push", sh("nohup git push"), A},
		{"time git push", sh("time git push"), A},
		{"/usr/bin/time -f", sh("/usr/bin/time -f %e git push"), A},
		{"timeout -k", sh("timeout -k 1 5 git push"), A},
		{"timeout --kill-after=", sh("timeout --kill-after=1 --preserve-status 5 git push"), A},
		{"timeout --signal=", sh("timeout --signal=KILL --foreground 5s git push"), A},
		{"timeout abbreviated", sh("timeout --sig KILL 5 git push"), A},
		{"env -S", sh("env -S 'git push'"), A},
		{"env -S glued", sh("env -S'git push'"), A},
		{"env --split-string=", sh("env --split-string='git push'"), A},
		{"env -S then args", sh("env -S git push origin"), A},
		{"env -i", sh("env -i PATH=/usr/bin git push"), A},
		{"env -", sh("env - git push"), A},
		{"env -u", sh("env -u HOME git push"), A},
		{"env --unset", sh("env --unset HOME git push"), A},
		{"env --unset=", sh("env --unset=HOME git push"), A},
		{"env -C", sh("env -C /tmp git push"), A},
		{"env --chdir", sh("env --chdir /tmp git push"), A},
		{"env -iu cluster", sh("env -iu HOME git push"), A},
		{"env --", sh("env -- git push"), A},
		{"nice", sh("nice git push"), A},
		{"nice -n", sh("nice -n 5 git push"), A},
		{"nice -n glued", sh("nice -n5 git push"), A},
		{"nice --adjustment", sh("nice --adjustment 5 git push"), A},
		{"nice -10", sh("nice -10 git push"), A},
		{"stdbuf -oL", sh("stdbuf -oL git push"), A},
		{"stdbuf -o L", sh("stdbuf -o L -e 0 git push"), A},
		{"stdbuf --output", sh("stdbuf --output L git push"), A},
		{"ionice -c", sh("ionice -c 3 git push"), A},
		{"ionice -c2 -n7", sh("ionice -c2 -n7 git push"), A},
		{"ionice --class", sh("ionice --class 3 --classdata 7 git push"), A},
		{"xargs git push", sh("echo | xargs git push"), A},
		{"xargs -n", sh("echo | xargs -n 1 git push"), A},
		{"xargs --max-args", sh("echo | xargs --max-args 1 -P 2 git push"), A},
		{"xargs -a", sh("xargs -a list git push"), A},
		{"xargs -0r", sh("xargs -0r git push"), A},
		{"setpriv", sh("setpriv --no-new-privs git push"), A},
		{"setpriv --inh-caps", sh("setpriv --inh-caps -all --bounding-set -all git push"), A},
		{"prlimit", sh("prlimit --nofile=100 git push"), A},
		{"prlimit -n", sh("prlimit -n100 --cpu=10 git push"), A},
		{"script -c", sh("script -q -c 'git push' /dev/null"), A},
		{"script -qc", sh("script -qc 'git push' /dev/null"), A},
		{"script --command", sh("script --command 'git push' /dev/null"), A},
		{"script --command=", sh("script --command='git push'"), A},
		{"sg -c", sh("sg users -c 'git push'"), A},
		{"sg command", sh("sg users 'git push'"), A},
		{"chronic", sh("chronic git push"), A},
		{"chronic -ev", sh("chronic -ev git push"), A},
		{"setsid -f", sh("setsid -f git push"), A},
		{"flock -w", sh("flock -w 5 /tmp/l git push"), A},
		{"flock -c", sh("flock /tmp/l -c 'git push'"), A},
		{"watch", sh("watch -n 5 git push"), A},
		{"busybox", sh("busybox rm -rf ~"), F},
		{"taskset", sh("taskset -c 0 git push"), A},
		{"chrt", sh("chrt -r 1 git push"), A},
		{"strace -o", sh("strace -f -o /tmp/t git push"), A},
		{"unshare -r", sh("unshare -r git push"), A},
		{"wrappers nested", sh("nice -n 1 timeout -s KILL 5 env -i stdbuf -oL nohup git push"), A},
		{"unknown long option", sh("timeout --bogus-option X 5 git push"), A},
		{"find -exec", sh("find . -exec git push \\;"), A},
		{"/usr/bin/env -S", sh("/usr/bin/env -S 'git push'"), A},
		{"env -S quoted in the word", sh(`env -S"git push"`), A},
		{"env -vS", sh("env -vS 'git push'"), A},
		{"env one word", sh("env '-S git push'"), A},
		{"timeout -sKILL", sh("timeout -sKILL 1m git push"), A},
		{"nice -n -5", sh("nice -n -5 git push"), A},
		{"nice --", sh("nice -- git push"), A},
		{"xargs -L1", sh("xargs -L1 git push"), A},
		{"xargs -i", sh("xargs -i git push"), A},
		{"xargs --replace=", sh("xargs --replace=X git push"), A},
		{"script -c after the file", sh("script -q /dev/null -c 'git push'"), A},
		{"sg -", sh("sg - users -c 'git push'"), A},
		{"chronic --", sh("chronic -- git push"), A},
		{"ionice -t -c3", sh("ionice -t -c3 git push"), A},
		{"GIT_DIR= prefix", sh("GIT_DIR=.git git push"), A},
		{"git --", sh("git -- push"), A},
		{"git$''", sh("git$'' push"), A},
		{`g\it`, sh(`g\it push`), A},
		{"line continuation", sh("rm -rf \\\n ~"), F},
		{"rm -rf ~ &", sh("rm -rf ~ & wait"), F},

		// Shells and code handed over as a string.
		{"bash -c", sh("bash -c 'git push'"), A},
		{"sh -c", sh(`sh -c "git push"`), A},
		{"bash -lc argv", []string{"bash", "-lc", "cd x && git push"}, A},
		{"dash -ec", sh("dash -ec 'git push'"), A},
		{"eval literal", sh("eval 'git push'"), A},
		{"eval words", sh("eval git push"), A},
		{"builtin eval", sh("builtin eval git push"), A},
		{"heredoc to bash", sh("bash <<'EOF'\ngit push\nEOF"), A},
		{"herestring to sh", sh("sh <<< 'git push'"), A},
		{"trap", sh("trap 'git push' EXIT"), A},
		{"alias", sh("shopt -s expand_aliases\nalias p='git push'\np"), A},
		{"assignment holding a substitution", sh("PS4='$(rm -rf ~)' bash -xc ls"), F},

		// rm: flags combined or apart, long forms, --, permuted.
		{"rm -rf ~", sh("rm -rf ~"), F},
		{"rm -fr ~", sh("rm -fr ~"), F},
		{"rm -Rf ~", sh("rm -Rf ~"), F},
		{"rm -rfv ~", sh("rm -rfv ~"), F},
		{"rm -vrf ~", sh("rm -vrf ~"), F},
		{"rm -r ~", sh("rm -r ~"), F},
		{"rm -r -f ~/", sh("rm -r -f ~/"), F},
		{"rm --recursive --force ~", sh("rm --recursive --force ~"), F},
		{"rm --force --recursive ~", sh("rm --force --recursive ~"), F},
		{"rm --recursive=", sh("rm --recursive ~"), F},
		{"rm --rec abbreviated", sh("rm --rec --f ~"), F},
		{"rm after operands", sh("rm ~ -rf"), F},
		{"rm home second", sh("rm -rf build ~"), F},
		{"rm -rf -- / ", sh("rm -rf -- /"), F},
		{"rm --no-preserve-root", sh("rm -rf --no-preserve-root /"), F},
		// The home directory in any spelling.
		{"rm -rf ~/.", sh("rm -rf ~/."), F},
		{"rm -rf $HOME/", sh("rm -rf $HOME/"), F},
		{"rm -rf ${HOME}", sh("rm -rf ${HOME}"), F},
		{`rm -rf "${HOME}/"`, sh(`rm -rf "${HOME}/"`), F},
		{"rm -rf /home/alice", sh("rm -rf /home/alice"), F},
		{"rm -rf /home/alice/", sh("rm -rf /home/alice/"), F},
		{"rm -rf //home//alice", sh("rm -rf //home//alice/."), F},
		{"rm -rf ~alice", sh("rm -rf ~alice"), F},
		{"rm -rf ..", sh("rm -rf ../"), F},
		{"rm -rf ~/*", sh("rm -rf ~/*"), F},
		{"rm -rf $HOME/*", sh("rm -rf $HOME/*"), F},
		{"rm -rf /home/alice/*", sh("rm -rf /home/alice/*"), F},
		{"rm -rf ~/.*", sh("rm -rf ~/.*"), F},
		{"rm -rf glob of home", sh("rm -rf /ho?e/ali*"), F},
		{"rm -rf home in braces", sh("rm -rf {build,~}"), F},
		{"wrapped shell spelled home", []string{"rm", "-rf", "/home/alice"}, F},
		{"wrapped shell spelled home slash", []string{"rm", "-r", "-f", "/home/alice/"}, F},
		// The root in any spelling.
		{"rm -rf /", sh("rm -rf /"), F},
		{"rm -rf //", sh("rm -rf //"), F},
		{"rm -rf /./", sh("rm -rf /./"), F},
		{"rm -rf /..", sh("rm -rf /.."), F},
		{"rm -rf /*", sh("rm -rf /*"), F},
		{"rm -rf /?*", sh("rm -rf /?*"), F},
		{"rm -rf {/,x}", sh("rm -rf {/,x}"), F},
		// rm through wrappers.
		{"command rm", sh("command rm -rf ~"), F},
		{"exec rm", sh("exec rm -rf ~"), F},
		{"nohup rm", sh("nohup rm -rf ~"), F},
		{"timeout rm", sh("timeout --signal KILL 5 rm -rf ~"), F},
		{"env -S rm", sh("env -S 'rm -rf ~'"), F},
		{"env --split-string rm", sh("env --split-string 'rm -rf ~'"), F},
		{"nice rm", sh("nice --adjustment 5 rm -rf ~"), F},
		{"find ~ -exec rm", sh("find ~ -exec rm -rf {} +"), F},
		{"find / -exec rm", sh("find / -maxdepth 0 -exec rm -rf {} \\;"), F},
		{"bash -c rm", sh("bash -c 'rm -rf ~'"), F},
		{"eval rm", sh("eval rm -rf '~'"), F},
		{"heredoc rm", sh("sh <<'EOF'\nrm -rf ~\nEOF"), F},

		// A cd to the home or the root, before or after (in a loop).
		{"cd && rm -rf *", sh("cd && rm -rf *"), F},
		{"cd ~ && rm -rf .", sh("cd ~ && rm -rf ."), F},
		{"cd / && rm -rf *", sh("cd / ; rm -rf *"), F},
		{"cd .. && rm -rf *", sh("cd .. && rm -rf ./*"), F},
		{"cd $HOME", sh(`cd "$HOME" && rm -rf .*`), F},
		{"cd $HOME/", sh(`cd $HOME/ && rm -rf *`), F},
		{"pushd", sh("pushd / && rm -rf *"), F},
		{"cd later in a loop", sh("for i in 1 2; do rm -rf *; cd ~; done"), F},
		{"env -C", sh("env -C / rm -rf *"), F},
		{"env --chdir ~", sh("env --chdir ~ rm -rf ."), F},
		{"rm -rf . in the home", []string{"rm", "-rf", "../."}, F},
		{"~+ after cd", sh("cd && rm -rf ~+"), F},

		// Changing user.
		{"sudo", sh("sudo id"), F},
		{"sudo -u", sh("sudo -u root id"), F},
		{"doas", sh("doas id"), F},
		{"su", sh("su -c id"), F},
		{"/usr/bin/pkexec", sh("/usr/bin/pkexec --user root id"), F},
		{"runuser user -c", sh("runuser x -c id"), F},
		{"setpriv --reuid", sh("setpriv --reuid 1000 id"), F},
		{"setpriv --reuid=", sh("setpriv --reuid=1000 --regid=1000 --init-groups id"), F},
		{"setpriv --regid", sh("setpriv --regid 0 id"), F},
		{"env pkexec", sh("env pkexec id"), F},
		{"timeout sudo", sh("timeout 5 sudo id"), F},
		{"sudo inside git push", sh("git push && sudo id"), F},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Decide(Request{Argv: c.argv, Cwd: testCwd, Home: testHome}, defaultIn(t, policy.ApprovalOnRequest))
			if d.Outcome != c.want {
				t.Fatalf("%s: %v (%s), want %v", Display(c.argv), d.Outcome, d.Reason, c.want)
			}
			if d.Rule == nil {
				t.Fatalf("%s: decided by %s, not a rule (%s)", Display(c.argv), d.By, d.Reason)
			}
			if d.Unjudged != nil {
				t.Errorf("%s: marked unjudgeable (%s), want a certain match", Display(c.argv), d.Unjudged)
			}
		})
	}
}

// TestRulesOrdinaryCommands: what the rules do not guard still runs
// unasked under on-request.
func TestRulesOrdinaryCommands(t *testing.T) {
	for _, s := range []string{
		"ls", "ls -la ~", "git status", "git -C sub status", "git pull", "git fetch origin",
		"git commit -m 'push it'", "git commit -m push", "git log --grep push", `git commit -m "$msg"`,
		"git show push", "git --no-pager log -1",
		"rm -rf build", "rm -rf ./build", "rm -rf ~/ws/build", "rm -rf /tmp/x", "rm -f ~/.cache/x",
		`rm -rf "$HOME/ws/build"`, "rm -rf ~/.", // ~/. is the home: see below, kept apart
		"rm ~/notes.txt", "rm -r ../other", `rm -f "$f"`, "for f in *.o; do rm \"$f\"; done",
		"find . -name '*.o' -exec rm -f {} +", "find . -name build -exec rm -rf {} +",
		"timeout 5 make test", "env FOO=1 go test ./...", "nice -n 5 make",
		"python3 -c 'import os; print(1)'", "node -e 'console.log(1)'", "awk 'BEGIN{print 1}' f", "make",
		"cd ~ && ls", "echo ~", "cat ~/x", "ls $HOME", "ls | xargs echo", "git ls-files | xargs grep foo",
		"bash -c 'ls && git status'", "sudoku", "env -i PATH=/bin ls",
		`rm -rf "$TMPDIR/foo"`, `rm -rf "$dir/build/"`, `rm -rf "${out}"/dist`,
		`d=$(cat f); rm -rf "$d/build"`, `s=$(cat f); git "$s"ull`,
		// Variables of the environment, which the line does not set: not
		// the agent's to choose.
		"rm $f", "rm -rf $BUILD_DIR", `rm -rf "$dir"`, "git $sub", `rm -rf "$TMPDIR"/x`,
		"f=$(mktemp) && echo t > $f && rm -f $f", `d="$(mktemp -d)"; rm -rf "$d"`,
		"cd build && rm -rf *", "cd $HOME/ws/x && rm -rf *", "cd /tmp/x && rm -rf *", `cd "$d" && rm -rf build`, "cd && ls; rm -rf ws/build",
		"chrt -i -p 0 $PPID", "ionice -c 3 -p $PPID", "taskset -p 1 $PPID", "prlimit --pid $PPID --cpu=1:1",
	} {
		if s == "rm -rf ~/." {
			continue
		}
		t.Run(s, func(t *testing.T) {
			d := Decide(Request{Argv: sh(s), Cwd: testCwd, Home: testHome}, defaultIn(t, policy.ApprovalOnRequest))
			if d.Outcome != Skip {
				t.Fatalf("%q: %v (%s), want skip", s, d.Outcome, d.Reason)
			}
		})
	}
}

// TestUnjudgeable: what cannot be judged before it runs needs approval in
// every mode when a forbid or prompt rule could match it, is refused under
// never, and the decision says why.
func TestUnjudgeable(t *testing.T) {
	cases := []struct {
		script string
		why    string // substring of the reason
	}{
		{"$(echo git) push", "computed"},
		{"`echo rm` -rf ~", "computed"},
		{"$x push", "computed"},
		{"${IFS}git push", "computed"},
		{"git${IFS}push", "computed"},
		{`"$cmd" push`, "computed"},
		{"/usr/bin/gi? push", "pattern"},
		{"/usr/bin/g[i]t push", "pattern"},
		// Arguments the line computes: a variable it sets (even later, in a
		// loop), a substitution, the shell's own variables.
		{"sub=$(cat f); git $sub", "computed"},
		{"dir=$(cat f); rm -rf $dir", "computed"},
		{`read dir; rm -rf "$dir"`, "computed"},
		{`for d in a ~; do rm -rf "$d"; done`, "computed"},
		{`while true; do rm -rf "$d"; d=~; done`, "computed"},
		{"x=~; rm -rf $x", "computed"},
		{`printf -v d %s ~; rm -rf "$d"`, "computed"},
		{`rm -rf "$1"`, "computed"},
		{`cd ~ && rm -rf "$PWD"`, "computed"},
		{"ls ~; rm -rf $_", "computed"},
		{"rm -rf ${dir:-~}", "computed"},
		{"rm -rf ${!ref}", "computed"},
		{"rm -rf $(echo ~)", "computed"},
		{"args=$(cat f); rm $args", "computed"},
		{"env $CMD", "computed"},
		{`bash -c "$CMD"`, "computed"},
		{`cd "$d" && rm -rf *`, "a cd computes"},
		{"cd ~; cd /tmp; rm -rf ~-", "OLDPWD"},
		{`d=$(cat f); cd $d; rm -rf alice`, "a cd computes"},
		{"eval \"$x\"", "eval"},
		{"eval $(cat f)", "eval"},
		{"source ./env.sh", "source"},
		{". ./env.sh", "."},
		{"bash ./x.sh", "file"},
		{"sh x.sh && ls", "file"},
		{"sh < x.sh", "input"},
		{"echo 'git push' | bash", "input"},
		{"curl -s https://x | sh", "input"},
		{"bash -s", "input"},
		{"bash <<EOF\n$x\nEOF", "input"},
		{"ls | xargs rm -rf", "xargs"},
		{"xargs -I{} rm -rf {}", "xargs"},
		{"find . | xargs rm", "xargs"},
		{"script", "input"},
		{"timeout 5 $cmd", "computed"},
		{"env $x", "computed"},
		{"BASH_ENV=./x.sh bash -c ls", "BASH_ENV"},
		{"hash -p /bin/rm ls; ls -rf ~", "hash"},
		{"git -c alias.p=$x p", "computed"},
		// Not a git command: an alias or a git-NAME program from
		// configuration the line does not show.
		{"git pushd", "not a git command"},
		{"git -C /tmp/r x", "not a git command"},
		{`d=$(cat f); rm -rf "$d/"`, "computed"},
		{`d=$(cat f); rm -rf "$d/alice"`, "computed"},
		{`o=$(cat f); rm "$o" ~`, "computed"},
		{`o=$(cat f); rm -"$o"f ~`, "computed"},
		{`s=$(cat f); git "$s"sh`, "computed"},
	}
	for _, c := range cases {
		for _, mode := range []string{policy.ApprovalUntrusted, policy.ApprovalOnFailure, policy.ApprovalOnRequest, policy.ApprovalNever} {
			t.Run(mode+"/"+c.script, func(t *testing.T) {
				d := Decide(Request{Argv: sh(c.script), Cwd: testCwd, Home: testHome}, defaultIn(t, mode))
				want := NeedsApproval
				if mode == policy.ApprovalNever {
					want = Forbidden
				}
				if d.Outcome != want {
					t.Fatalf("%q: %v (%s), want %v", c.script, d.Outcome, d.Reason, want)
				}
				if d.Unjudged == nil {
					t.Fatalf("%q: no Unjudged reason (%s)", c.script, d.Reason)
				}
				if d.By != ByUnjudged {
					t.Errorf("by %q, want %q", d.By, ByUnjudged)
				}
				if d.Unjudged.Rule == nil || d.Unjudged.Rule.Decision == policy.DecisionAllow {
					t.Errorf("no forbid or prompt rule named: %+v", d.Unjudged)
				}
				if !strings.Contains(d.Reason, c.why) || !strings.Contains(d.Reason, "cannot be judged before it runs") {
					t.Errorf("reason %q lacks %q", d.Reason, c.why)
				}
				if d.Sandbox != policy.ModeWorkspaceWrite && d.Outcome != Forbidden {
					t.Errorf("sandbox %q: an unjudgeable command keeps the policy's sandbox", d.Sandbox)
				}
			})
		}
	}
}

// TestUnjudgeableWithoutRules: with no forbid or prompt rule nothing could
// match, so the mode decides as before.
func TestUnjudgeableWithoutRules(t *testing.T) {
	p, err := policy.Parse([]byte("[approval]\nmode = \"on-request\"\n[[rule]]\npattern = [\"make\"]\ndecision = \"allow\"\n"), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"$x push", "source ./env.sh", "ls | xargs rm -rf", "eval \"$x\""} {
		d := Decide(Request{Argv: sh(s), Cwd: testCwd, Home: testHome}, p)
		if d.Outcome != Skip || d.Unjudged != nil {
			t.Errorf("%q: %v (%s), want skip", s, d.Outcome, d.Reason)
		}
	}
}

// TestUnjudgeablePrompt: a prompt rule that could match asks as well, and a
// rule that does match decides with the unjudgeable part said too.
func TestUnjudgeablePrompt(t *testing.T) {
	p := defaultIn(t, policy.ApprovalOnRequest)
	d := Decide(Request{Argv: sh("git push && $x"), Cwd: testCwd, Home: testHome}, p)
	if d.Outcome != NeedsApproval || d.Rule == nil || !strings.Contains(d.Reason, "cannot be judged") {
		t.Fatalf("%v by %s: %s", d.Outcome, d.By, d.Reason)
	}
	if d.Sandbox != policy.ModeWorkspaceWrite {
		t.Errorf("sandbox %s: the rule's sandbox does not extend to what nobody could read", d.Sandbox)
	}
	d = Decide(Request{Argv: sh("rm -rf ~ && $x"), Cwd: testCwd, Home: testHome}, p)
	if d.Outcome != Forbidden {
		t.Fatalf("%v: %s", d.Outcome, d.Reason)
	}
}

// TestUnjudgeableKeepsSandbox: approving a command nobody could read
// runs it in the policy's sandbox, whatever an allow rule of the line
// says.
func TestUnjudgeableKeepsSandbox(t *testing.T) {
	p, err := policy.Parse([]byte(`
[[rule]]
pattern = ["npm", "install"]
decision = "allow"
sandbox = "danger-full-access"
[[rule]]
pattern = ["rm"]
decision = "forbid"
`), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	d := Decide(Request{Argv: sh("npm install && source ./x.sh"), Cwd: testCwd, Home: testHome}, p)
	if d.Outcome != NeedsApproval || d.Sandbox != policy.ModeWorkspaceWrite {
		t.Fatalf("%v in %s (%s)", d.Outcome, d.Sandbox, d.Reason)
	}
}

// TestHomeUnknown: without a home directory the symbolic spellings still
// match.
func TestHomeUnknown(t *testing.T) {
	p := defaultIn(t, policy.ApprovalOnRequest)
	for _, s := range []string{"rm -rf ~", "rm -rf ~/", "rm -rf $HOME", `rm -rf "${HOME}/."`, "rm -fr ~/*"} {
		if d := Decide(Request{Argv: sh(s), Cwd: "/w"}, p); d.Outcome != Forbidden {
			t.Errorf("%q: %v (%s)", s, d.Outcome, d.Reason)
		}
	}
	if d := Decide(Request{Argv: sh("rm -rf /home/alice"), Cwd: "/w"}, p); d.Outcome != Skip {
		t.Errorf("a path is not a home without one: %v", d.Outcome)
	}
}

// TestAllowRulesStayLiteral: an allow rule matches the command as written;
// the spellings that widen forbid and prompt rules never widen an allow.
func TestAllowRulesStayLiteral(t *testing.T) {
	p, err := policy.Parse([]byte(`
[approval]
mode = "untrusted"
[[rule]]
pattern = ["git", "fetch"]
decision = "allow"
sandbox = "danger-full-access"
`), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"git -c core.sshCommand=evil fetch", "git --exec-path=/tmp fetch", "$x fetch"} {
		d := Decide(Request{Argv: sh(s), Cwd: testCwd, Home: testHome}, p)
		if d.Outcome == Skip || d.Sandbox == policy.ModeDangerFullAccess {
			t.Errorf("%q: %v in %s (%s)", s, d.Outcome, d.Sandbox, d.Reason)
		}
	}
	if d := Decide(Request{Argv: sh("git fetch origin"), Cwd: testCwd}, p); d.Outcome != Skip {
		t.Errorf("git fetch: %v (%s)", d.Outcome, d.Reason)
	}
}

// TestRefusalSaysUnjudgeable: when nobody can be asked, the refusal says
// what could not be judged and which rule could match, and does not
// suggest a mode that would ask anyway.
func TestRefusalSaysUnjudgeable(t *testing.T) {
	d := Decide(Request{Argv: sh("source ./env.sh"), Cwd: testCwd, Home: testHome}, defaultIn(t, policy.ApprovalOnRequest))
	q := Question{Kind: KindApprove, Request: Request{Argv: sh("source ./env.sh")}, Reason: d.Reason, Unjudged: d.Unjudged}
	msg := RefusalMessage(q, policy.DefaultSource)
	for _, want := range []string{"cannot be judged before it runs", "source", "could match"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, `mode = "on-request"`) {
		t.Errorf("%q suggests on-request, which asks too", msg)
	}
}
