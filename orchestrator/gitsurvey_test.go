package orchestrator

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/policy"
	"github.com/unified-exec/unified-exec/sandbox"
	"github.com/unified-exec/unified-exec/unifiedexec"
)

// hostGitAfter runs sandboxed commands in a fresh workspace (git =
// "commit", the default), then the host's git in the workspace, outside
// the sandbox, as a person would next; it fails when the host's git ran
// the command's program (it writes marker) and no "Git:" note told of it,
// in any response or in the audit log after Close. It returns the notes.
func hostGitAfter(t *testing.T, setup []string, host ...[]string) []string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	marker := filepath.Join(filepath.Dir(f.ws), "ran")
	evil := filepath.Join(filepath.Dir(f.ws), "evil.sh")
	if err := os.WriteFile(evil, []byte("#!/bin/sh\ndate >> "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, cmd := range setup {
		cmd = strings.ReplaceAll(cmd, "$EVIL", evil)
		r, err := f.exec(t, cmd, false, "")
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		if r.ExitCode == nil || *r.ExitCode != 0 {
			t.Fatalf("%s: %+v", cmd, r)
		}
		notes = append(notes, r.Notes...)
	}
	for _, h := range host {
		c := exec.Command("git", h...)
		c.Dir = f.ws
		c.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+filepath.Dir(f.ws))
		out, _ := ownedOutput(c)
		t.Logf("host: git %v:\n%s", h, out)
	}
	f.o.Close()
	audit, _ := os.ReadFile(f.audit)
	told := strings.Contains(string(audit), "Git:") || slices.ContainsFunc(notes, func(n string) bool { return strings.HasPrefix(n, "Git:") })
	if _, err := os.Stat(marker); err == nil && !told {
		t.Errorf("the host's git ran the command's program, and no Git: note told of it (notes %q)", notes)
	}
	return notes
}

// TestHostGitCoreWorktreeElsewhere: a repository whose core.worktree
// names a folder in node_modules, with a submodule there whose
// configuration runs a program: the host's git status enters it; the
// survey follows the submodule there and tells (red team 21: nothing was
// told, and git status ran core.fsmonitor).
func TestHostGitCoreWorktreeElsewhere(t *testing.T) {
	notes := hostGitAfter(t, []string{`W=$PWD/node_modules/wt
mkdir -p $W/sub && cd $W/sub && git init -q . && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m x && git config core.fsmonitor $EVIL
cd - >/dev/null && git init -q . && git --git-dir=$PWD/.git --work-tree=$W add sub && git config core.worktree $W`}, []string{"status"})
	for _, want := range []string{"core.worktree", "core.fsmonitor"} {
		if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, want) }) {
			t.Errorf("%s is not told: %q", want, notes)
		}
	}
}

// TestHostGitSubmoduleUpdateCommand: submodule.<name>.update = !command
// runs the command on the host's git submodule update; it is told (red
// team 21: no list of settings that run a program had it).
func TestHostGitSubmoduleUpdateCommand(t *testing.T) {
	notes := hostGitAfter(t, []string{`git init -q lib && git -C lib -c user.name=a -c user.email=a@b commit -q --allow-empty -m one
git init -q . && git -c protocol.file.allow=always submodule add -q ./lib vendor/lib
git -C vendor/lib -c user.name=a -c user.email=a@b commit -q --allow-empty -m two
git config submodule.vendor/lib.update "!$EVIL"`}, []string{"submodule", "update"})
	if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, "submodule.vendor/lib.update") }) {
		t.Errorf("submodule.vendor/lib.update is not told: %q", notes)
	}
}

// TestUncheckedToldAfterEachCommand: an index the survey cannot read is
// told after every command while it lasts, not once (red team 21 made
// one, told while nothing was there yet, then planted a program in the
// submodule it hid: the next command was told nothing).
func TestUncheckedToldAfterEachCommand(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	for i, cmd := range []string{
		"git init -q . && printf 'DIRC\\0\\0\\0\\2\\0\\0\\0\\1cut short' > .git/index",
		"true",
		"true",
	} {
		r, err := f.exec(t, cmd, false, "")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "could not be read as git reads it") }) {
			t.Errorf("command %d: the unreadable index is not told: %q", i+1, r.Notes)
		}
	}
}

// TestPartialSurveyToldOnce: a workspace whose search stops at its bound
// before any command (a virtualenv's thousands of folders) is told so
// once, after the first command: a repository a command makes past the
// bound is not checked (red team 22 planted one there, untold).
func TestPartialSurveyToldOnce(t *testing.T) {
	requireSandbox(t)
	ws := filepath.Join(t.TempDir(), "ws")
	for i := range 1100 {
		if err := os.MkdirAll(filepath.Join(ws, ".venv/lib", fmt.Sprint(i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pol, err := policy.Parse([]byte("[approval]\nmode = \"never\"\n[sandbox]\nmode = \"workspace-write\"\n"), "test-policy.toml")
	if err != nil {
		t.Fatal(err)
	}
	o, err := New(Config{Policy: pol, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	var told []int
	for i := range 3 {
		r, err := o.Exec(context.Background(), Request{ExecRequest: unifiedexec.ExecRequest{Cmd: "true", Login: noLogin}})
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "is partial here") && strings.Contains(n, "bound") }) {
			told = append(told, i+1)
		}
	}
	if !slices.Equal(told, []int{1}) {
		t.Errorf("the bound reached before any command was told after commands %v, want [1]", told)
	}
}

// TestRunningSessionWarnsOfGit: a call that leaves its session running
// says that what the session does to the repositories is checked only
// later (red team 26 planted a program, had the host's git run it, and
// took it away before any check).
func TestRunningSessionWarnsOfGit(t *testing.T) {
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	r, err := f.o.Exec(context.Background(), Request{ExecRequest: unifiedexec.ExecRequest{Cmd: "sleep 2", Login: noLogin, Yield: 250 * time.Millisecond}})
	if err != nil || r.SessionID == 0 {
		t.Fatalf("no session left running: %v %+v", err, r)
	}
	if !slices.Contains(r.Notes, gitRunningNote) {
		t.Errorf("notes %q", r.Notes)
	}
	done, err := f.exec(t, "true", false, "")
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(done.Notes, gitRunningNote) {
		t.Errorf("a call whose command ended: %q", done.Notes)
	}
}

// TestGitNoteEscaped: what the survey found is the command's to choose
// (a value, a path), and the note escapes it: a carriage return, an
// erase-line and a conceal sequence in a setting hid the note where a
// host shows it on a terminal.
func TestGitNoteEscaped(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	r, err := f.exec(t, `git init -q sub && git -C sub config core.pager "$(printf 'less\r\033[2KALL FINE\033[8m')"`, false, "")
	if err != nil || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("%v %+v", err, r)
	}
	notes := strings.Join(r.Notes, "\n")
	if !strings.Contains(notes, `core.pager = less\r\x1b[2KALL FINE\x1b[8m`) || strings.ContainsAny(notes, "\x1b\r") {
		t.Errorf("the setting is not told escaped: %q", notes)
	}
}

// TestUnsandboxedRunSkipsWritableStartup: with HOME inside a writable
// root (a CI step's scratch home), a command run outside the sandbox is
// not a login shell: red team 30 had a sandboxed command write
// ~/.bash_profile, which the login shell of the next command a rule let
// out of the sandbox ran there.
func TestUnsandboxedRunSkipsWritableStartup(t *testing.T) {
	marker := outsideMarker(t)
	home := t.TempDir() // /tmp: a writable root
	t.Setenv("HOME", home)
	f := newFixture(t, "never", "[[rule]]\npattern = [\"touch\"]\ndecision = \"allow\"\nsandbox = \"danger-full-access\"\n")
	plant := "echo 'touch " + marker + "' > \"$HOME/.bash_profile\""
	if r, err := f.exec(t, plant, false, ""); err != nil || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("planting: %v %+v", err, r)
	}
	r, err := f.o.Exec(context.Background(), Request{ExecRequest: unifiedexec.ExecRequest{Cmd: "touch made"}})
	if err != nil || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("%v %+v", err, r)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the planted ~/.bash_profile ran outside the sandbox")
	}
	if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "Ran without a login shell") }) {
		t.Errorf("no note says why: %q", r.Notes)
	}
	// A sandboxed run keeps its login shell (taken in the sandbox).
	r, err = f.o.Exec(context.Background(), Request{ExecRequest: unifiedexec.ExecRequest{Cmd: "true"}})
	if err != nil || slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "Ran without a login shell") }) {
		t.Errorf("%v %q", err, r.Notes)
	}
}

// TestUnsandboxedRunSkipsWritableBashEnv: a BASH_ENV (an image's, naming
// a file of the home) in a folder sandboxed commands can write is empty
// for a command run outside the sandbox: bash -c would run what a command
// wrote there, outside the sandbox — in exec_command and in the wrapper.
func TestUnsandboxedRunSkipsWritableBashEnv(t *testing.T) {
	marker := outsideMarker(t)
	bashEnv := filepath.Join(t.TempDir(), "bash_env") // /tmp: a writable root
	t.Setenv("BASH_ENV", bashEnv)
	f := newFixture(t, "never", "[[rule]]\npattern = [\"touch\"]\ndecision = \"allow\"\nsandbox = \"danger-full-access\"\n")
	plant := "echo 'touch " + marker + "' > " + bashEnv
	if r, err := f.exec(t, plant, false, ""); err != nil || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("planting: %v %+v", err, r)
	}
	r, err := f.exec(t, "touch made", false, "")
	if err != nil || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("%v %+v", err, r)
	}
	if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "$BASH_ENV empty") }) {
		t.Errorf("no note says why: %q", r.Notes)
	}
	var out bytes.Buffer
	w, done := runOutput(t, &out)
	code, err := f.o.Run(context.Background(), RunRequest{Argv: []string{"/bin/bash", "-c", "touch made2"}, Stdout: w, Stderr: w})
	done()
	if err != nil || code != 0 {
		t.Fatalf("wrapper: %d %v %s", code, err, out.String())
	}
	if !strings.Contains(out.String(), "$BASH_ENV empty") {
		t.Errorf("the wrapper's note is missing: %q", out.String())
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the planted BASH_ENV ran outside the sandbox")
	}
}

// TestUnsandboxedRunReadsNoWritableStartup: what red team 31 had still
// run outside the sandbox with HOME in a writable root — zsh's ~/.zshenv
// (read by every zsh, login or not); Debian bash -c's ~/.bashrc under
// SSH_CLIENT with SHLVL unset; and everything of a HOME the policy's
// [env] set gives commands, which the plan did not see (its
// ~/.gitconfig writable, its ~/.bash_profile run by the next login shell
// let out, its ~/.aws readable).
func TestUnsandboxedRunReadsNoWritableStartup(t *testing.T) {
	rule := "[[rule]]\npattern = [\"touch\"]\ndecision = \"allow\"\nsandbox = \"danger-full-access\"\n"
	plantThenEscape := func(t *testing.T, f *fixture, plant, shell string) *unifiedexec.Response {
		t.Helper()
		if r, err := f.exec(t, plant, false, ""); err != nil || r.ExitCode == nil || *r.ExitCode != 0 {
			t.Fatalf("planting: %v %+v", err, r)
		}
		r, err := f.o.Exec(context.Background(), Request{ExecRequest: unifiedexec.ExecRequest{Cmd: "touch made", Shell: shell}})
		if err != nil || r.ExitCode == nil || *r.ExitCode != 0 {
			t.Fatalf("%v %+v", err, r)
		}
		return r
	}
	t.Run("zshenv", func(t *testing.T) {
		if _, err := exec.LookPath("zsh"); err != nil {
			t.Skip("zsh is not installed")
		}
		m := outsideMarker(t)
		t.Setenv("HOME", t.TempDir())
		f := newFixture(t, "never", rule)
		plantThenEscape(t, f, "echo 'touch "+m+"' > \"$HOME/.zshenv\"", "zsh")
		if _, err := os.Stat(m); err == nil {
			t.Error("the planted ~/.zshenv ran outside the sandbox")
		}
	})
	t.Run("bashrc-over-ssh", func(t *testing.T) {
		m := outsideMarker(t)
		t.Setenv("HOME", t.TempDir())
		t.Setenv("SSH_CLIENT", "10.0.0.1 5555 22")
		t.Setenv("SHLVL", "")
		os.Unsetenv("SHLVL")
		f := newFixture(t, "never", rule)
		plantThenEscape(t, f, "echo 'touch "+m+"' > \"$HOME/.bashrc\"", "")
		if _, err := os.Stat(m); err == nil {
			t.Error("the planted ~/.bashrc ran outside the sandbox")
		}
	})
	t.Run("env-set-relative-bash-env", func(t *testing.T) {
		// Relative, the shell takes it from the workspace; with a "$",
		// bash expands it (red team 32).
		for _, v := range []string{"benv.sh", "$PWD/benv.sh"} {
			m := outsideMarker(t)
			f := newFixture(t, "never", rule+"[env.set]\nBASH_ENV = \""+v+"\"\n")
			r := plantThenEscape(t, f, "echo 'touch "+m+"' > benv.sh", "")
			if _, err := os.Stat(m); err == nil {
				t.Errorf("BASH_ENV=%s: the planted file ran outside the sandbox", v)
			}
			if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "$BASH_ENV empty") }) {
				t.Errorf("BASH_ENV=%s: no note says why: %q", v, r.Notes)
			}
		}
	})
	t.Run("env-set-home", func(t *testing.T) {
		m := outsideMarker(t)
		home := t.TempDir() // /tmp: a writable root
		if err := os.MkdirAll(home+"/.aws", 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(home+"/.aws/credentials", []byte("aws_secret_access_key=CANARY\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		f := newFixture(t, "never", rule+"[env.set]\nHOME = \""+home+"\"\n")
		r, err := f.exec(t, "cat ~/.aws/credentials", false, "")
		if err != nil || strings.Contains(r.Output, "CANARY") {
			t.Fatalf("the commands' HOME's ~/.aws is readable: %v %q", err, r.Output)
		}
		// The first response says the home is writable (red team 31: only
		// policy explain did); the next ones do not repeat it.
		if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.HasPrefix(n, "Sandbox: the home folder "+home) }) {
			t.Errorf("the first response does not say the home is writable: %q", r.Notes)
		}
		if r, err := f.exec(t, "echo '[core] sshCommand = x' > ~/.gitconfig", false, ""); err != nil || r.ExitCode == nil || *r.ExitCode == 0 {
			t.Errorf("the commands' HOME's ~/.gitconfig is writable: %v %+v", err, r)
		}
		r = plantThenEscape(t, f, "echo 'touch "+m+"' > ~/.bash_profile", "")
		if _, err := os.Stat(m); err == nil {
			t.Error("the planted ~/.bash_profile of the commands' HOME ran outside the sandbox")
		}
		if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "Ran without a login shell") }) {
			t.Errorf("no note says why: %q", r.Notes)
		}
	})
}

// outsideMarker is a path outside every writable root that no file holds
// yet (in /var/tmp, which an ordinary user may write too): a planted file
// that makes it ran outside the sandbox. It is removed when the test ends.
func outsideMarker(t *testing.T) string {
	t.Helper()
	m, err := os.CreateTemp("/var/tmp", "ue-outside-")
	if err != nil {
		t.Skipf("no /var/tmp to write a marker outside the writable roots: %v", err)
	}
	m.Close()
	os.Remove(m.Name())
	t.Cleanup(func() { os.Remove(m.Name()) })
	return m.Name()
}

// TestHostGitReaderDependentLinks: a new repository whose configuration
// and hooks folder are links through /proc/self/cwd, which this program
// reads from its own working directory and git from the repository's top
// (red team 42: the host's git status ran the planted fsmonitor, and
// nothing was told). It is told; and a configuration linked to a
// process's own stream (/dev/stdin, a pipe no mount takes) fails no later
// command (red team 42: every command after it failed to start).
func TestHostGitReaderDependentLinks(t *testing.T) {
	notes := hostGitAfter(t, []string{`git init -q r && printf '[core]\n\tfsmonitor = "%s"\n' $EVIL > r/x.cfg && rm r/.git/config && ln -s /proc/self/cwd/x.cfg r/.git/config
mkdir r/h && printf '#!/bin/sh\n%s\n' $EVIL > r/h/pre-commit && chmod +x r/h/pre-commit && rm -rf r/.git/hooks && ln -s /proc/self/cwd/h r/.git/hooks`,
		`git init -q s && rm s/.git/config && ln -s /dev/stdin s/.git/config`,
		`echo still runs`,
	}, []string{"-C", "r", "status"}, []string{"-C", "r", "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "--allow-empty", "-m", "x"})
	for _, want := range []string{"r/.git/config is reached through a link each process reads as its own", "r/.git/hooks is reached through a link each process reads as its own", "s/.git/config is reached through a link each process reads as its own"} {
		if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, want) }) {
			t.Errorf("not told: %q in %q", want, notes)
		}
	}
}

// TestHostGitDotGitLinkToGitFile: a work tree's .git that is a link to a
// regular file holding "gitdir: PATH" is read as git reads it, as a .git
// file (red team 43: only links to folders were followed; the gitdir,
// put where the search does not go, ran its fsmonitor on the host's git
// status, untold). A .git link the survey cannot follow is told.
func TestHostGitDotGitLinkToGitFile(t *testing.T) {
	notes := hostGitAfter(t, []string{`git init -q sub && git -C sub -c user.name=a -c user.email=a@b commit -q --allow-empty -m x
mkdir -p node_modules/evil && mv sub/.git node_modules/evil/g && git -C node_modules/evil/g config core.fsmonitor $EVIL
printf 'gitdir: %s/node_modules/evil/g\n' "$PWD" > gfile && ln -s ../gfile sub/.git
ln -s loop1 loop2 && ln -s loop2 loop1 && mkdir other && ln -s ../loop1 other/.git`}, []string{"-C", "sub", "status"})
	for _, want := range []string{"core.fsmonitor", "other/.git"} {
		if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, want) }) {
			t.Errorf("%s is not told: %q", want, notes)
		}
	}
}

// TestHooksFolderLinkedInRepository: a repository that keeps its hooks in
// the work tree (.git/hooks a link to ../.husky, made by the person before
// any command) runs commands, and its hooks stay read-only to them (red
// team 43: the mount onto the link's path was refused, and every command
// in the workspace failed, exit 125).
func TestHooksFolderLinkedInRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	if out, err := ownedOutput(exec.Command("git", "init", "-q", f.ws)); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	if err := os.MkdirAll(filepath.Join(f.ws, ".husky"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.ws, ".husky", "pre-commit"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(f.ws, ".git", "hooks")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../.husky", filepath.Join(f.ws, ".git", "hooks")); err != nil {
		t.Fatal(err)
	}
	r, err := f.exec(t, "echo runs; echo planted > .husky/pre-commit && echo written", false, "")
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode == nil || !strings.Contains(r.Output, "runs") || strings.Contains(r.Output, "written") {
		t.Fatalf("want the command run and the hook left read-only: %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, ".husky", "pre-commit")); strings.Contains(string(b), "planted") {
		t.Fatal("the hook was rewritten")
	}
}

// TestHooksLinkLocksNothing: a command that links a new repository's
// hooks folder to the workspace (a folder holding the link) or to /
// leaves later commands a writable workspace (red team 44: the
// protecting mount followed the link and made the workspace read-only
// for good; each link to / doubled the mounts, until commands failed).
func TestHooksLinkLocksNothing(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	plant := "git init -q r && rm -rf r/.git/hooks && ln -s ../.. r/.git/hooks"
	for i := range 12 {
		plant += fmt.Sprintf(" && git init -q s%d && rm -rf s%d/.git/hooks && ln -s / s%d/.git/hooks", i, i, i)
	}
	for i, cmd := range []string{plant, "touch still-writable && echo ok", "echo again > still-writable && echo ok"} {
		r, err := f.exec(t, cmd, false, "")
		if err != nil {
			t.Fatalf("command %d: %v", i+1, err)
		}
		if r.ExitCode == nil || *r.ExitCode != 0 {
			t.Fatalf("command %d (%s): %+v", i+1, cmd, r)
		}
	}
}

// TestGitNoteRanksProgramsFirst: a command that writes sixty aliases
// with "!", sixty without and a setting of its own beside a planted
// core.fsmonitor and a filter gets a note that names those two, and the
// rest left out by kind and file (red team 6: fifty aliases sorted by name
// before the core.fsmonitor pushed it into "and 2 more like them").
func TestGitNoteRanksProgramsFirst(t *testing.T) {
	notes := hostGitAfter(t, []string{
		`git init -q . && for i in $(seq 10 69); do git config alias.a$i '!true'; git config alias.b$i status; done && git config foo.bar 1 && git config filter.x.smudge $EVIL && git config core.fsmonitor $EVIL`,
	}, []string{"status"})
	var note string
	for _, n := range notes {
		if strings.HasPrefix(n, "Git: this appeared") {
			note = n
		}
	}
	for _, want := range []string{
		"/.git/config: core.fsmonitor = ", "/.git/config: filter.x.smudge = ", "/.git/config: foo.bar = 1",
		"; and 74 more, not listed here: 14 aliases running a shell command in /", "/.git/config, 60 aliases in /",
	} {
		if !strings.Contains(note, want) {
			t.Errorf("the note does not tell %q: %q", want, note)
		}
	}
}

// TestGitNoteLeftOutNamed: what a note leaves out is named by kind and
// file, ranked, the fewest of a rank first, at most maxNoteGroups of
// them, and the rest counted with those known to run a program among
// them; the partial note is bounded the same.
func TestGitNoteLeftOutNamed(t *testing.T) {
	var items []sandbox.GitItem
	add := func(n, rank int, one, many, where string) {
		for i := range n {
			items = append(items, sandbox.GitItem{Line: fmt.Sprintf("%s %s %d", where, one, i), Rank: rank, One: one, Many: many, Where: where})
		}
	}
	add(100, sandbox.RankAlias, "alias", "aliases", "/ws/.git/config")
	add(maxNoteItems, sandbox.RankEveryday, "pager.* setting", "pager.* settings", "/ws/.git/config")
	add(1, sandbox.RankEveryday, "core.fsmonitor setting", "core.fsmonitor settings", "/ws/sub/.git/config")
	add(2, sandbox.RankEveryday, "hook", "hooks", "/ws/sub/.git/hooks")
	add(3, sandbox.RankUnchecked, "bound of the check reached", "bounds of the check reached", "")
	note := gitNote(items)
	want := "; and 106 more, not listed here: 1 core.fsmonitor setting in /ws/sub/.git/config, 2 hooks in /ws/sub/.git/hooks, 3 bounds of the check reached, 100 aliases in /ws/.git/config (the audit log"
	if !strings.Contains(note, want) {
		t.Errorf("the note does not name what it leaves out as %q: %q", want, note)
	}
	if strings.Contains(note, "alias 0") || !strings.Contains(note, "pager.* setting 49") {
		t.Errorf("the note does not list the first ranked first: %q", note)
	}
	// More kinds and places than a note names: the rest counted, and
	// those that run programs among them told.
	items = nil
	add(maxNoteItems, sandbox.RankEveryday, "hook", "hooks", "/ws/a/.git/hooks")
	for i := range maxNoteGroups + 3 {
		add(1, sandbox.RankEveryday, "hook", "hooks", fmt.Sprintf("/ws/r%02d/.git/hooks", i))
	}
	add(1, sandbox.RankRuns, "merge.*.driver setting", "merge.*.driver settings", "/ws/z/.git/config")
	add(5, sandbox.RankAlias, "alias", "aliases", "/ws/.git/config")
	note = gitPartialNote(items)
	if !strings.Contains(note, fmt.Sprintf("1 hook in /ws/r%02d/.git/hooks, and 9 more of 5 other kinds or places (among them, known to make git run a program: 3 hooks, 1 merge.*.driver setting)", maxNoteGroups-1)) {
		t.Errorf("the note does not count the rest: %q", note)
	}
	if len(note) > 16<<10 {
		t.Errorf("the note is %d bytes", len(note))
	}
}

// TestGitNoteBounded: a command that writes thousands of settings gets a
// note of the first maxNoteItems and a count of the rest, not a note of a
// megabyte; what could not be listed one by one (the core.fsmonitor past
// sandbox's maxConfigItems) comes first.
func TestGitNoteBounded(t *testing.T) {
	notes := hostGitAfter(t, []string{
		"git init -q sub && i=0; while [ $i -lt 5000 ]; do printf '[alias]\\n\\ta%d = !true\\n' $i; i=$((i+1)); done >> sub/.git/config && git -C sub config core.fsmonitor $EVIL",
	}, []string{"-C", "sub", "status"})
	var note string
	for _, n := range notes {
		if strings.HasPrefix(n, "Git: this appeared") {
			note = n
		}
	}
	if note == "" {
		t.Fatalf("no note: %q", notes)
	}
	if len(note) > 64<<10 {
		t.Errorf("the note is %d bytes", len(note))
	}
	if !strings.Contains(note, "more, not listed here: ") || !strings.Contains(note, " aliases running a shell command in ") {
		t.Errorf("the note does not say what more there is: %.400s", note[max(0, len(note)-600):])
	}
	t.Logf("%s", note[max(0, len(note)-600):])
	// The core.fsmonitor, past the entries listed one by one, is in
	// the folded item, which comes first.
	if !strings.Contains(note, "sub/.git/config: ") || !strings.Contains(note, " more entries that are not known to be harmless") {
		t.Errorf("the note does not tell the folded entries: %.600s", note)
	}
}

// TestKeptProtectedPastTheBudget (red team 6, F5): a program the host's
// repository names (projA's core.fsmonitor, a script of its work tree)
// stays read-only for the orchestrator's life once its first plan kept
// it so, even after a command made a repository (the workspace's own)
// whose configuration spends the survey's budget and the host changed
// projA's since (so that it is no longer the older, surveyed first),
// leaving projA's unread: a later command cannot rewrite the script,
// which the host's git status in projA runs.
func TestKeptProtectedPastTheBudget(t *testing.T) {
	const maxEntriesForTest = 100_000 // the survey's budget of entries (sandbox's maxSurveyConfigEntries)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	proj := filepath.Join(f.ws, "projA")
	script := filepath.Join(proj, "tools", "fsmon.sh")
	for _, args := range [][]string{{"init", "-q", proj}, {"-C", proj, "config", "core.fsmonitor", "tools/fsmon.sh"}} {
		if out, err := ownedOutput(exec.Command("git", args...)); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	os.MkdirAll(filepath.Dir(script), 0o755)
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(cmd string) *unifiedexec.Response {
		t.Helper()
		r, err := f.exec(t, cmd, false, "")
		if err != nil || r.ExitCode == nil {
			t.Fatalf("%s: %v %+v", cmd, err, r)
		}
		return r
	}
	if r := run("echo x >> projA/tools/fsmon.sh"); *r.ExitCode == 0 {
		t.Fatalf("the script is not read-only to start with: %+v", r)
	}
	// The workspace's own repository, surveyed before the nested one,
	// with more entries than the survey reads in all.
	run(fmt.Sprintf("git init -q . && { printf '[x]\\n'; seq %d | sed 's/.*/\\ta& = b/'; } >> .git/config", 2*maxEntriesForTest))
	// The host changes projA's configuration since: it is no longer the
	// older one, surveyed first.
	if out, err := ownedOutput(exec.Command("git", "-C", proj, "config", "user.name", "host")); err != nil {
		t.Fatalf("git config: %v %s", err, out)
	}
	r := run("echo evil >> projA/tools/fsmon.sh; echo exit=$?")
	body, _ := os.ReadFile(script)
	if strings.Contains(string(body), "evil") {
		t.Errorf("a command rewrote the host's fsmonitor script once the survey's budget was spent: %q (notes %q)", body, r.Notes)
	}
	if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "projA/.git/config") }) {
		t.Fatalf("projA's configuration was read whole (notes %q): the budget did not reach it, and the test tries nothing", r.Notes)
	}
}
