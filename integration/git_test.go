//go:build linux

package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Git in the sandbox (git = "commit", the default): everyday work in the
// workspace's repository commits, and nothing a command writes makes the
// host's git run a program. Every attack is followed by the host's own
// git commit (and checkout, status), outside the sandbox, which must not
// run anything planted: a planted hook appends to a file outside every
// writable root, which only the host could write.

// TestGit runs everything on both spawn paths, as TestEscape does.
func TestGit(t *testing.T) {
	for _, m := range []struct {
		name string
		env  []string
	}{
		{"thread", nil},
		{"helper", []string{"UNIFIED_EXEC_SPAWN=helper"}},
	} {
		t.Run(m.name, func(t *testing.T) {
			spawnEnv = m.env
			defer func() { spawnEnv = nil }()
			t.Run("Everyday", gitEveryday)
			t.Run("EverydayWorktree", gitEverydayWorktree)
			t.Run("HostHook", gitHostHook)
			t.Run("Attacks", gitAttacks)
			t.Run("MadeInside", gitMadeInside)
		})
	}
}

// gitEnv is a sandboxEnv whose workspace is a repository with one commit
// on main, and whose fake home holds a git identity.
type gitEnv struct {
	*sandboxEnv
	root string // the test's folder, outside every writable root
	mark string // where a planted hook leaves its trace
}

// hostGitConfig is the fake home's ~/.gitconfig.
const hostGitConfig = "[user]\n\tname = Host\n\temail = host@example.com\n[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n[advice]\n\tdetachedHead = false\n"

func newGitEnv(t *testing.T, policy string, setup func(t *testing.T, home, ws string)) *gitEnv {
	t.Helper()
	e := newSandboxEnvWith(t, sandboxOpts{policy: policy, setup: func(t *testing.T, home, ws string) {
		if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(hostGitConfig), 0o644); err != nil {
			t.Fatal(err)
		}
		hostGit(t, home, ws, "symbolic-ref", "HEAD", "refs/heads/main")
		os.WriteFile(filepath.Join(ws, "README"), []byte("readme\n"), 0o644)
		hostGit(t, home, ws, "add", "README")
		hostGit(t, home, ws, "commit", "-qm", "base")
		if setup != nil {
			setup(t, home, ws)
		}
	}})
	root := filepath.Dir(e.ws)
	return &gitEnv{sandboxEnv: e, root: root, mark: filepath.Join(root, "PLANTED")}
}

// hostGit runs git as the host does, outside the sandbox, with the fake
// home, and fails the test if it fails.
func hostGit(t *testing.T, home, dir string, args ...string) string {
	t.Helper()
	out, err := hostGitErr(home, dir, args...)
	if err != nil {
		t.Fatalf("host: git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return out
}

func hostGitErr(home, dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "XDG_CONFIG_HOME=", "GIT_EDITOR=true")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// plant is a command that writes an executable hook at path, which
// leaves a trace in mark when it runs.
func plant(path, mark string) string {
	return fmt.Sprintf("printf '#!/bin/sh\\necho %s >> %s\\n' > %s && chmod +x %s", filepath.Base(path), mark, path, path)
}

// mustRun runs cmd in the sandbox and fails the test unless it exits 0
// with want in its output.
func (e *gitEnv) mustRun(t *testing.T, cmd, want string) string {
	t.Helper()
	code, out := e.run(t, cmd)
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("%q: exit %d, want 0 and %q:\n%s", cmd, code, want, out)
	}
	return out
}

// noTrace fails the test if a planted hook ran.
func (e *gitEnv) noTrace(t *testing.T) {
	t.Helper()
	if b, err := os.ReadFile(e.mark); err == nil {
		t.Fatalf("the host's git ran what a sandboxed command planted: %s", b)
	}
}

// newRemote makes a bare repository in /tmp (a writable root) with the
// workspace's main, adds it as origin, and pushes one more commit to it
// from another clone, so that there is something to fetch.
func newRemote(t *testing.T, home, repo string) string {
	t.Helper()
	remote, err := os.MkdirTemp("/tmp", "ue-remote-*.git")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(remote) })
	hostGit(t, home, remote, "init", "-q", "--bare")
	hostGit(t, home, repo, "remote", "add", "origin", remote)
	hostGit(t, home, repo, "push", "-q", "origin", "main")
	up := filepath.Join(filepath.Dir(repo), "upstream")
	hostGit(t, home, filepath.Dir(repo), "clone", "-q", remote, up)
	os.WriteFile(filepath.Join(up, "upstream.txt"), []byte("up\n"), 0o644)
	hostGit(t, home, up, "add", "upstream.txt")
	hostGit(t, home, up, "commit", "-qm", "upstream")
	hostGit(t, home, up, "push", "-q", "origin", "main")
	return remote
}

// everyday runs the everyday list in the workspace, on branch base, and
// checks from the host what it did.
func everyday(t *testing.T, e *gitEnv, base, remote string) {
	steps := []struct{ name, cmd, want string }{
		{"add and commit", "echo one > one.txt && git add one.txt && git commit -qm one && git log --format=%s -1", "one"},
		{"branch and checkout", "git branch feature && git checkout -q feature && git rev-parse --abbrev-ref HEAD", "feature"},
		{"commit on a branch", "echo f > f.txt && git add f.txt && git commit -qm feature-commit && echo ok", "ok"},
		{"switch", "git switch -q " + base + " && git rev-parse --abbrev-ref HEAD", base},
		{"stash", "echo wip > wip.txt && git add wip.txt && git stash -q && git stash list | grep -c stash@ && test ! -e wip.txt && git stash pop -q && git commit -qm wip && echo ok", "ok"},
		{"merge", "git merge -q --no-edit feature && git log --format=%s -1", "Merge branch 'feature'"},
		{"rebase", "git checkout -q -b topic HEAD~2 && echo t > t.txt && git add t.txt && git commit -qm topic-commit && git rebase -q " + base + " && git log --format=%s -2 | tr '\\n' ' '", "topic-commit Merge branch"},
		{"cherry-pick", "git switch -q " + base + " && git cherry-pick topic >/dev/null && git log --format=%s -1", "topic-commit"},
		{"tag", "git tag v1 && git tag -a v2 -m v2 && git tag | tr '\\n' ' '", "v1 v2"},
		{"reset", "git reset -q --soft HEAD~1 && git commit -qm again && git reset -q --hard && git log --format=%s -1", "again"},
		{"gc", "git gc -q && git count-objects -v | grep -E '^packs: [1-9]'", "packs:"},
		{"fetch", "git fetch -q origin && git merge -q --no-edit origin/main && git log --format=%s -1", "Merge remote-tracking branch"},
		{"push", "git push -q origin " + base + ":pushed && echo pushed", "pushed"},
		{"status is clean", "git status --porcelain --untracked-files=no | wc -l", "0"},
	}
	for _, s := range steps {
		e.mustRun(t, s.cmd, s.want)
	}
	// The host sees the work: the history, the remote, a sound repository.
	if got := hostGit(t, e.home, e.ws, "log", "--format=%s", base); !strings.Contains(got, "again") || !strings.Contains(got, "upstream") {
		t.Errorf("the host does not see the commits:\n%s", got)
	}
	if got := hostGit(t, e.home, remote, "log", "--format=%s", "pushed"); !strings.Contains(got, "again") {
		t.Errorf("the remote did not get the push:\n%s", got)
	}
	hostGit(t, e.home, e.ws, "fsck", "--no-progress")
	// What runs stays read-only, with all this writable.
	for _, cmd := range []string{plant("$(git rev-parse --git-common-dir)/hooks/pre-commit", e.mark), "echo '[core]' >> $(git rev-parse --git-common-dir)/config", "git config core.hooksPath /tmp", "git remote add evil /tmp"} {
		if code, out := e.run(t, cmd); code == 0 {
			t.Errorf("%q succeeded: %s", cmd, out)
		}
	}
	hostGit(t, e.home, e.ws, "commit", "--allow-empty", "-qm", "host")
	e.noTrace(t)
}

// everydayPolicy is the default but for its rules: git push asks there.
const everydayPolicy = "[sandbox]\ngit = \"commit\"\n"

// gitEveryday: the everyday list in a fresh repository (the workspace).
func gitEveryday(t *testing.T) {
	var remote string
	e := newGitEnv(t, everydayPolicy, func(t *testing.T, home, ws string) { remote = newRemote(t, home, ws) })
	everyday(t, e, "main", remote)
}

// gitEverydayWorktree: the same in a linked worktree, whose gitdir and
// common directory lie outside the workspace; its .git file stays
// read-only.
func gitEverydayWorktree(t *testing.T) {
	var remote, main string
	e := newGitEnv(t, everydayPolicy, func(t *testing.T, home, ws string) {
		// The repository moves beside the workspace, which becomes one
		// of its linked worktrees, on branch work.
		main = filepath.Join(filepath.Dir(ws), "main")
		if err := os.Rename(ws, main); err != nil {
			t.Fatal(err)
		}
		remote = newRemote(t, home, main)
		hostGit(t, home, main, "worktree", "add", "-q", "-b", "work", ws)
	})
	if got := e.mustRun(t, "git rev-parse --git-dir --git-common-dir", main); !strings.Contains(got, main+"/.git/worktrees/ws") {
		t.Fatalf("not a linked worktree: %s", got)
	}
	everyday(t, e, "work", remote)
	for _, cmd := range []string{"echo 'gitdir: /tmp' > .git", "rm -f .git", "echo /tmp > " + main + "/.git/worktrees/ws/commondir"} {
		if code, out := e.run(t, cmd); code == 0 {
			t.Errorf("%q succeeded: %s", cmd, out)
		}
	}
	if got := hostGit(t, e.home, main, "log", "--format=%s", "work"); !strings.Contains(got, "again") {
		t.Errorf("the main repository does not see the worktree's commits:\n%s", got)
	}
}

// gitHostHook: a pre-commit hook the host installed runs on the host's
// commit of what the agent staged, and sees it.
func gitHostHook(t *testing.T) {
	var saw string
	e := newGitEnv(t, "", func(t *testing.T, home, ws string) {
		saw = filepath.Join(filepath.Dir(ws), "hook-saw")
		hook := fmt.Sprintf("#!/bin/sh\ngit diff --cached --name-only > %s\n", saw)
		if err := os.WriteFile(filepath.Join(ws, ".git", "hooks", "pre-commit"), []byte(hook), 0o755); err != nil {
			t.Fatal(err)
		}
	})
	e.mustRun(t, "echo staged > staged.txt && git add staged.txt && git status --porcelain", "A  staged.txt")
	e.mustRun(t, "cat .git/hooks/pre-commit", "git diff --cached")
	if code, out := e.run(t, "echo 'echo planted >> "+e.mark+"' >> .git/hooks/pre-commit"); code == 0 {
		t.Fatalf("the host's hook was changed: %s", out)
	}
	hostGit(t, e.home, e.ws, "commit", "-qm", "host commits the agent's work")
	if b, err := os.ReadFile(saw); err != nil || strings.TrimSpace(string(b)) != "staged.txt" {
		t.Fatalf("the host's pre-commit hook did not see what was staged: %q %v", b, err)
	}
	if got := hostGit(t, e.home, e.ws, "show", "--name-only", "--format=%s", "HEAD"); !strings.Contains(got, "staged.txt") {
		t.Errorf("the commit lacks the staged file:\n%s", got)
	}
	e.noTrace(t)
}

// gitAttacks: each way to make the host's git run a program, from inside;
// then the host's own commit, checkout and status in every repository.
func gitAttacks(t *testing.T) {
	evil, err := os.MkdirTemp("/tmp", "ue-evil-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(evil) })
	var lib string
	// A policy without rules: every attack reaches the sandbox, which must
	// hold on its own (the default rules refuse some before it runs: a
	// git configuration file named by GIT_CONFIG_GLOBAL cannot be judged).
	e := newGitEnv(t, "[approval]\nmode = \"on-request\"\n", func(t *testing.T, home, ws string) {
		root := filepath.Dir(ws)
		// A nested repository, a submodule, a linked worktree inside the
		// workspace, a repository without hooks/, husky's layout
		// (core.hooksPath = .husky/_), and an included configuration
		// file in the work tree.
		nested := filepath.Join(ws, "nested")
		os.Mkdir(nested, 0o755)
		hostGit(t, home, nested, "init", "-q")
		hostGit(t, home, nested, "commit", "-q", "--allow-empty", "-m", "nested")
		lib = filepath.Join(root, "lib")
		os.Mkdir(lib, 0o755)
		hostGit(t, home, lib, "init", "-q")
		hostGit(t, home, lib, "commit", "-q", "--allow-empty", "-m", "lib")
		hostGit(t, home, ws, "submodule", "add", "-q", lib, "sub")
		hostGit(t, home, ws, "commit", "-qm", "submodule")
		hostGit(t, home, ws, "worktree", "add", "-q", "-b", "wt", "wt")
		bare := filepath.Join(ws, "nohooks")
		os.Mkdir(bare, 0o755)
		hostGit(t, home, bare, "init", "-q", "--template=")
		hostGit(t, home, bare, "commit", "-q", "--allow-empty", "-m", "nohooks")
		os.RemoveAll(filepath.Join(bare, ".git", "hooks"))
		husky := filepath.Join(ws, ".husky")
		os.MkdirAll(filepath.Join(husky, "_"), 0o755)
		os.WriteFile(filepath.Join(husky, "_", "h"), []byte("#!/bin/sh\ns=\"$(dirname \"$(dirname \"$0\")\")/$(basename \"$0\")\"\n[ -f \"$s\" ] || exit 0\nsh -e \"$s\"\n"), 0o755)
		for _, h := range []string{"pre-commit", "post-checkout", "commit-msg"} {
			os.WriteFile(filepath.Join(husky, "_", h), []byte("#!/bin/sh\n. \"$(dirname \"$0\")/h\"\n"), 0o755)
		}
		os.WriteFile(filepath.Join(husky, "pre-commit"), []byte("echo host-lint\n"), 0o644)
		hostGit(t, home, ws, "config", "core.hooksPath", ".husky/_")
		os.WriteFile(filepath.Join(ws, "shared.gitconfig"), []byte("[user]\n\tname = Host\n"), 0o644)
		hostGit(t, home, ws, "config", "include.path", "../shared.gitconfig")
	})
	// The agent's own hooks folder, in /tmp: writable, and what every
	// attack tries to make the host's git use.
	e.mustRun(t, "mkdir -p "+evil+"/hooks && "+plant(evil+"/hooks/pre-commit", e.mark)+" && cp "+evil+"/hooks/pre-commit "+evil+"/hooks/post-checkout && echo ready", "ready")
	// A gitdir of the agent's making, for pointers to be sent to.
	e.mustRun(t, "git init -q --bare "+evil+"/repo.git && cp -r "+evil+"/hooks/. "+evil+"/repo.git/hooks/ && echo ready", "ready")
	hook := func(p string) string { return plant(p, e.mark) }
	refused := []struct{ name, cmd string }{
		// Write or chmod each protected file.
		{"config", "echo '[core]' >> .git/config"},
		{"chmod config", "chmod 666 .git/config"},
		{"hook", hook(".git/hooks/pre-commit")},
		{"hook from a sample", "mv .git/hooks/pre-commit.sample .git/hooks/pre-commit"},
		{"chmod a sample", "chmod +x .git/hooks/post-update.sample && cp .git/hooks/post-update.sample .git/hooks/post-checkout"},
		{"chmod hooks", "chmod 777 .git/hooks"},
		{"remove hooks", "rm -rf .git/hooks"},
		{"move hooks", "mv .git/hooks .git/hooks-old"},
		{"move .git", "mv .git .git-old"},
		{"submodule config", "echo '[core]' >> .git/modules/sub/config"},
		{"submodule hook", hook(".git/modules/sub/hooks/pre-commit")},
		{"worktree commondir", "echo " + evil + "/repo.git > .git/worktrees/wt/commondir"},
		{"worktree gitdir", "echo " + evil + "/x/.git > .git/worktrees/wt/gitdir"},
		// A hook in a nested repository.
		{"nested hook", hook("nested/.git/hooks/pre-commit")},
		{"nested config", "echo '[core]' >> nested/.git/config"},
		{"nested moved", "mv nested nested-old"},
		{"nested .git moved", "mv nested/.git nested/git-old"},
		// A submodule: its pointer, and the folders on the way.
		{"submodule pointer", "echo 'gitdir: " + evil + "/repo.git' > sub/.git"},
		{"submodule pointer removed", "rm -f sub/.git"},
		{"submodule moved", "mv sub sub-old"},
		{"modules moved", "mv .git/modules .git/modules-old"},
		{"module moved", "mv .git/modules/sub .git/modules/sub-old"},
		// A repointed worktree pointer, and a moved parent of its gitdir.
		{"worktree pointer", "echo 'gitdir: " + evil + "/repo.git' > wt/.git"},
		{"worktree pointer removed", "rm -f wt/.git"},
		{"worktree moved", "mv wt wt-old"},
		{"worktrees moved", "mv .git/worktrees .git/worktrees-old"},
		{"worktree gitdir moved", "mv .git/worktrees/wt .git/worktrees/wt-old"},
		// core.hooksPath: husky's folder, in the work tree.
		{"husky script", "echo 'echo planted >> " + e.mark + "' >> .husky/pre-commit"},
		{"husky stub", hook(".husky/_/pre-commit")},
		{"husky moved", "mv .husky .husky-old"},
		{"husky removed", "rm -rf .husky"},
		// A repository that had no hooks/.
		{"hooks made", "mkdir -p nohooks/.git/hooks && " + hook("nohooks/.git/hooks/pre-commit")},
		// An included configuration file.
		{"included config", "printf '[core]\\n\\thooksPath = " + evil + "/hooks\\n' >> shared.gitconfig"},
		// GIT_CONFIG_* and friends: they only change where git writes.
		{"git config", "git config core.hooksPath " + evil + "/hooks"},
		{"git config --global", "git config --global core.hooksPath " + evil + "/hooks"},
		{"GIT_CONFIG_GLOBAL", "GIT_CONFIG_GLOBAL=$PWD/.git/config git config --global core.hooksPath " + evil + "/hooks"},
		{"GIT_CONFIG", "GIT_CONFIG=$PWD/.git/config git config core.hooksPath " + evil + "/hooks"},
		{"GIT_CONFIG_COUNT", "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0=" + evil + "/hooks/pre-commit git config --local core.fsmonitor " + evil + "/hooks/pre-commit"},
		{"GIT_DIR", "GIT_DIR=nested/.git git config core.hooksPath " + evil + "/hooks"},
		{"config --file", "git config --file .git/modules/sub/config core.hooksPath " + evil + "/hooks"},
		{"config --worktree", "git -C wt config --worktree core.hooksPath " + evil + "/hooks"},
		{"submodule config by git", "git -C sub config core.hooksPath " + evil + "/hooks"},
	}
	for _, c := range refused {
		if code, out := e.run(t, c.cmd); code == 0 {
			t.Errorf("%s: %q succeeded: %s", c.name, c.cmd, out)
		}
	}
	// A working directory inside a gitdir sees it as every other path
	// does.
	for _, c := range []struct{ workdir, cmd string }{
		{".git/hooks", hook("pre-commit")},
		{".git", "echo '[core]' >> config"},
		{".git/modules/sub/hooks", hook("post-checkout")},
		{"nested/.git/hooks", hook("pre-commit")},
		{".husky", "echo 'echo planted >> " + e.mark + "' >> pre-commit"},
	} {
		text, isErr, res := e.call("exec_command", map[string]any{"cmd": c.cmd, "workdir": c.workdir, "login": false, "yield_time_ms": 20000})
		if code, ok := structured(t, res)["exit_code"].(float64); !isErr && ok && code == 0 {
			t.Errorf("%q in %s succeeded: %s", c.cmd, c.workdir, text)
		}
	}
	// Allowed, and harmless: git reads config.worktree only where
	// extensions.worktreeConfig is on, which only config can say.
	e.mustRun(t, "printf '[core]\\n\\thooksPath = "+evil+"/hooks\\n' > .git/config.worktree && printf '[core]\\n\\thooksPath = "+evil+"/hooks\\n' > .git/worktrees/wt/config.worktree && echo written", "written")

	// A refused git config leaves no lock behind for the host to trip on.
	for _, lock := range []string{"/.git/config.lock", "/.git/modules/sub/config.lock", "/nested/.git/config.lock"} {
		if _, err := os.Stat(e.ws + lock); err == nil {
			t.Errorf("%s was left behind", lock)
		}
	}
	// The host's own git, in every repository.
	for _, dir := range []string{e.ws, e.ws + "/nested", e.ws + "/sub", e.ws + "/wt", e.ws + "/nohooks"} {
		hostGit(t, e.home, dir, "commit", "--allow-empty", "-qm", "host")
		hostGit(t, e.home, dir, "status", "--porcelain")
		hostGit(t, e.home, dir, "checkout", "-q", "-b", "host-after-"+filepath.Base(dir))
	}
	e.noTrace(t)
	// The host's own husky hook still ran (checkout above ran none, the
	// commit ran pre-commit).
	if out := hostGit(t, e.home, e.ws, "commit", "--allow-empty", "-m", "lint"); !strings.Contains(out, "host-lint") {
		t.Errorf("the host's husky hook did not run: %s", out)
	}
}

// gitMadeInside: a repository made inside (git init, git clone) is
// covered from the next command on; the hook and the settings that run
// programs written in it by the command that made it are reported, in
// the response and the audit log; and so is a commondir planted in the
// workspace's gitdir, which no mount can stop.
func gitMadeInside(t *testing.T) {
	e := newGitEnv(t, "[audit]\npath = \"%WS%/../audit.jsonl\"\n", nil)
	cmd := "git init -q made && " + plant("made/.git/hooks/pre-commit", e.mark) +
		" && git -C made config core.hooksPath ../githooks && git -C made config core.fsmonitor ./fsmonitor.sh && git clone -q . cloned && echo done"
	text, isErr, _ := e.call("exec_command", map[string]any{"cmd": cmd, "login": false, "yield_time_ms": 20000})
	if isErr || !strings.Contains(output(text), "done") {
		t.Fatalf("%s", text)
	}
	for _, want := range []string{"Git: ", e.ws + "/made/.git/hooks/pre-commit", "core.hookspath = ../githooks", "core.fsmonitor = ./fsmonitor.sh"} {
		if !strings.Contains(text, want) {
			t.Errorf("the response does not report %q:\n%s", want, text)
		}
	}
	// Said once: the next command's response is quiet about it.
	if text := e.exec(map[string]any{"cmd": "true"}); strings.Contains(text, "Git: ") {
		t.Errorf("reported again:\n%s", text)
	}
	for _, cmd := range []string{
		"echo x >> made/.git/hooks/pre-commit", "echo '[core]' >> made/.git/config", plant("made/.git/hooks/post-checkout", e.mark),
		"echo '[core]' >> cloned/.git/config", plant("cloned/.git/hooks/pre-commit", e.mark), plant("githooks/pre-commit", e.mark),
	} {
		if code, out := e.run(t, cmd); code == 0 {
			t.Errorf("%q succeeded in a repository made by an earlier command: %s", cmd, out)
		}
	}
	// A commondir made where there was none sends the hooks elsewhere;
	// no mount can stop a new name, so it is reported.
	text = e.exec(map[string]any{"cmd": "echo /tmp/elsewhere > .git/commondir"})
	os.Remove(e.ws + "/.git/commondir")
	if !strings.Contains(text, e.ws+"/.git/commondir points to /tmp/elsewhere") {
		t.Errorf("the commondir is not reported:\n%s", text)
	}
	// The audit log has it too.
	f, err := os.Open(filepath.Join(e.root, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev struct {
			Event string   `json:"event"`
			Git   []string `json:"git"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Event == "git" {
			got = append(got, ev.Git...)
		}
	}
	joined := strings.Join(got, "\n")
	for _, want := range []string{"made/.git/hooks/pre-commit", "core.hookspath = ../githooks", "commondir points to /tmp/elsewhere"} {
		if !strings.Contains(joined, want) {
			t.Errorf("the audit log lacks %q:\n%s", want, joined)
		}
	}
}
