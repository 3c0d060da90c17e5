package approval

import (
	"fmt"
	"strings"
	"testing"

	"github.com/unified-exec/unified-exec/policy"
)

// TestRedTeamBypasses: the ways a red team found to run what the default
// policy guards (git push asks; rm -rf ~ and setpriv --reuid are
// forbidden) without a question, through the real decision function under
// approval modes never and on-request. Each must be refused or asked:
// forbidden by a rule (F), or asked, whether a rule matches or a rule
// could match a part nobody can read (Q); under never a question is a
// refusal.
func TestRedTeamBypasses(t *testing.T) {
	const F, Q = "forbid", "ask"
	cases := []struct {
		name   string
		script string
		want   string
	}{
		// 1. Aliases defined in the line and used later in it.
		{"bash alias on the next line", "shopt -s expand_aliases\nalias g=git\ng push origin HEAD:x", Q},
		{"dash alias without shopt", "sh -c \"alias g=git\ng push\"", Q},
		{"alias rm", "alias r=rm\nr -rf ~", F},
		{"alias setpriv", "alias p=setpriv\np --reuid=0 --regid=0 --clear-groups id", F},
		{"alias on one line", "alias g=git; g push", Q},
		{"alias to a whole command", "alias p='git push'\np origin", Q},
		{"alias of an alias", "alias g=h\nalias h=git\ng push", Q},
		{"alias with a trailing blank", "alias t='timeout 5 '\nalias g=git\nt g push", Q},
		{"alias to a list", "alias g='cd /tmp; git'\ng push", Q},
		{"alias defined by eval", "eval 'alias g=git'\ng push", Q},
		{"alias through builtin", "builtin alias g=git\ng push", Q},
		{"alias with a computed value", "alias g=$(echo git)\ng push", Q},
		{"BASH_ALIASES", "BASH_ALIASES[g]=git\ng push", Q},
		{"BASH_ALIASES computed", "BASH_ALIASES[g]=$x\ng push", Q},
		{"BASH_CMDS", "BASH_CMDS[ls]=/usr/bin/git; ls push", Q},

		// 2. git configuration through the environment.
		{"GIT_CONFIG_COUNT", "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x GIT_CONFIG_VALUE_0=push git x origin HEAD:x", Q},
		{"GIT_CONFIG_PARAMETERS", `GIT_CONFIG_PARAMETERS="'alias.x=push'" git x origin HEAD:x`, Q},
		{"GIT_CONFIG_PARAMETERS key=value quoted apart", `GIT_CONFIG_PARAMETERS="'alias.x'='push'" git x`, Q},
		{"GIT_CONFIG_* exported earlier", "export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x GIT_CONFIG_VALUE_0=push; git x", Q},
		{"GIT_CONFIG_PARAMETERS declared", `declare -x GIT_CONFIG_PARAMETERS="'alias.x=push'"; git x`, Q},
		{"GIT_CONFIG_* through env", "env GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x GIT_CONFIG_VALUE_0='!rm -rf ~' git x", F},
		{"GIT_CONFIG_PARAMETERS computed", "GIT_CONFIG_PARAMETERS=$(cat f) git status", Q},
		{"GIT_CONFIG_VALUE computed", "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.pager GIT_CONFIG_VALUE_0=$x git log", Q},
		{"GIT_CONFIG_GLOBAL", "GIT_CONFIG_GLOBAL=/tmp/c git x", Q},
		{"include.path", "git -c include.path=/tmp/c status", Q},
		{"an alias from a config file", "git -C /tmp/r x", Q},

		// 3. Expansions that run code.
		{"${_@P}", `echo '$(\147it push origin HEAD:x)' >/dev/null; echo ${_@P}`, Q},
		{"${x@P}", "x='$(git push)'; echo ${x@P}", Q},
		{"arithmetic on a literal subscript", "x='a[$(git push)]'; echo $((x))", Q},
		{"arithmetic on a computed value", "n=$(cat f); echo $((n))", Q},
		{"arithmetic on a substitution", "echo $(( $(cat f) ))", Q},
		{"arithmetic on what read reads", "read n < f; echo $((n + 1))", Q},
		{"[[ -eq ]] on a computed value", "n=$(cat f); [[ $n -eq 1 ]]", Q},
		{"subscript of a computed value", "n=$(cat f); echo ${a[$n]}", Q},
		{"indirection through a computed name", "n=$(cat f); echo ${!n}", Q},
		{"$_ in arithmetic", "echo 'a[$(git push)]'; echo $(($_))", Q},
		{"[[ -v literal subscript ]]", "[[ -v 'a[$(git push)]' ]]", Q},
		{"test -v literal subscript", "test -v 'a[$(git push)]'", Q},
		{"test -v computed", `n=$(cat f); test -v "$n"`, Q},
		{"printf -v subscript", "printf -v 'a[$(git push)]' x", Q},
		{"read into a subscript", "read 'a[$(git push)]' <<< x", Q},
		{"declare a subscript", "declare 'a[$(git push)]=1'", Q},
		{"unset a computed name", `n=$(cat f); unset "$n"`, Q},
		{"declare -n computed", "n=$(cat f); declare -n r=$n; echo $r", Q},
		{"let a literal subscript", "let 'a[$(git push)]'", Q},
		{"PS4 with prompt escapes", `PS4='$(\147it push)' bash -xc ls`, Q},
		{"PS4 then set -x", `PS4='$(\147it push)'; set -x; ls`, Q},
		{"PROMPT_COMMAND", "PROMPT_COMMAND='git push' bash -i <<< ls", Q},
		{"ENV for an interactive sh", "ENV=/tmp/x sh -ic ls", Q},
		{"enable -f", "enable -f /tmp/x.so x", Q},
		{"complete -C", "complete -C 'git push' x", Q},
		{"bind -x", `bind -x '"\C-x": git push'`, Q},
		{"mapfile -C", "mapfile -C 'git push' -c 1 a < f", Q},
		{"fc", "fc -s", Q},
		{"cdable_vars", "shopt -s cdable_vars; h=~; cd h; rm -rf *", Q},
		{"CDPATH", "CDPATH=/; cd home; rm -rf alice", Q},

		// 4. git settings and options that run commands.
		{"diff.external", `git -c diff.external='sh -c "git push"' diff`, Q},
		{"GIT_EXTERNAL_DIFF", "GIT_EXTERNAL_DIFF='git push' git diff", Q},
		{"core.fsmonitor", "git -c core.fsmonitor='git push origin HEAD:x' status", Q},
		{"ext:: transport", `git -c protocol.ext.allow=always ls-remote "ext::sh -c git% push% origin"`, Q},
		{"git remote-ext", `git remote-ext x "sh -c 'git push'"`, Q},
		{"GIT_SSH_COMMAND", "GIT_SSH_COMMAND='git push' git fetch", Q},
		{"GIT_SSH", "GIT_SSH=git-push git fetch", Q},
		{"core.sshCommand", "git -c core.sshCommand='git push' fetch", Q},
		{"core.pager", "git -c core.pager='git push' log", Q},
		{"pager.log", "git -c pager.log='git push' log", Q},
		{"GIT_PAGER", "GIT_PAGER='git push' git log", Q},
		{"PAGER", "PAGER='git push' git log", Q},
		{"core.editor", "git -c core.editor='git push' commit", Q},
		{"GIT_EDITOR", "GIT_EDITOR='git push' git commit", Q},
		{"EDITOR", "EDITOR='git push' git commit", Q},
		{"VISUAL", "VISUAL='git push' git commit", Q},
		{"GIT_SEQUENCE_EDITOR", "GIT_SEQUENCE_EDITOR='git push' git rebase -i HEAD~1", Q},
		{"sequence.editor", "git -c sequence.editor='git push' rebase -i HEAD~1", Q},
		{"core.hooksPath", "git -c core.hooksPath=/tmp/h commit -m x", Q},
		{"credential.helper", "git -c credential.helper='!git push' fetch", Q},
		{"filter clean", "git -c filter.x.clean='git push' add .", Q},
		{"filter process", "git -c filter.x.process='git push' checkout .", Q},
		{"textconv", "git -c diff.x.textconv='git push' diff", Q},
		{"merge driver", "git -c merge.x.driver='git push' merge y", Q},
		{"gpg.program", "git -c gpg.program='git push' commit -S -m x", Q},
		{"gpg.ssh.defaultKeyCommand", "git -c gpg.ssh.defaultKeyCommand='git push' commit -S -m x", Q},
		{"url insteadOf ext::", `git -c protocol.ext.allow=always -c "url.ext::sh -c git% push.insteadOf=origin" fetch origin`, Q},
		{"computed ext:: URL", `git ls-remote "ext::$c"`, Q},
		{"packObjectsHook", "git -c uploadpack.packObjectsHook='git push' fetch .", Q},
		{"GIT_ASKPASS", "GIT_ASKPASS='git push' git fetch", Q},
		{"SSH_ASKPASS", "SSH_ASKPASS='git push' git fetch", Q},
		{"GIT_PROXY_COMMAND", "GIT_PROXY_COMMAND='git push' git fetch git://x/y", Q},
		{"core.gitProxy", "git -c core.gitProxy='git push' fetch git://x/y", Q},
		{"alternateRefsCommand", "git -c core.alternateRefsCommand='git push' fetch .", Q},
		{"remote uploadpack", "git -c remote.origin.uploadpack='git push' fetch", Q},
		{"--upload-pack", "git fetch --upload-pack='git push' .", Q},
		{"clone -u", "git clone -u 'git push' . /tmp/x", Q},
		{"ls-remote --upload-pack", "git ls-remote --upload-pack 'git push' .", Q},
		{"clone -c", "git clone -c core.fsmonitor='git push' . /tmp/x", Q},
		{"submodule foreach", "git submodule foreach 'git push'", Q},
		{"submodule foreach words", "git submodule foreach --recursive git push", Q},
		{"rebase -x", "git rebase -x 'git push' HEAD~1", Q},
		{"rebase --exec=", "git rebase --exec='git push' HEAD~1", Q},
		{"bisect run", "git bisect run git push", Q},
		{"difftool -x", "git difftool -x 'git push'", Q},
		{"difftool --extcmd=", "git difftool --extcmd='git push'", Q},
		{"filter-branch", "git filter-branch --tree-filter 'git push' HEAD", Q},
		{"grep -O", "git grep -O'git push' x", Q},
		{"daemon --access-hook", "git daemon --access-hook='git push'", Q},
		{"alias to rm through -c", "git -c core.pager='rm -rf ~' log", F},

		// 5. Other spellings of push and other wrappers.
		{"rbash -c", `rbash -c "git push"`, Q},
		{"ash -c", `ash -c "git push"`, Q},
		{"busybox sh -c", `busybox sh -c "git push"`, Q},
		{"ksh -c", `ksh -c "git push"`, Q},
		{"zsh -c", `zsh -c "git push"`, Q},
		{"fish -c", `fish -c "git push"`, Q},
		{"pwsh -c", `pwsh -c "git push"`, Q},
		{"pwsh -Command", `pwsh -NoProfile -Command "git push"`, Q},
		{"tcsh -c alias", `tcsh -c 'alias g git; g push'`, Q},
		{"fish heredoc", "fish <<'EOF'\nalias g git; g push\nEOF", Q},
		{"git-core dashed", "/usr/lib/git-core/git-push origin HEAD:x", Q},
		{"git-push", "git-push origin", Q},
		{"send-pack", "git send-pack /tmp/x.git HEAD", Q},
		{"http-push", "git http-push https://x/y.git HEAD", Q},
		{"subtree push", "git subtree push --prefix=x origin main", Q},
		{"tmux new", `tmux new -d "git push"`, Q},
		{"tmux new-session", "tmux new-session -d -s x -c /tmp 'git push'", Q},
		{"tmux new-window", "tmux new-window -t x 'git push'", Q},
		{"tmux run-shell", "tmux run-shell 'git push'", Q},
		{"tmux chained", "tmux new -d \\; split-window 'git push'", Q},
		{"tmux send-keys", "tmux send-keys -t x 'git push' Enter", Q},
		{"screen -dm", "screen -dm git push", Q},
		{"screen -dmS", "screen -dmS x git push", Q},
		{"screen -X stuff", "screen -S x -X stuff 'git push\n'", Q},
		{"expect -c", `expect -c "spawn git push"`, Q},
		{"xterm -e", "xterm -e git push", Q},
		{"xterm -e string", "xterm -hold -e 'git push'", Q},
		{"gnome-terminal --", "gnome-terminal -- git push", Q},
		{"dbus-run-session", "dbus-run-session -- git push", Q},
		{"systemd-run", "systemd-run --user --scope -p CPUQuota=10% git push", Q},
		{"systemd-run timer", "systemd-run --user --on-active=1 git push", Q},
		{"watch", "watch -n 1 git push", Q},
		{"entr", "ls | entr git push", Q},
		{"entr -s", "ls | entr -s 'git push'", Q},
		{"flatpak-spawn", "flatpak-spawn --host git push", Q},
		{"bwrap", "bwrap --ro-bind / / --dev /dev git push", Q},
		{"capsh", "capsh -- -c 'git push'", Q},
		{"setarch", "setarch x86_64 -R git push", Q},
		{"eatmydata", "eatmydata git push", Q},
		{"faketime", "faketime '2020-01-01' git push", Q},
		{"at", "at now <<< 'git push'", Q},
		{"hyperfine", "hyperfine 'git push'", Q},
		{"nix-shell --run", "nix-shell --run 'git push'", Q},
		{"uv run", "uv run git push", Q},
		{"npx -c", "npx -c 'git push'", Q},
		{"xargs -I into a script", "echo 'git push' | xargs -I{} sh -c '{}'", Q},
		{"xargs -i into a script", "echo 'git push' | xargs -i sh -c 'x; {}'", Q},
		{"parallel into a script", "parallel sh -c {} ::: 'git push'", Q},
		{"command_not_found_handle", "command_not_found_handle() { git push; }; xyz", Q},
		{"typeset -x GIT_CONFIG_PARAMETERS", `typeset -x GIT_CONFIG_PARAMETERS="'alias.x=push'"; git x`, Q},
	}
	for _, mode := range []string{policy.ApprovalNever, policy.ApprovalOnRequest} {
		for _, c := range cases {
			t.Run(mode+"/"+c.name, func(t *testing.T) {
				d := Decide(Request{Argv: sh(c.script), Cwd: testCwd, Home: testHome}, defaultIn(t, mode))
				switch {
				case c.want == F:
					if d.Outcome != Forbidden || d.Rule == nil || d.Rule.Decision != policy.DecisionForbid {
						t.Fatalf("%q: %v by %s (%s), want forbidden by a rule", c.script, d.Outcome, d.By, d.Reason)
					}
				case mode == policy.ApprovalNever:
					if d.Outcome != Forbidden {
						t.Fatalf("%q: %v by %s (%s), want refused", c.script, d.Outcome, d.By, d.Reason)
					}
				default:
					if d.Outcome != NeedsApproval {
						t.Fatalf("%q: %v by %s (%s), want a question", c.script, d.Outcome, d.By, d.Reason)
					}
					if d.Sandbox != policy.ModeWorkspaceWrite && d.Unjudged != nil {
						t.Errorf("%q: sandbox %s for a line nobody could read", c.script, d.Sandbox)
					}
				}
			})
		}
	}
}

// TestRedTeamOrdinary: what the fixes must leave alone runs unasked, in
// both modes.
func TestRedTeamOrdinary(t *testing.T) {
	for _, s := range []string{
		"git status", "git diff", "git log", "git commit -m x", "ls", "rm -rf build", "npm test", "make",
		"alias ll='ls -l'; ll", "shopt -s expand_aliases\nalias ll='ls -l'\nll -a", "alias gs='git status'\ngs",
		"git -c user.name=x -c user.email=y commit -m x", "git -c color.ui=never log", "git -c core.quotepath=off status",
		"git -c core.pager=cat log", "GIT_PAGER=cat git log", "PAGER=less git log", "EDITOR=true git commit",
		"git -c core.hooksPath=/dev/null commit -m x", "git -c core.fsmonitor=false status", "git -c credential.helper= fetch",
		"GIT_TERMINAL_PROMPT=0 git fetch", "GIT_SSH_COMMAND='ssh -i key' git fetch", "git lfs pull", "git --version", "git help log",
		"git fetch origin", "git rebase -i HEAD~2", "git bisect start", "git submodule update --init", "git clone https://x/y.git",
		"git rebase -x 'make test' HEAD~3", "git submodule foreach git status",
		"n=$(wc -l < f); echo $((n + 1))", "start=$(date +%s); make; echo $(( $(date +%s) - start ))",
		"for ((i = 0; i < 3; i++)); do echo $i; done", "i=0; i=$((i + 1)); echo ${a[$i]}", "echo $((RANDOM % 6))",
		"x=5; [[ $x -eq 5 ]]", "[[ -v HOME ]]", "test -v PATH", "printf -v out %s x", "read -r line < f; echo \"$line\"",
		"declare -A m; k=$(cat f); m[$k]=1", "echo '$(git push)'", "grep -n '\\$(' *.sh", "echo ${x@Q}",
		"tmux ls", "tmux kill-server", "screen -ls", "env FOO=1 make", "ENV=production npm start",
		"cat < package.json", "sh -c 'ls'", "bash -c 'git status'",
		"for i in $(seq 1 5); do echo $((i * 2)); done", "arr=(a b c); for i in \"${!arr[@]}\"; do echo \"${arr[$i]}\"; done",
		"echo $(( $(date +%s) - $(stat -c %Y f) ))", "x=$(nproc); make -j$((x + 1))", "len=${#str}; echo ${str:0:$((len-1))}",
		"GIT_EDITOR=true git rebase --continue", "GIT_SEQUENCE_EDITOR=: git rebase -i HEAD~3",
		"git -c sequence.editor=: rebase -i --autosquash HEAD~5", "git -c protocol.file.allow=always submodule update --init",
		"tmux new-session -d -s dev 'npm run dev'", "screen -dmS srv python3 -m http.server", "uv run pytest -q",
		"npx prettier --check .", "hyperfine 'sleep 0.1'", "LESSOPEN='| lesspipe %s' less README.md", "MANPAGER=cat man git",
		"alias k=kubectl; k get pods", "watch -n 1 'ls -la'", "xvfb-run npm test", "git clean -fdx", "git reset --hard origin/main",
	} {
		for _, mode := range []string{policy.ApprovalNever, policy.ApprovalOnRequest} {
			t.Run(mode+"/"+s, func(t *testing.T) {
				d := Decide(Request{Argv: sh(s), Cwd: testCwd, Home: testHome}, defaultIn(t, mode))
				if d.Outcome != Skip {
					t.Fatalf("%q: %v by %s (%s), want skip", s, d.Outcome, d.By, d.Reason)
				}
			})
		}
	}
}

// TestEscapeBlanks: a question cannot hide a command behind blanks: a
// long run of spaces is collapsed into a visible count, and characters
// that look blank are escaped.
func TestEscapeBlanks(t *testing.T) {
	long := "ls" + strings.Repeat(" ", 20000) + "; cat ~/.ssh/id_rsa"
	e := Escape(long)
	if !strings.Contains(e, "␠×20000") || len(e) > 200 || !strings.HasSuffix(e, "; cat ~/.ssh/id_rsa") {
		t.Errorf("Escape(ls + 20000 spaces + ...) = %.200q", e)
	}
	if got := Escape("a  b    c"); got != "a  b    c" {
		t.Errorf("short runs of spaces changed: %q", got)
	}
	for _, r := range []rune{'\u3164', '\u2800', '\uFFA0', '\u1160', '\u034F', '\u00A0', '\u2000', '\u2005', '\u200A',
		'\u205F', '\u115F', '\u3000', '\u1680', '\u202F', '\uFE0F', '\U000E0100', '\u17B4'} {
		s := "ls" + string(r) + "; cat x"
		e := Escape(s)
		if strings.ContainsRune(e, r) {
			t.Errorf("Escape(%q) = %q keeps %U", s, e, r)
		}
		if want := fmt.Sprintf(`\u%04x`, r); !strings.Contains(e, want) {
			t.Errorf("Escape(%q) = %q lacks %s", s, e, want)
		}
	}
	q := Question{Kind: KindApprove, Request: Request{Argv: sh(long)}, Reason: "x" + strings.Repeat(" ", 500) + "y\u3164"}
	txt := q.Text()
	if strings.Contains(txt, strings.Repeat(" ", 100)) || strings.ContainsRune(txt, '\u3164') {
		t.Errorf("question text keeps blanks: %.300q", txt)
	}
}

// TestRuleSandboxInputRedirect: a rule's wider sandbox does not cover a
// line that reads a file from outside the workspace, or a socket, by a
// redirection: that is no command a rule saw.
func TestRuleSandboxInputRedirect(t *testing.T) {
	p, err := policy.Parse([]byte(`
[[rule]]
pattern = ["ls"]
decision = "allow"
sandbox = "danger-full-access"
`), "test.toml")
	if err != nil {
		t.Fatal(err)
	}
	W, D := policy.ModeWorkspaceWrite, policy.ModeDangerFullAccess
	for _, c := range []struct {
		line, sandbox string
	}{
		{"ls", D},
		{"ls < /dev/null", D},
		{"ls < notes.txt", D},
		{"ls < ./sub/notes.txt", D},
		{"ls < " + testCwd + "/notes.txt", D},
		{"ls < /dev/tcp/127.0.0.1/22", W},
		{"ls < /dev/udp/127.0.0.1/53", W},
		{"ls < ~/.ssh/id_rsa", W},
		{"ls < ../other/x", W},
		{"ls < /etc/shadow", W},
		{"ls < $f", W},
		{"exec 3< /dev/tcp/127.0.0.1/22; ls", W},
		{"cd /tmp && ls < x", W},
	} {
		t.Run(c.line, func(t *testing.T) {
			d := Decide(Request{Argv: sh(c.line), Cwd: testCwd, Home: testHome}, p)
			if d.Sandbox != c.sandbox {
				t.Fatalf("sandbox %s, want %s (%s)", d.Sandbox, c.sandbox, d.Reason)
			}
		})
	}
}

// TestParsesShell: a command line is given only to a shell whose
// language the rules read as it runs it.
func TestParsesShell(t *testing.T) {
	for path, want := range map[string]bool{"/bin/bash": true, "/bin/sh": true, "dash": true, "/usr/bin/zsh": true,
		"/bin/rbash": false, "/usr/bin/fish": false, "tcsh": false, "pwsh": false, "tmux": false} {
		if got := ParsesShell(path); got != want {
			t.Errorf("ParsesShell(%s) = %v, want %v", path, got, want)
		}
	}
}
