package sandbox

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/policy"
)

// gitTree is a fake home with a git identity and a workspace, for tests
// that make real repositories.
type gitTree struct {
	root, home, ws string
}

func newGitTree(t *testing.T) gitTree {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is needed")
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	g := gitTree{root: root, home: root + "/home", ws: root + "/ws"}
	mkdir(t, g.home)
	mkdir(t, g.ws)
	t.Setenv("HOME", g.home)
	t.Setenv("TMPDIR", "")
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	g.git(t, "", "config", "--global", "user.name", "Test")
	g.git(t, "", "config", "--global", "user.email", "test@example.com")
	g.git(t, "", "config", "--global", "protocol.file.allow", "always")
	g.git(t, "", "config", "--global", "init.defaultBranch", "main")
	return g
}

// git runs git in dir (relative to the workspace; "" for the workspace).
func (g gitTree) git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = filepath.Join(g.ws, dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, cmd.Dir, err, out)
	}
	return string(out)
}

// repo makes a repository with one commit at dir.
func (g gitTree) repo(t *testing.T, dir string) {
	t.Helper()
	mkdir(t, filepath.Join(g.ws, dir))
	g.git(t, dir, "init", "-q")
	if err := os.WriteFile(filepath.Join(g.ws, dir, "README"), []byte("r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g.git(t, dir, "add", "README")
	g.git(t, dir, "commit", "-qm", "first")
}

func (g gitTree) write(t *testing.T, name, body string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(g.ws, name)
	mkdir(t, filepath.Dir(p))
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
}

func (g gitTree) plan(t *testing.T, mod func(p *policy.Sandbox)) Plan {
	t.Helper()
	p := policy.DefaultSandbox()
	p.ExcludeSlashTmp = true
	if mod != nil {
		mod(&p)
	}
	plan, err := Compile(p, g.ws)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// watch is the git state of g's workspace under the default policy
// (without /tmp, which is the machine's).
func (g gitTree) watch(t *testing.T) GitState {
	t.Helper()
	p := policy.DefaultSandbox()
	p.ExcludeSlashTmp = true
	st, err := WatchGit(p, g.ws)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestCompileGit: every repository a host's git may use under the
// workspace is found, and what makes git run a program in it is kept
// read-only; the rest of each gitdir is left writable.
func TestCompileGit(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	g.repo(t, "a/b/nested")
	g.repo(t, "1/2/3/4")          // depth 4: found
	g.repo(t, "1/2/3/4/5/deeper") // depth 6: found too (the bound is the folders read)
	g.repo(t, "node_modules/dep") // not entered
	mkdir(t, g.ws+"/remote.git")
	g.git(t, "remote.git", "init", "-q", "--bare")
	g.repo(t, "../lib")
	g.git(t, "", "submodule", "add", "-q", "../lib", "sub")
	g.git(t, "", "worktree", "add", "-q", "wt")
	g.git(t, "", "config", "core.hooksPath", ".husky/_")
	g.git(t, "", "config", "core.fsmonitor", "./tools/fsmonitor.sh")
	g.git(t, "", "config", "alias.lint", "!sh ./tools/lint.sh --fix")
	g.git(t, "", "config", "include.path", "../shared.gitconfig")
	g.write(t, "shared.gitconfig", "[filter \"x\"]\n\tclean = tools/clean.sh\n", 0o644)
	g.write(t, "tools/fsmonitor.sh", "#!/bin/sh\n", 0o755)
	g.write(t, "tools/lint.sh", "#!/bin/sh\n", 0o755)
	g.write(t, "tools/clean.sh", "#!/bin/sh\n", 0o755)
	g.write(t, "tools/other.sh", "#!/bin/sh\n", 0o755)
	ln := filepath.Join(g.ws, "linked")
	mkdir(t, ln)
	symlink(t, g.ws+"/a/b/nested/.git", ln+"/.git")

	plan := g.plan(t, nil)
	ws := g.ws
	wantProtected := []string{
		ws + "/.git/hooks", ws + "/.git/config",
		ws + "/.git/modules/sub/hooks", ws + "/.git/modules/sub/config",
		ws + "/.git/worktrees/wt/commondir", ws + "/.git/worktrees/wt/gitdir",
		ws + "/sub/.git", ws + "/wt/.git",
		ws + "/a/b/nested/.git/hooks", ws + "/a/b/nested/.git/config",
		ws + "/1/2/3/4/.git/hooks", ws + "/1/2/3/4/5/deeper/.git/hooks",
		ws + "/remote.git/hooks", ws + "/remote.git/config",
		ws + "/.husky", ws + "/wt/.husky",
		ws + "/tools/fsmonitor.sh", ws + "/tools/lint.sh", ws + "/tools/clean.sh",
		ws + "/shared.gitconfig",
	}
	for _, p := range wantProtected {
		if !slices.Contains(plan.Protected, p) {
			t.Errorf("%s is not protected", p)
		}
	}
	for _, p := range []string{ws + "/node_modules/dep/.git/hooks", ws + "/tools/other.sh", ws + "/.git/index", ws + "/.git", ws + "/sub/.husky"} {
		if slices.Contains(plan.Protected, p) {
			t.Errorf("%s is protected", p)
		}
	}
	for _, p := range []string{ws + "/.git", ws + "/.git/modules/sub", ws + "/.git/worktrees/wt", ws + "/a/b/nested/.git", ws + "/remote.git"} {
		if !slices.Contains(plan.GitDirs, p) {
			t.Errorf("%s is not among the gitdirs %v", p, plan.GitDirs)
		}
	}
	// husky's hooks folders do not exist yet: they are made to be
	// covered, in the work tree of each worktree of the repository (the
	// submodule's own configuration names none).
	for _, p := range []string{ws + "/.husky", ws + "/wt/.husky"} {
		if !slices.Contains(plan.MakeDirs, p) {
			t.Errorf("%s is not made: %v", p, plan.MakeDirs)
		}
	}
	if !slices.ContainsFunc(plan.Notes, func(n string) bool { return strings.Contains(n, ln+"/.git is a symbolic link") }) {
		t.Errorf("no note on the .git link: %v", plan.Notes)
	}
	// Without a mount namespace, every gitdir is carved whole.
	for _, p := range []string{ws + "/.git/index", ws + "/.git/objects", ws + "/remote.git/refs", ws + "/a/b/nested/.git/HEAD"} {
		if covers(plan.Write, p, AccessReadWrite) {
			t.Errorf("%s is writable without a mount namespace", p)
		}
	}

	ro := g.plan(t, func(p *policy.Sandbox) { p.Git = policy.GitReadOnly })
	for _, p := range []string{ws + "/.git", ws + "/a/b/nested/.git", ws + "/remote.git", ws + "/sub/.git", ws + "/.husky"} {
		if !slices.Contains(ro.Protected, p) {
			t.Errorf("git = read-only: %s is not protected whole: %v", p, ro.Protected)
		}
	}
	if len(ro.GitDirs) != 0 || ro.Git != policy.GitReadOnly {
		t.Errorf("git = read-only: gitdirs %v, git %q", ro.GitDirs, ro.Git)
	}
}

// TestCompileGitGlobalHooksPath: the relative core.hooksPath of the
// user's own configuration is each repository's.
func TestCompileGitGlobalHooksPath(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	g.repo(t, "inner")
	g.git(t, "", "config", "--global", "core.hooksPath", ".githooks")
	plan := g.plan(t, nil)
	for _, p := range []string{g.ws + "/.githooks", g.ws + "/inner/.githooks"} {
		if !slices.Contains(plan.Protected, p) || !slices.Contains(plan.MakeDirs, p) {
			t.Errorf("%s: not protected and made: %v / %v", p, plan.Protected, plan.MakeDirs)
		}
	}
	// The user's configuration itself, when inside a writable root.
	plan = g.plan(t, func(p *policy.Sandbox) { p.WritableRoots = []string{g.home} })
	if !slices.Contains(plan.Protected, g.home+"/.gitconfig") {
		t.Errorf("~/.gitconfig in a writable root is not protected: %v", plan.Protected)
	}
}

// TestCompileGitHooksPathMissing: a core.hooksPath that does not exist
// yet is made, with the folders on the way, so that it can be covered.
func TestCompileGitHooksPathMissing(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	g.git(t, "", "config", "core.hooksPath", "tools/git/hooks")
	plan := g.plan(t, nil)
	want := []string{g.ws + "/tools", g.ws + "/tools/git", g.ws + "/tools/git/hooks"}
	made := slices.DeleteFunc(slices.Clone(plan.MakeDirs), func(d string) bool { return within(d, g.ws+"/.git") }) // remotes/, branches/: as git's templates have them
	if !slices.Equal(made, want) {
		t.Errorf("made %v, want %v", plan.MakeDirs, want)
	}
	if !slices.Contains(plan.Protected, g.ws+"/tools/git/hooks") {
		t.Errorf("not protected: %v", plan.Protected)
	}
}

// TestCompileGitMadeToCover: what git reads if it appears, where a mount
// cannot wait for it: config.worktree under extensions.worktreeConfig,
// an included file inside the gitdir. An included file of the work tree
// is not made (it would show in git status): it is reported if it
// appears (TestGitState).
func TestCompileGitMadeToCover(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	g.git(t, "", "config", "extensions.worktreeConfig", "true")
	g.git(t, "", "config", "include.path", "config.local")
	g.git(t, "", "config", "--add", "include.path", "../local.gitconfig")
	plan := g.plan(t, nil)
	for _, p := range []string{g.ws + "/.git/config.worktree", g.ws + "/.git/config.local"} {
		if !slices.Contains(plan.MakeFiles, p) || !slices.Contains(plan.Protected, p) {
			t.Errorf("%s: not made and protected: %v / %v", p, plan.MakeFiles, plan.Protected)
		}
	}
	if slices.Contains(plan.MakeFiles, g.ws+"/local.gitconfig") {
		t.Errorf("an include of the work tree is made: %v", plan.MakeFiles)
	}
}

// TestCompileGitWorktreeWorkspace: a workspace that is a linked worktree
// commits into its gitdir and the common directory, outside it: both get
// commit-level access, when the gitdir names the workspace back.
func TestCompileGitWorktreeWorkspace(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	wt := g.root + "/wt"
	g.git(t, "", "worktree", "add", "-q", wt)
	p := policy.DefaultSandbox()
	p.ExcludeSlashTmp = true
	plan, err := Compile(p, wt)
	if err != nil {
		t.Fatal(err)
	}
	common, admin := g.ws+"/.git", g.ws+"/.git/worktrees/wt"
	if !slices.Equal(plan.WritableRoots, []string{common, wt}) {
		t.Fatalf("writable roots %v, want the common directory and the worktree", plan.WritableRoots)
	}
	for _, x := range []string{common + "/hooks", common + "/config", admin + "/commondir", admin + "/gitdir", wt + "/.git"} {
		if !slices.Contains(plan.Protected, x) {
			t.Errorf("%s is not protected: %v", x, plan.Protected)
		}
	}
	if !slices.Contains(plan.GitDirs, common) || !slices.Contains(plan.GitDirs, admin) {
		t.Errorf("gitdirs %v", plan.GitDirs)
	}
	// A .git file that names a gitdir that does not name it back widens
	// nothing: a command could have written it.
	other := g.root + "/other"
	mkdir(t, other)
	if err := os.WriteFile(other+"/.git", []byte("gitdir: "+admin+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err = Compile(p, other)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(plan.WritableRoots, []string{other}) {
		t.Errorf("writable roots %v, want the workspace alone", plan.WritableRoots)
	}
	if !slices.ContainsFunc(plan.Notes, func(n string) bool { return strings.Contains(n, "does not name it back") }) {
		t.Errorf("no note: %v", plan.Notes)
	}
	// git = read-only: the gitdir outside stays read-only.
	p.Git = policy.GitReadOnly
	plan, err = Compile(p, wt)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(plan.WritableRoots, []string{wt}) || !slices.Contains(plan.Protected, wt+"/.git") {
		t.Errorf("git = read-only: roots %v, protected %v", plan.WritableRoots, plan.Protected)
	}
}

// TestCompileGitSeed: a .git the protected list names is covered beyond
// the search's bound.
func TestCompileGitSeed(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "1/2/3/4/5/6/deep")
	plan := g.plan(t, func(p *policy.Sandbox) { p.Protected = append(p.Protected, "1/2/3/4/5/6/deep/.git") })
	if !slices.Contains(plan.Protected, g.ws+"/1/2/3/4/5/6/deep/.git/hooks") {
		t.Errorf("the named .git is not covered: %v", plan.Protected)
	}
}

// TestGitState: what makes git run a program is listed, and Since says
// what appeared or changed: executable hooks (not samples, not files
// without the x bit), settings that run programs, a commondir that sends
// a gitdir elsewhere; in repositories made later too.
func TestGitState(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	g.write(t, ".git/hooks/pre-commit", "#!/bin/sh\necho host hook\n", 0o755)
	watch := func() GitState { return g.watch(t) }
	before := watch()
	// The host's own: its hook, and (every setting not known harmless)
	// the user's protocol.file.allow.
	if news := before.Since(GitState{}); len(news) != 2 || !strings.Contains(news[0], ".git/hooks/pre-commit") || !strings.Contains(news[1], "protocol.file.allow") {
		t.Fatalf("the host's own hook: %v", news)
	}
	g.git(t, "", "config", "alias.lint", "!sh tools/lint.sh")
	g.git(t, "", "config", "include.path", "../inc.gitconfig") // absent
	before = watch()
	if news := watch().Since(before); len(news) != 0 {
		t.Fatalf("nothing changed, yet: %v", news)
	}
	// Everyday work reports nothing: a linked worktree added reads the
	// same configuration.
	g.git(t, "", "worktree", "add", "-q", "wt")
	if news := watch().Since(before); len(news) != 0 {
		t.Fatalf("a worktree was added, and: %v", news)
	}
	g.repo(t, "made")
	g.write(t, "made/.git/hooks/post-checkout", "#!/bin/sh\n", 0o755)
	g.write(t, "made/.git/hooks/pre-push", "#!/bin/sh\n", 0o644) // not executable: git skips it
	g.write(t, "made/.git/hooks/pre-rebase.sample", "x", 0o755)  // a sample
	g.git(t, "made", "config", "core.hooksPath", "../evil-hooks")
	g.git(t, "made", "config", "core.fsmonitor", "true") // the built-in one
	g.git(t, "made", "config", "core.sshCommand", "sh -c 'curl evil'")
	g.write(t, ".git/commondir", g.root+"/evil\n", 0o644)
	g.write(t, "inc.gitconfig", "[core]\n\tpager = ./evil.sh\n", 0o644)
	news := watch().Since(before)
	want := []string{
		g.ws + "/.git/commondir points to " + g.root + "/evil",
		g.ws + "/inc.gitconfig: core.pager = ./evil.sh",
		g.ws + "/made/.git/config: core.hookspath = ../evil-hooks",
		g.ws + "/made/.git/config: core.sshcommand = sh -c 'curl evil'",
		"an executable hook " + g.ws + "/made/.git/hooks/post-checkout",
	}
	if len(news) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(news), len(want), strings.Join(news, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(news[i], w) {
			t.Errorf("line %d: %q, want it to start with %q", i, news[i], w)
		}
	}
}

// TestDirCache: a watched listing stands until the kernel reports a
// change, which findRepos takes in (drain) before it reads anything; an
// unwatched one stands while the directory's time is the same, and never
// when it changed within racyWindow of being read.
func TestDirCache(t *testing.T) {
	dir := t.TempDir()
	if l, err := listDir(dir, fileKey{}); err != nil || l.mark != 0 {
		t.Fatalf("%+v %v", l, err)
	}
	if !watchedNow(dir) {
		t.Skip("no inotify here")
	}
	mkdir(t, dir+"/.git")
	dirs.drain()
	if l, _ := listDir(dir, fileKey{}); l.mark&markDotGitDir == 0 {
		t.Fatalf("a new .git was missed: %+v", l)
	}
	if f := findRepos([]string{dir}, nil, nil, nil); len(f.dotGitDirs) != 1 {
		t.Fatalf("findRepos: %+v", f)
	}
	os.Remove(dir + "/.git")
	if f := findRepos([]string{dir}, nil, nil, nil); len(f.dotGitDirs) != 0 {
		t.Fatalf("findRepos after the .git went: %+v", f)
	}

	// Without a watch: the directory's change time.
	var c dirCache
	key := mustKey(t, dir)
	key.ctime = time.Now().Add(-time.Hour)
	c.put(dir, key, time.Now(), -1, dirListing{mark: markGitdir})
	if l, ok := c.get(dir, key); !ok || l.mark != markGitdir {
		t.Fatal("a listing of a directory unchanged for an hour was not kept")
	}
	if _, ok := c.get(dir, fileKey{key.dev, key.ino, key.ctime.Add(time.Nanosecond)}); ok {
		t.Fatal("a listing outlived a change of the directory's time")
	}
	if _, ok := c.get(dir, fileKey{key.dev, key.ino + 1, key.ctime}); ok {
		t.Fatal("a listing outlived its inode")
	}
	key.ctime = time.Now()
	c.put(dir, key, key.ctime, -1, dirListing{})
	if _, ok := c.get(dir, key); ok {
		t.Fatal("a listing read right after a change was trusted")
	}
}

// TestDirCacheUnwatchedTimeSetBack: without a watch, a .git made in a
// folder whose modification time is then set back to what it was (as a
// command may, utimensat) is found by the next search.
func TestDirCacheUnwatchedTimeSetBack(t *testing.T) {
	WatchDirectories(false)
	t.Cleanup(func() { WatchDirectories(true) })
	dir := t.TempDir()
	mkdir(t, dir+"/src")
	time.Sleep(racyWindow + 100*time.Millisecond) // past the racy window: kept
	before, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if l, err := listDir(dir, fileKey{}); err != nil || l.mark != 0 {
			t.Fatalf("listDir: %+v %v", l, err)
		}
	}
	mkdir(t, dir+"/.git")
	if err := os.Chtimes(dir, before.ModTime(), before.ModTime()); err != nil {
		t.Fatal(err)
	}
	if l, _ := listDir(dir, fileKey{}); l.mark&markDotGitDir == 0 {
		t.Fatalf("a .git made in a folder whose time was set back was missed: %+v", l)
	}
}

// watchedNow: the cache holds a watched listing of dir.
func watchedNow(dir string) bool {
	dirs.mu.Lock()
	defer dirs.mu.Unlock()
	e, ok := dirs.m[dir]
	return ok && e.wd >= 0
}

// TestDirCacheFolderAboveMoved: a watched folder whose parent is renamed
// away, and another folder put at its path, is no event of the folder
// read: the next search finds the .git at the path all the same (red
// team 17: a repository moved there was left writable, and one a command
// made there unreported).
func TestDirCacheFolderAboveMoved(t *testing.T) {
	ws := t.TempDir()
	mkdir(t, ws+"/decoy/proj")
	if f := findRepos([]string{ws}, nil, nil, nil); len(f.dotGitDirs) != 0 {
		t.Fatalf("findRepos: %+v", f)
	}
	if !watchedNow(ws + "/decoy/proj") {
		t.Skip("no inotify here")
	}
	if err := os.Rename(ws+"/decoy", ws+"/old"); err != nil {
		t.Fatal(err)
	}
	mkdir(t, ws+"/decoy/proj/.git")
	if f := findRepos([]string{ws}, nil, nil, nil); len(f.dotGitDirs) != 1 {
		t.Fatalf("the .git in a folder put where a watched one was is missed: %+v", f)
	}
}

// TestGitSurveyFoldsCase: .GIT is found as .git (a case-insensitive
// folder finds it so, and so does git).
func TestGitSurveyFoldsCase(t *testing.T) {
	ws := t.TempDir()
	mkdir(t, ws+"/proj/.GIT")
	if f := findRepos([]string{ws}, nil, nil, nil); len(f.dotGitDirs) != 1 {
		t.Fatalf("a .GIT was missed: %+v", f)
	}
}

func mustKey(t *testing.T, p string) fileKey {
	t.Helper()
	st, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	k, ok := statKey(st)
	if !ok {
		t.Skip("no inode numbers here")
	}
	return k
}

// TestFindReposBound: the search stops at its bound, breadth first, and
// says so.
func TestFindReposBound(t *testing.T) {
	root := t.TempDir()
	for i := range GitScanDirs + 10 {
		mkdir(t, fmt.Sprintf("%s/d%04d", root, i))
	}
	mkdir(t, root+"/.git")
	f := findRepos([]string{root}, nil, nil, nil)
	if !slices.Equal(f.truncated, []string{root}) || len(f.dotGitDirs) != 1 {
		t.Fatalf("%+v", f)
	}
	f = findRepos([]string{root}, []string{root}, nil, nil)
	if !slices.Equal(f.truncated, []string{root}) {
		t.Fatalf("a temporary directory's bound: %+v", f)
	}
}

func TestParseGitConfig(t *testing.T) {
	text := `# a comment
[core]
	hooksPath = .husky/_   ; trailing comment
	bare
[Alias]
	st = "!git status \"x\" # not a comment"
	Lg = log --oneline \
  --graph
[remote "Origin"]
	url = git@example.com:x.git
[branch.Main]
	remote = origin
[filter "lfs"]
	clean = git-lfs clean -- %f
[includeIf "gitdir:~/work/"]
	path = work.gitconfig
`
	got := parseGitConfig(text)
	want := []gitEntry{
		{"core.hookspath", ".husky/_"},
		{"core.bare", "true"},
		{"alias.st", `!git status "x" # not a comment`},
		{"alias.lg", "log --oneline   --graph"},
		{"remote.Origin.url", "git@example.com:x.git"},
		{"branch.main.remote", "origin"},
		{"filter.lfs.clean", "git-lfs clean -- %f"},
		{"includeif.gitdir:~/work/.path", "work.gitconfig"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	for key, runs := range map[string]bool{
		"core.hookspath": true, "core.sshcommand": true, "core.fsmonitor": true, "alias.st": true,
		"alias.lg": true, "filter.lfs.clean": true, "remote.Origin.url": true /* x: a path here */, "diff.x.textconv": true,
		"credential.helper": true, "user.name": false, "include.path": true,
	} {
		v := "x"
		if key == "alias.st" {
			v = "!x"
		}
		if noteworthy(key, v) != runs {
			t.Errorf("noteworthy(%s) = %v", key, !runs)
		}
	}
	if noteworthy("core.fsmonitor", "true") {
		t.Error("the built-in fsmonitor runs no program of the repository's")
	}
}

func FuzzParseGitConfig(f *testing.F) {
	f.Add("[core]\n\thooksPath = x\n")
	f.Add("[a \"b\\\"c\"]\nx = \"y\\\n z\" ; c\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, e := range parseGitConfig(s) {
			if e.key == "" || strings.HasPrefix(e.key, ".") {
				t.Fatalf("entry with no section: %q", e)
			}
		}
	})
}

// TestCompileGitPlantedGitdir: a command writes a .git file into the
// workspace naming a gitdir it planted where it can write outside the
// writable roots (/dev/shm), with the pointer back and a commondir naming
// any directory (the home): the next plan makes neither writable. A
// gitdir outside that names the workspace back but whose commondir is not
// the repository it lies in does not widen the roots to that directory
// either.
func TestCompileGitPlantedGitdir(t *testing.T) {
	if _, err := os.Stat("/dev/shm"); err != nil {
		t.Skip("no /dev/shm here")
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, target := root+"/ws", root+"/home"
	mkdir(t, ws)
	mkdir(t, target)
	shm, err := os.MkdirTemp("/dev/shm", "planted-gitdir-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(shm)
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(ws+"/.git", "gitdir: "+shm+"\n")
	write(shm+"/gitdir", ws+"/.git\n")
	write(shm+"/commondir", target+"\n")
	write(shm+"/HEAD", "ref: refs/heads/main\n")
	write(target+"/HEAD", "ref: refs/heads/main\n")
	p := policy.DefaultSandbox()
	p.ExcludeSlashTmp = true
	t.Setenv("TMPDIR", "")
	plan, err := Compile(p, ws)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(plan.WritableRoots, []string{ws}) {
		t.Fatalf("a gitdir planted in /dev/shm widened the writable roots: %v", plan.WritableRoots)
	}
	if !slices.ContainsFunc(plan.Notes, func(n string) bool { return strings.Contains(n, "in /dev") }) {
		t.Errorf("no note: %v", plan.Notes)
	}

	// The same gitdir outside every writable area (as if it had been
	// there before): the gitdir counts, the foreign commondir does not.
	admin := root + "/elsewhere/gitdir"
	mkdir(t, admin)
	write(ws+"/.git", "gitdir: "+admin+"\n")
	write(admin+"/gitdir", ws+"/.git\n")
	write(admin+"/commondir", target+"\n")
	plan, err = Compile(p, ws)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(plan.WritableRoots, target) {
		t.Fatalf("a commondir that is not the gitdir's repository became writable: %v", plan.WritableRoots)
	}
	if !slices.Contains(plan.WritableRoots, admin) {
		t.Errorf("the gitdir naming the workspace back is not writable: %v", plan.WritableRoots)
	}
	if !slices.ContainsFunc(plan.Notes, func(n string) bool { return strings.Contains(n, "not the repository it lies in") }) {
		t.Errorf("no note: %v", plan.Notes)
	}
}

// TestDirCacheOneFolderTwoPaths: a folder read under one path, then under
// another (its parent renamed), then back at the first: a .git made in it
// is found (its watch named the second path only).
func TestDirCacheOneFolderTwoPaths(t *testing.T) {
	ws := t.TempDir()
	mkdir(t, ws+"/decoy/proj")
	findRepos([]string{ws}, nil, nil, nil)
	if !watchedNow(ws + "/decoy/proj") {
		t.Skip("no inotify here")
	}
	if err := os.Rename(ws+"/decoy", ws+"/old"); err != nil {
		t.Fatal(err)
	}
	findRepos([]string{ws}, nil, nil, nil)
	if err := os.Rename(ws+"/old", ws+"/decoy"); err != nil {
		t.Fatal(err)
	}
	mkdir(t, ws+"/decoy/proj/.git")
	if f := findRepos([]string{ws}, nil, nil, nil); len(f.dotGitDirs) != 1 {
		t.Fatalf("the .git made in a folder read under two paths is missed: %+v", f)
	}
}

// TestGitFilesReadAsGitDoes: a .git file whose path is followed by
// thousands of newlines names its gitdir (git strips them), and a
// configuration past the size read says so with an entry that counts as
// running a program (git reads the whole file: red team 18 hid
// core.fsmonitor past the part read).
func TestGitFilesReadAsGitDoes(t *testing.T) {
	dir := t.TempDir()
	mkdir(t, dir+"/gitdir")
	dotgit := filepath.Join(dir, "dotgit")
	if err := os.WriteFile(dotgit, []byte("gitdir: gitdir"+strings.Repeat("\n", 5000)), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := readGitdirFile(nil, dotgit); got != filepath.Join(dir, "gitdir") {
		t.Errorf("readGitdirFile of a padded .git file = %q", got)
	}
	config := filepath.Join(dir, "config")
	big := "[core]\n\tbare = false\n" + strings.Repeat("# padding padding padding padding\n", maxGitConfig/34+1) + "[core]\n\tfsmonitor = ./evil.sh\n"
	if err := os.WriteFile(config, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	entries := readGitConfig(nil, config)
	if !slices.ContainsFunc(entries, func(e gitEntry) bool { return noteworthy(e.key, e.value) }) {
		t.Errorf("a configuration with core.fsmonitor past %d bytes runs no program: %v", maxGitConfig, entries)
	}
	if !slices.ContainsFunc(entries, func(e gitEntry) bool { return e.key == "core.bare" }) {
		t.Errorf("what comes before the bound was not read: %v", entries)
	}
}

// TestGitStateEverydayQuiet: what git writes in everyday work — a
// repository made, a clone with a submodule, a remote added, an upstream
// set, a submodule added (its gitdir's core.worktree names the work tree
// back), sparse checkout, maintenance — is reported by nothing; the
// settings red team 21 ran programs through, which no list of settings
// that run one had, are (every setting not known harmless is).
func TestGitStateEverydayQuiet(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "lib")
	watch := func() GitState { return g.watch(t) }
	before := watch()
	g.repo(t, "app")
	g.git(t, "app", "remote", "add", "origin", "https://example.com/app.git")
	g.git(t, "app", "config", "branch.main.remote", "origin")
	g.git(t, "app", "config", "branch.main.merge", "refs/heads/main")
	g.git(t, "app", "config", "user.email", "me@example.com")
	g.git(t, "app", "config", "pull.rebase", "true")
	g.git(t, "app", "submodule", "add", "-q", g.ws+"/lib", "vendor/lib")
	g.git(t, "app", "sparse-checkout", "init", "--cone")
	g.git(t, "app", "maintenance", "register")
	g.git(t, "", "clone", "-q", "--recurse-submodules", g.ws+"/app", "copy")
	// Here the submodule and the clone come from this machine: their
	// remotes are told (a push there runs that repository's hooks), and
	// nothing else is.
	want := []string{
		g.ws + "/app/.git/modules/vendor/lib/config: remote.origin.url = " + g.ws + "/lib",
		g.ws + "/copy/.git/config: remote.origin.url = " + g.ws + "/app",
	}
	if news := watch().Since(before); !slices.Equal(news, want) {
		t.Fatalf("everyday work, and: %q", news)
	}
	before = watch()
	for _, kv := range [][2]string{
		{"submodule.vendor/lib.update", "!sh evil.sh"},
		{"remote.evil.url", "ext::sh -c evil.sh"},
		{"protocol.ext.allow", "always"},
		{"url.ext::sh -c evil.sh #.insteadOf", "https://github.com/"},
		{"gpg.ssh.defaultKeyCommand", "sh evil.sh"},
		{"core.alternateRefsCommand", "sh evil.sh"},
		{"core.worktree", g.ws + "/elsewhere"},
		{"alias.st", "-c core.pager=evil status"},
		{"branch.other.pushremote", "up"}, // no remote up: a path to git
	} {
		g.git(t, "app", "config", kv[0], kv[1])
	}
	news := watch().Since(before)
	for _, want := range []string{"submodule.vendor/lib.update", "remote.evil.url", "protocol.ext.allow", "insteadof", "gpg.ssh.defaultkeycommand", "core.alternaterefscommand", "core.worktree", "alias.st", "branch.other.pushremote"} {
		if !slices.ContainsFunc(news, func(n string) bool { return strings.Contains(n, want) }) {
			t.Errorf("%s is not reported: %q", want, news)
		}
	}
}

// TestParseGitConfigAsGit: what git reads is what the survey reads —
// a byte order mark skipped and a variable after a header on its line
// (red team 22 hid "[core] fsmonitor" so), \b a backspace byte (red team
// 22 made a command read as the boolean 1), blanks one space each — and
// where git refuses a file the survey says so with a noteworthy entry.
func TestParseGitConfigAsGit(t *testing.T) {
	for _, c := range []struct {
		text string
		want []gitEntry
	}{
		{"\xef\xbb\xbf[core] fsmonitor = ./evil.sh\n", []gitEntry{{"core.fsmonitor", "./evil.sh"}}},
		{"[core]\n\tfsmonitor = \"1;sh evil.sh #\\b\\b\"\n", []gitEntry{{"core.fsmonitor", "1;sh evil.sh #\b\b"}}},
		{"[core]\n\tpager = a\t\tb  \n", []gitEntry{{"core.pager", "a  b"}}},
		{"[core]\n\tpager = a\\\n b\r\n[x \"Y z\"]\nk\n", []gitEntry{{"core.pager", "a b"}, {"x.Y z.k", "true"}}},
		{"[core]\n\tpager = \"a\\qb\"\n", []gitEntry{{unparsedKey, ""}}},
		{"[core]\n\tpager = \"open\n", []gitEntry{{unparsedKey, ""}}},
		{"[core ]\n\tpager = x\n", []gitEntry{{unparsedKey, ""}}},
		{"[core]\n\t1pager = x\n", []gitEntry{{unparsedKey, ""}}},
		{"pager = x\n", []gitEntry{{unparsedKey, ""}}},
		// red team 23: git's keys and values are C strings, and its
		// blanks are space, tab, CR and LF only.
		{"[remote \"origin.uploadpack\x00\"]\n\tfetch = sh evil.sh\n", []gitEntry{{"remote.origin.uploadpack", "sh evil.sh"}}},
		{"[core]\n\tfsmonitor = \"sh evil.sh\x00true\"\n", []gitEntry{{"core.fsmonitor", "sh evil.sh"}}},
		{"[core]\n\tfsmonitor = \vtrue\n", []gitEntry{{"core.fsmonitor", "\vtrue"}}},
	} {
		got := parseGitConfig(c.text)
		ok := len(got) == len(c.want)
		for i := 0; ok && i < len(got); i++ {
			ok = got[i].key == c.want[i].key && (c.want[i].key == unparsedKey || got[i].value == c.want[i].value)
		}
		if !ok {
			t.Errorf("%q: got %q, want %q", c.text, got, c.want)
		}
	}
	if !noteworthy("core.fsmonitor", "1;sh evil.sh #\b\b") || !noteworthy("core.fsmonitor", " true") || !noteworthy(unparsedKey, "") {
		t.Error("a value git takes for a command, or a file git may read otherwise, is not noteworthy")
	}
}

// TestHarmlessKeysExact: a setting is harmless by its exact name, never
// by its section (red team 22: git 2.42 added gc.recentObjectsHook), and
// every setting that may hold a URL is harmless only with a remote's
// name, a path or a URL of a transport git carries itself.
func TestHarmlessKeysExact(t *testing.T) {
	for kv, want := range map[[2]string]bool{
		{"gc.recentobjectshook", "sh evil.sh"}:             true,
		{"maintenance.somethingnew", "x"}:                  true,
		{"color.somethingnew.command", "sh"}:               true,
		{"advice.detachedhead", "false"}:                   false,
		{"advice.detachedhead", "sh evil.sh"}:              true,
		{"branch.main.remote", "origin"}:                   true, // alone: see remoteNamed
		{"branch.main.remote", "ext::sh -c evil"}:          true,
		{"branch.main.pushremote", "evil://x/y"}:           true,
		{"extensions.partialclone", "origin"}:              true, // alone: see remoteNamed
		{"extensions.partialclone", "x::y"}:                true,
		{"remote.origin.url", "https://example.com/x.git"}: false,
		{"remote.origin.url", "git@example.com:x/y.git"}:   false,
		{"remote.origin.url", "/srv/repo.git"}:             true,
		{"remote.origin.pushurl", "../evil.git"}:           true,
		{"remote.origin.url", "file:///srv/repo.git"}:      true,
		{"branch.main.pushremote", "../evil"}:              true,
		{"branch.main.pushremote", "origin"}:               true, // alone: see remoteNamed
		{"submodule.lib.url", "../lib"}:                    false,
		{"remote.origin.url", "evil://x"}:                  true,
		{"submodule.lib.url", "../lib\x08"}:                true,
		{"submodule.lib.update", "rebase"}:                 false,
		{"submodule.lib.update", "!sh evil.sh"}:            true,
	} {
		if got := noteworthy(kv[0], kv[1]); got != want {
			t.Errorf("noteworthy(%s = %q) = %v", kv[0], kv[1], got)
		}
	}
}

// TestGitdirsGitFinds: a submodule's gitdir whose HEAD is a symbolic link
// to a ref only in packed-refs (git takes it: the link's text is checked,
// not its target), one behind a symbolic link in modules/, and one six
// names deep are covered, and the link is reported (red team 23 hid each
// from the survey; git submodule update --init ran its hook).
func TestGitdirsGitFinds(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	for _, name := range []string{"dangling", "a/b/c/d/e/f"} {
		g.repo(t, "../src-"+strings.ReplaceAll(name, "/", "-"))
		g.git(t, "", "submodule", "add", "-q", "--name", name, "../src-"+strings.ReplaceAll(name, "/", "-"), "sub-"+strings.ReplaceAll(name, "/", "-"))
	}
	mod := g.ws + "/.git/modules"
	shell(t, mod+"/dangling", `git pack-refs --all && rm -f refs/heads/* && rm HEAD && ln -s refs/heads/$(git -C `+g.ws+`/sub-dangling branch --show-current) HEAD`)
	hidden := g.ws + "/node_modules/hidden.git" // where the search does not go
	g.git(t, "", "init", "-q", "--bare", hidden)
	symlink(t, hidden, mod+"/linked")
	plan := g.plan(t, nil)
	for _, p := range []string{mod + "/dangling/config", mod + "/a/b/c/d/e/f/config", hidden + "/config"} {
		if !slices.Contains(plan.Protected, p) {
			t.Errorf("%s is not protected: %v", p, plan.Protected)
		}
	}
	st, err := WatchGit(policy.DefaultSandbox(), g.ws)
	if err != nil {
		t.Fatal(err)
	}
	if news := st.Since(GitState{}); !slices.ContainsFunc(news, func(n string) bool { return strings.Contains(n, mod+"/linked points to "+hidden) }) {
		t.Errorf("the link in modules/ is not reported: %q", news)
	}
}

// TestGitdirsBelowGitdirs: a folder laid out like a gitdir hides nothing
// below it — in modules/ (git takes modules/a/b for the submodule a/b
// whatever modules/a holds), 70 names deep, and in the work tree (git add
// -A walks into it) — red team 24 hid a repository each way.
func TestGitdirsBelowGitdirs(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	mod := g.ws + "/.git/modules"
	g.write(t, ".git/modules/a/HEAD", "ref: refs/heads/main\n", 0o644)
	mkdir(t, mod+"/a/objects")
	deep := mod + "/" + strings.Repeat("d/", 70) + "b"
	for _, gd := range []string{mod + "/a/b", deep} {
		g.git(t, "", "init", "-q", "--bare", gd)
	}
	g.write(t, "src/HEAD", "ref: refs/heads/main\n", 0o644)
	mkdir(t, g.ws+"/src/objects")
	mkdir(t, g.ws+"/src/refs")
	g.repo(t, "src/x")
	plan := g.plan(t, nil)
	for _, p := range []string{mod + "/a/b/config", mod + "/a/b/hooks", deep + "/config", g.ws + "/src/x/.git/config"} {
		if !slices.Contains(plan.Protected, p) {
			t.Errorf("%s is not protected", p)
		}
	}
}

// TestToldContentChanges: a hook that is a link out of every covered
// folder, and a program a setting names there, are told again when what
// they hold changes at the same size (red team 24: told once, then
// rewritten, untold); the hook's line says it is a link.
func TestToldContentChanges(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	// /dev/shm: writable to commands, and no plan covers it (red team 24).
	out, err := os.MkdirTemp("/dev/shm", "told-content-")
	if err != nil {
		t.Skipf("no /dev/shm here: %v", err)
	}
	defer os.RemoveAll(out)
	hook, prog := out+"/hook", out+"/prog"
	for _, f := range []string{hook, prog} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	symlink(t, hook, g.ws+"/.git/hooks/pre-commit")
	g.git(t, "", "config", "core.fsmonitor", prog)
	before := g.watch(t)
	if news := before.Since(GitState{}); !slices.ContainsFunc(news, func(n string) bool {
		return strings.Contains(n, "pre-commit") && strings.Contains(n, "symbolic link to "+hook)
	}) {
		t.Errorf("the hook's line does not say it is a link: %q", news)
	}
	for _, f := range []string{hook, prog} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	news := g.watch(t).Since(before)
	for _, want := range []string{"hook " + g.ws + "/.git/hooks/pre-commit", prog + ", now holds"} {
		if !slices.ContainsFunc(news, func(n string) bool { return strings.Contains(n, want) }) {
			t.Errorf("%s rewritten at the same size is not told: %q", want, news)
		}
	}
}

// TestGitPathsAsGitReads: paths read as git reads them (red team 25) —
// a linked worktree's submodule gitdir in worktrees/<id>/modules; a .git
// file naming lnk/../g (the .. after the link is the link's target's
// parent: cleaning made it g); an include's own includes from the folder
// of the path git opened, not where a link there leads; ~user/.
func TestGitPathsAsGitReads(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	g.repo(t, "../lib")
	g.git(t, "", "worktree", "add", "-q", "wt")
	g.git(t, "wt", "submodule", "add", "-q", g.root+"/lib", "sub")
	wtModule := g.ws + "/.git/worktrees/wt/modules/sub"
	if _, err := os.Stat(wtModule + "/HEAD"); err != nil {
		t.Fatalf("git kept the worktree's submodule elsewhere: %v", err)
	}
	// Not checked out (git submodule update --init takes the gitdir as
	// it finds it): only modules/ leads there.
	if err := os.RemoveAll(g.ws + "/wt/sub"); err != nil {
		t.Fatal(err)
	}
	// lnk -> node_modules/.x/inner; lnk/../g is node_modules/.x/g.
	g.git(t, "", "init", "-q", "--bare", g.ws+"/node_modules/.x/g")
	mkdir(t, g.ws+"/node_modules/.x/inner")
	symlink(t, g.ws+"/node_modules/.x/inner", g.ws+"/lnk")
	mkdir(t, g.ws+"/p")
	g.write(t, "p/.git", "gitdir: ../lnk/../g\n", 0o644)
	// .git/inc1 -> ../cfg/inc1, which includes inc2: git reads .git/inc2.
	g.write(t, "cfg/inc1", "[include]\n\tpath = inc2\n", 0o644)
	symlink(t, g.ws+"/cfg/inc1", g.ws+"/.git/inc1")
	g.write(t, ".git/inc2", "[core]\n\tpager = ./evil.sh\n", 0o644)
	g.git(t, "", "config", "include.path", "inc1")
	plan := g.plan(t, nil)
	for _, p := range []string{wtModule + "/config", wtModule + "/hooks", g.ws + "/node_modules/.x/g/config", g.ws + "/.git/inc2"} {
		if !slices.Contains(plan.Protected, p) {
			t.Errorf("%s is not protected", p)
		}
	}
	if news := g.watch(t).Since(GitState{}); !slices.ContainsFunc(news, func(n string) bool { return strings.Contains(n, "/.git/inc2: core.pager") }) {
		t.Errorf("the include git reads is not read: %q", news)
	}
	if u, err := user.Current(); err == nil && u.HomeDir != "" {
		if got := expand("~"+u.Username+"/x", "/elsewhere"); got != filepath.Join(u.HomeDir, "x") {
			t.Errorf("expand(~%s/x) = %q", u.Username, got)
		}
	}
}

// TestPointerGitCannotFollow: a .git file naming a path each process
// reads as its own (/proc/self/cwd: git, run in the work tree, finds a
// repository there the survey cannot), or naming no repository, is told
// (red team 27 had the host's git status run a core.fsmonitor so).
func TestPointerGitCannotFollow(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	g.write(t, "sub/.git", "gitdir: /proc/self/cwd/node_modules/.g\n", 0o644)
	g.write(t, "gone/.git", "gitdir: ../nowhere\n", 0o644)
	news := g.watch(t).Since(GitState{})
	for _, want := range []string{g.ws + "/sub/.git names = /proc/self/cwd/node_modules/.g", g.ws + "/gone/.git names = ../nowhere"} {
		if !slices.ContainsFunc(news, func(n string) bool { return strings.HasPrefix(n, want) }) {
			t.Errorf("%q is not told: %q", want, news)
		}
	}
}

// TestGlobalRelativeProgramCovered: a program the user's own
// configuration names by a relative path runs from each work tree: the
// workspace's copy is kept read-only, and what it holds is told when it
// changes (red team 27, by reading).
func TestGlobalRelativeProgramCovered(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	g.git(t, "", "config", "--global", "core.fsmonitor", "tools/fsmon.sh")
	g.write(t, "tools/fsmon.sh", "#!/bin/sh\nexit 0\n", 0o755)
	if plan := g.plan(t, nil); !slices.Contains(plan.Protected, g.ws+"/tools/fsmon.sh") {
		t.Errorf("the workspace's tools/fsmon.sh is not protected: %v", plan.Protected)
	}
	before := g.watch(t)
	g.write(t, "tools/fsmon.sh", "#!/bin/sh\nexit 1\n", 0o755)
	if news := g.watch(t).Since(before); !slices.ContainsFunc(news, func(n string) bool { return strings.Contains(n, g.ws+"/tools/fsmon.sh, now holds") }) {
		t.Errorf("its change is not told: %q", news)
	}
}

// TestPausedRebaseTold: a rebase left paused with an exec line, or with a
// merge strategy not git's own (git-merge-<x> from the work tree), is
// told: git rebase --continue runs it (red team 28).
func TestPausedRebaseTold(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	before := g.watch(t)
	g.write(t, ".git/rebase-merge/git-rebase-todo", "pick 1234567 x\nexec sh ../evil.sh\n", 0o644)
	g.write(t, ".git/rebase-merge/strategy", "x/evil\n", 0o644)
	news := g.watch(t).Since(before)
	for _, want := range []string{"exec sh ../evil.sh", "merge strategy x/evil"} {
		if !slices.ContainsFunc(news, func(n string) bool { return strings.Contains(n, want) }) {
			t.Errorf("%q is not told: %q", want, news)
		}
	}
	// git drops one LF and one CR before it, no more: this strategy is
	// "ort\r\n" to git, not its own ort (red team 29).
	before = g.watch(t)
	g.write(t, ".git/rebase-merge/strategy", "ort\r\n\r\n", 0o644)
	if news := g.watch(t).Since(before); !slices.ContainsFunc(news, func(n string) bool { return strings.Contains(n, "merge strategy ort\r\n") }) {
		t.Errorf("strategy ort\\r\\n is not told: %q", news)
	}
}

// TestSystemConfigRead: the system's configuration ($GIT_CONFIG_SYSTEM)
// is read as git reads it: its relative core.hooksPath is each
// repository's, kept read-only (red team 28).
func TestSystemConfigRead(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	system := filepath.Join(g.root, "system.gitconfig")
	if err := os.WriteFile(system, []byte("[core]\n\thooksPath = .githooks\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_CONFIG_NOSYSTEM", "")
	t.Setenv("GIT_CONFIG_SYSTEM", system)
	if plan := g.plan(t, nil); !slices.Contains(plan.Protected, g.ws+"/.githooks") {
		t.Errorf("the hooks folder the system's configuration names is not protected: %v", plan.Protected)
	}
}

// TestLegacyRemotesTold: a remote in git's older form (remotes/<name>,
// branches/<name>), which a push to a name no configuration defines uses,
// is told, and the folders are kept read-only (red team 29: a push ran
// a bare repository's pre-receive so).
func TestLegacyRemotesTold(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	if plan := g.plan(t, nil); !slices.Contains(plan.Protected, g.ws+"/.git/remotes") || !slices.Contains(plan.Protected, g.ws+"/.git/branches") {
		t.Errorf("remotes/ and branches/ are not protected: %v", plan.Protected)
	}
	before := g.watch(t)
	g.write(t, ".git/remotes/origin", "URL: /dev/shm/evil.git\nPush: refs/heads/main:refs/heads/main\n", 0o644)
	g.write(t, ".git/branches/up", "/dev/shm/evil.git\n", 0o644)
	news := g.watch(t).Since(before)
	for _, want := range []string{"/.git/remotes/origin", "/.git/branches/up"} {
		if !slices.ContainsFunc(news, func(n string) bool { return strings.Contains(n, "older form, "+g.ws+want) }) {
			t.Errorf("%s is not told: %q", want, news)
		}
	}
}

// TestSystemProgramNotHashed: a program of the system's that a setting
// names (gpg, a credential helper) is not read each survey: no command
// can write it.
func TestSystemProgramNotHashed(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Skip("no /bin/sh")
	}
	g.git(t, "", "config", "gpg.program", sh)
	news := g.watch(t).Since(GitState{})
	if !slices.ContainsFunc(news, func(n string) bool { return strings.Contains(n, "gpg.program") }) {
		t.Errorf("the setting is not told: %q", news)
	}
	if slices.ContainsFunc(news, func(n string) bool { return strings.Contains(n, "a program the configuration names, "+sh) }) {
		t.Errorf("a system program is hashed: %q", news)
	}
}

// TestParseGitConfigDifferential reads random configuration texts, built
// of the bytes git's parser treats specially, with both the survey's
// parser and git itself (git config --file F --list -z): where the survey
// reads a file whole, git reads the same entries; where git refuses a
// file, the survey says it may read otherwise (unparsedKey); where the
// survey refuses what git reads (a section starting with a dot, which
// names no setting of git's), what it read before agrees with git.
func TestParseGitConfigDifferential(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	tokens := []string{"[", "]", "[core]", "[remote \"o\"]", " ", "\t", "\"", "\\", "=", " = ", "\n", "\r", "\r\n",
		"#", ";", ".", "a", "A", "1", "-", "\x00", "b", "n", "t", "\\\n", "x", "Y", "fsmonitor", "\v", "\xef\xbb\xbf", "\\b", "\\\"",
		"[.", "[. \"\"]", "[x \"\"]", "\"\"", "[a.B]"}
	rng := rand.New(rand.NewPCG(20, 26))
	dir := t.TempDir()
	refusedMore := 0
	for i := range 1500 {
		var b strings.Builder
		if i%2 == 0 {
			b.WriteString("[core]\n")
		}
		for range 1 + rng.IntN(14) {
			b.WriteString(tokens[rng.IntN(len(tokens))])
		}
		text := b.String()
		path := filepath.Join(dir, "config")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("git", "config", "--file", path, "--list", "-z")
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C")
		out, err := cmd.Output()
		var gits []gitEntry
		if err == nil {
			for _, rec := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
				if rec == "" {
					continue
				}
				k, v, ok := strings.Cut(rec, "\n")
				if !ok {
					v = "true"
				}
				gits = append(gits, gitEntry{k, v})
			}
		} else if _, exited := err.(*exec.ExitError); !exited {
			t.Fatal(err)
		}
		ours := parseGitConfig(text)
		refused := len(ours) > 0 && ours[len(ours)-1].key == unparsedKey
		switch {
		case err != nil && !refused:
			t.Errorf("%q: git refuses it, the survey reads %q", text, ours)
		case err == nil && !refused && !slices.Equal(ours, gits):
			t.Errorf("%q: the survey reads %q, git reads %q", text, ours, gits)
		case err == nil && refused:
			refusedMore++
			if read := ours[:len(ours)-1]; len(read) > len(gits) || !slices.Equal(read, gits[:len(read)]) {
				t.Errorf("%q: the survey reads %q before refusing, git reads %q", text, read, gits)
			}
		}
	}
	t.Logf("texts git reads and the survey refuses: %d of 1500", refusedMore)
}

// TestToldNothingOfUnreadable: the survey tells what a program or a hook
// holds only where a command could change it, and never what lies in a
// path commands cannot read (red team 30 named ~/.ssh/id_rsa as a
// config's program, and as a hook through a link, and read its size and
// the first 96 bits of its sha256 from the note).
func TestToldNothingOfUnreadable(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	mkdir(t, g.home+"/.ssh")
	secret := g.home + "/.ssh/id_test"
	body := "-----BEGIN OPENSSH PRIVATE KEY-----\nsecret\n"
	if err := os.WriteFile(secret, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, secret, g.ws+"/.git/hooks/post-merge")
	mkdir(t, g.ws+"/.git/remotes")
	symlink(t, secret, g.ws+"/.git/remotes/origin")
	g.git(t, "", "config", "core.sshCommand", secret)
	news := g.watch(t).Since(GitState{})
	sum := fmt.Sprintf("%x", sha256.Sum256([]byte(body)))[:24]
	told := 0
	for _, n := range news {
		if strings.Contains(n, sum) || strings.Contains(n, fmt.Sprintf("%d bytes", len(body))) {
			t.Errorf("what an unreadable file holds is told: %q", n)
		}
		if strings.Contains(n, "in a path commands cannot read") {
			told++
		}
	}
	if told != 3 {
		t.Errorf("the program, the hook and the remote are not each told as unreadable: %q", news)
	}
}

// TestGlobalConfigKeptWhenAbsent: with the home inside a writable root (a
// CI step's scratch HOME), the user's git configuration files are kept
// read-only where they are absent too — ~/.gitconfig made empty, the
// folder of ~/.config/git/config made empty — as they are where they
// exist: red team 30 had a command write ~/.gitconfig with a
// core.sshCommand that a git fetch outside the sandbox ran.
func TestGlobalConfigKeptWhenAbsent(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, home := root+"/ws", root+"/ws/home"
	mkdir(t, home)
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("GIT_CONFIG_GLOBAL", "")
	p := policy.DefaultSandbox()
	p.ExcludeSlashTmp = true
	plan, err := Compile(p, ws)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(plan.MakeFiles, home+"/.gitconfig") || !slices.Contains(plan.MakeDirs, home+"/.config/git") {
		t.Errorf("absent user configuration not made to be covered: files %q, dirs %q", plan.MakeFiles, plan.MakeDirs)
	}
	for _, want := range []string{home + "/.gitconfig", home + "/.config/git"} {
		if !slices.Contains(plan.Protected, want) {
			t.Errorf("%s is not kept read-only: %q", want, plan.Protected)
		}
	}
	if !slices.ContainsFunc(plan.Notes, func(n string) bool {
		return strings.HasPrefix(n, "the home folder "+home+" lies inside a writable root")
	}) {
		t.Errorf("no note says the home is writable: %q", plan.Notes)
	}
}

// TestWorktreeHooksFromWhereGitRuns: git takes a linked worktree's
// relative core.hooksPath from the worktree's top, where its .git file
// is, not from what the worktree's gitdir file in the common directory
// says; a command that made the worktree can rewrite that file (red team
// 43: with it naming another folder, a hook planted in the worktree's
// .husky/_ was untold). Every work tree whose .git names the gitdir is
// looked at.
func TestWorktreeHooksFromWhereGitRuns(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	g.git(t, "", "config", "core.hooksPath", ".husky/_")
	g.write(t, ".husky/_/h", "", 0o644)
	g.git(t, "", "worktree", "add", "-q", "wt")
	before := g.watch(t)
	g.write(t, ".git/worktrees/wt/gitdir", g.ws+"/decoy/.git\n", 0o644)
	g.write(t, "wt/.husky/_/pre-commit", "#!/bin/sh\ntouch /tmp/planted\n", 0o755)
	told := g.watch(t).Since(before)
	if !slices.ContainsFunc(told, func(l string) bool { return strings.Contains(l, g.ws+"/wt/.husky/_/pre-commit") }) {
		t.Errorf("a hook in the worktree git runs is untold:\n%s", strings.Join(told, "\n"))
	}
}

// TestUserHomesLookedUpBounded: a configuration a command writes with a
// thousand ~name/ words asks the name services of at most maxHomeNames
// names a plan (each once), and the survey tells the rest were not looked
// up (fresh-eyes review of the static build: one getent a name held every
// later command for 17 s).
func TestUserHomesLookedUpBounded(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	var mu sync.Mutex
	asked := map[string]int{}
	saved := UserHome
	UserHome = func(key string, byID bool) (string, error) {
		if !byID {
			mu.Lock()
			asked[key]++
			mu.Unlock()
		}
		return saved(key, byID)
	}
	t.Cleanup(func() { UserHome = saved })
	var cfg strings.Builder
	cfg.WriteString("[alias]\n")
	for i := range 1000 {
		// Each name twice: the second is not asked again.
		fmt.Fprintf(&cfg, "\ta%d = !~u%d/x ~u%d/y\n", i, i, i)
	}
	g.write(t, ".git/config.d", cfg.String(), 0o644)
	g.git(t, "", "config", "include.path", "config.d")

	plan := g.plan(t, nil)
	mu.Lock()
	n := len(asked)
	for name, times := range asked {
		if times > 1 {
			t.Errorf("~%s asked %d times in one plan", name, times)
		}
	}
	clear(asked)
	mu.Unlock()
	if n > maxHomeNames {
		t.Errorf("one plan asked the homes of %d users, past the bound of %d", n, maxHomeNames)
	}
	if !slices.ContainsFunc(plan.Notes, func(s string) bool { return strings.Contains(s, "were not looked up") }) {
		t.Errorf("the plan does not tell the homes not looked up: %q", plan.Notes)
	}
	// 2000 words, of which maxProgramWords are looked at: 512 names.
	news := g.watch(t).Since(GitState{})
	if !slices.ContainsFunc(news, func(s string) bool {
		return strings.Contains(s, fmt.Sprintf("%d more were not looked up", maxProgramWords/2-maxHomeNames))
	}) {
		t.Errorf("the survey does not tell how many homes it did not look up (%d items, the first %q)", len(news), news[:min(3, len(news))])
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) > maxHomeNames {
		t.Errorf("one survey asked the homes of %d users", len(asked))
	}
}

// fakeHomes has UserHome give homes for the names in homes, fail for
// those in failing, and ask the database for the others, for the test.
func fakeHomes(t *testing.T, homes map[string]string, failing ...string) {
	t.Helper()
	saved := UserHome
	UserHome = func(key string, byID bool) (string, error) {
		if !byID {
			if h, ok := homes[key]; ok {
				return h, nil
			}
			if slices.Contains(failing, key) {
				return "", fmt.Errorf("asking the name services: signal: killed")
			}
		}
		return saved(key, byID)
	}
	t.Cleanup(func() { UserHome = saved })
}

// TestHooksPathTildeName: core.hooksPath = ~victim (no slash) is victim's
// home to git, which runs the hooks there: covered like ~victim/ (fresh-
// eyes review: a home inside the workspace took planted hooks, untold).
func TestHooksPathTildeName(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	mkdir(t, g.ws+"/vh")
	fakeHomes(t, map[string]string{"victim": g.ws + "/vh"})
	g.git(t, "", "config", "core.hooksPath", "~victim")
	if plan := g.plan(t, nil); !slices.Contains(plan.Protected, g.ws+"/vh") {
		t.Errorf("~victim's home, the hooks folder, is not protected: %v", plan.Protected)
	}
	g.write(t, "vh/pre-commit", "#!/bin/sh\n", 0o755)
	if news := g.watch(t).Since(GitState{}); !slices.ContainsFunc(news, func(n string) bool { return strings.Contains(n, g.ws+"/vh/pre-commit") }) {
		t.Errorf("a hook in ~victim is not told: %q", news)
	}
}

// TestUserHomeLookupFailures: a deny_read or protected ~user/ entry whose
// home cannot be looked up stops the plan, with what to do (fresh-eyes
// review: a slow LDAP left deny_read ~ldapalice/secret readable); a name
// of git's configuration that cannot be is told.
func TestUserHomeLookupFailures(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	fakeHomes(t, nil, "ldapalice")
	for _, field := range []string{"deny_read", "protected"} {
		p := policy.Default().Sandbox
		if field == "deny_read" {
			p.DenyRead = append(p.DenyRead, "~ldapalice/secret")
		} else {
			p.Protected = append(p.Protected, "~ldapalice/secret")
		}
		_, err := Compile(p, g.ws)
		if err == nil || !strings.Contains(err.Error(), `home of user "ldapalice" could not be looked up`) || !strings.Contains(err.Error(), "no command runs") {
			t.Errorf("%s ~ldapalice/secret, its home not found: %v", field, err)
		}
	}
	p := policy.Default().Sandbox
	p.DenyRead = append(p.DenyRead, "~no-such-user-here/secret")
	if plan, err := Compile(p, g.ws); err != nil || !slices.ContainsFunc(plan.Notes, func(n string) bool { return strings.Contains(n, "no-such-user-here") && strings.Contains(n, "skipped") }) {
		t.Errorf("an unknown user's entry: %v, notes %q; want it skipped, and said", err, plan.Notes)
	}
	g.git(t, "", "config", "core.fsmonitor", "~ldapalice/fsmon")
	news := g.watch(t).Since(GitState{})
	if !slices.ContainsFunc(news, func(n string) bool { return strings.Contains(n, `could not be looked up ("~ldapalice": `) }) {
		t.Errorf("a home of git's configuration not looked up is not told: %q", news)
	}
}

// TestUserHomesLookupSlowBounded: names answered, slowly: asked until
// the lookups have taken maxHomeTime.
func TestUserHomesLookupSlowBounded(t *testing.T) {
	asked := 0
	saved := UserHome
	UserHome = func(key string, byID bool) (string, error) {
		asked++
		time.Sleep(maxHomeTime/3 + time.Millisecond)
		return "/home/" + key, nil
	}
	t.Cleanup(func() { UserHome = saved })
	var m homeMemo
	for i := range 20 {
		m.userHome(fmt.Sprint("u", i))
	}
	if asked != 3 {
		t.Errorf("%d names asked, each taking %v; want 3 (the bound is %v)", asked, maxHomeTime/3, maxHomeTime)
	}
	if told := m.told(); !strings.Contains(told, "17 more were not looked up") {
		t.Errorf("told %q", told)
	}
}

// TestUserHomesLookupTimeBounded: once a plan's lookup has failed (a
// name service that does not answer), the names left are not asked, and
// that is told (fresh-eyes review: 64 names of 6 s each
// held a command 384 s).
func TestUserHomesLookupTimeBounded(t *testing.T) {
	var mu sync.Mutex
	asked := 0
	saved := UserHome
	UserHome = func(key string, byID bool) (string, error) {
		mu.Lock()
		asked++
		mu.Unlock()
		time.Sleep(maxHomeTime/3 + time.Millisecond)
		return "", fmt.Errorf("asking the name services: signal: killed")
	}
	t.Cleanup(func() { UserHome = saved })
	var m homeMemo
	for i := range 20 {
		m.userHome(fmt.Sprint("u", i))
	}
	if asked != 1 {
		t.Errorf("%d names asked, the first failing; want the first alone", asked)
	}
	told := m.told()
	for _, want := range []string{`could not be looked up ("~u0": asking the name services`, "19 more were not looked up"} {
		if !strings.Contains(told, want) {
			t.Errorf("told %q, want it to say %q", told, want)
		}
	}
}

// TestAccountHomeLookedUpAgainAfterFailure: the account's own home, when
// the name services fail, is asked again at the next plan, not taken as
// none for the program's life.
func TestAccountHomeLookedUpAgainAfterFailure(t *testing.T) {
	saved := UserHome
	t.Cleanup(func() {
		UserHome = saved
		accountHomes.mu.Lock()
		accountHomes.known, accountHomes.home = false, ""
		accountHomes.mu.Unlock()
	})
	accountHomes.mu.Lock()
	accountHomes.known, accountHomes.home = false, ""
	accountHomes.mu.Unlock()
	failing := true
	UserHome = func(key string, byID bool) (string, error) {
		if failing {
			return "", fmt.Errorf("asking the name services: signal: killed")
		}
		return "/home/account", nil
	}
	if h := accountHome(); h != "" {
		t.Fatalf("a failed lookup gave %q", h)
	}
	failing = false
	if h := accountHome(); h != "/home/account" {
		t.Fatalf("after the name services answered again: %q, want /home/account", h)
	}
}

// TestHooksPathTildeAsGit: ~user/ is expanded as git expands it, the rest
// not cleaned as text: a ".." after a link is the link target's parent
// (fresh-eyes review: ~root/../ws/lnk/../hooks was ws/hooks to the plan,
// and the target's parent's hooks to git); and a home given empty is ""
// (~nohome/x is /x to git).
func TestHooksPathTildeAsGit(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	mkdir(t, g.ws+"/vh")
	mkdir(t, g.ws+"/a/b")
	symlink(t, g.ws+"/a/b", g.ws+"/lnk")
	fakeHomes(t, map[string]string{"victim": g.ws + "/vh", "nohome": ""})
	for _, c := range []struct{ value, want string }{
		{"~victim/../lnk/../hooks", g.ws + "/a/hooks"},
		{"~nohome" + g.ws + "/eh", g.ws + "/eh"},
	} {
		g.git(t, "", "config", "core.hooksPath", c.value)
		if plan := g.plan(t, nil); !slices.Contains(plan.Protected, c.want) {
			t.Errorf("core.hooksPath = %s: git's hooks folder %s is not protected: %v", c.value, c.want, plan.Protected)
		}
	}
}

// TestConfigIncludingItself: a configuration that includes itself three
// times (3¹⁰ readings to depth 10) is read once, by the survey and by the
// search for repositories (gitdirSettings); git refuses it
// (fresh-eyes review: 8–16 s every later command).
func TestConfigIncludingItself(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	g.write(t, ".git/loop", strings.Repeat("[include]\n\tpath = loop\n", 3)+"[core]\n\tpager = ./p.sh\n", 0o644)
	g.git(t, "", "config", "include.path", "loop")
	news := g.watch(t).Since(GitState{})
	for _, want := range []string{"/.git/loop: core.pager = ./p.sh"} {
		if !slices.ContainsFunc(news, func(n string) bool { return strings.Contains(n, want) }) {
			t.Errorf("%q is not told: %q", want, news)
		}
	}
}

// TestIncludesPastTheBound: an include past maxIncludes distinct files is
// kept read-only though not read, the file's own entries after it are
// read, and the bound is told after every command (fresh-eyes review: a file included
// past the bound, written by a later command, ran its fsmonitor on the
// host's git status, untold); a file included many times has its entries
// noted once (a million items).
func TestIncludesPastTheBound(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	g.write(t, ".git/empty", strings.Repeat("[alias]\n\tx = !./x.sh\n", 20), 0o644)
	g.write(t, "inc.cfg", "", 0o644)
	var cfg strings.Builder
	for i := range maxIncludes + 10 {
		g.write(t, fmt.Sprintf(".git/inc%d", i), "", 0o644)
		fmt.Fprintf(&cfg, "[include]\n\tpath = inc%d\n[include]\n\tpath = empty\n", i)
	}
	cfg.WriteString("[include]\n\tpath = ../inc.cfg\n[core]\n\tpager = ./after.sh\n")
	g.write(t, ".git/big", cfg.String(), 0o644)
	g.git(t, "", "config", "include.path", "big")
	if plan := g.plan(t, nil); !slices.Contains(plan.Protected, g.ws+"/inc.cfg") {
		t.Errorf("the include past the bound is not protected")
	}
	st := g.watch(t)
	news := st.Since(GitState{})
	if !slices.ContainsFunc(news, func(n string) bool { return strings.Contains(n, "/.git/big: core.pager = ./after.sh") }) {
		t.Errorf("the entry after the bound is not read (%d items)", len(news))
	}
	if n := len(slices.DeleteFunc(slices.Clone(news), func(n string) bool { return !strings.Contains(n, "/.git/empty: alias.x") })); n != 20 {
		t.Errorf("a file included %d times gave %d items of its 20 entries", maxIncludes+10, n)
	}
	if u := st.Unchecked(GitState{}); !slices.ContainsFunc(u, func(n string) bool { return strings.Contains(n, "more than 512 times") }) {
		t.Errorf("the bound is not told after every command: %q", u)
	}
}

// TestHooksPathGitPrefix: %(prefix)/ is git's install prefix, as git
// expands it in a path (fresh-eyes review: %(prefix)/../ws/hk was a
// relative path to the plan, and hooks planted there ran on the host).
func TestHooksPathGitPrefix(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	rel, err := filepath.Rel(gitPrefix(), g.ws+"/hk")
	if err != nil {
		t.Fatal(err)
	}
	g.git(t, "", "config", "core.hooksPath", "%(prefix)/"+rel)
	if plan := g.plan(t, nil); !slices.Contains(plan.Protected, g.ws+"/hk") {
		t.Errorf("core.hooksPath = %%(prefix)/%s: %s is not protected: %v", rel, g.ws+"/hk", plan.Protected)
	}
	// And git itself reads it so.
	out, err := exec.Command("git", "-C", g.ws, "rev-parse", "--git-path", "hooks").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := filepath.Clean(strings.TrimSpace(string(out))); got != g.ws+"/hk" {
		t.Errorf("git's hooks folder is %s, the plan's %s", got, g.ws+"/hk")
	}
}

// TestIncludeAfterRereads: a file included hundreds of times counts once
// toward the bound: an include after them is read (fresh-eyes review: 600
// includes of an empty file, then an absent one a later command wrote
// with a core.fsmonitor, untold).
func TestIncludeAfterRereads(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	g.write(t, ".git/empty", "", 0o644)
	g.write(t, ".git/big", strings.Repeat("[include]\n\tpath = empty\n", 600)+"[include]\n\tpath = ../inc.cfg\n", 0o644)
	g.git(t, "", "config", "include.path", "big")
	before := g.watch(t)
	g.write(t, "inc.cfg", "[core]\n\tfsmonitor = ./evil.sh\n", 0o644)
	if news := g.watch(t).Since(before); !slices.ContainsFunc(news, func(n string) bool { return strings.Contains(n, "/inc.cfg: core.fsmonitor = ./evil.sh") }) {
		t.Errorf("the include after 600 rereads is not read: %q", news)
	}
}

// TestHooksPathEveryValueCovered: each core.hooksPath the configuration
// sets is covered, not only the last read: an includeIf whose condition
// is false makes git take an earlier one (fresh-eyes review: the hooks of
// hk-evil ran on the host, hk-benign, in an includeIf "onbranch:nope",
// was the one covered).
func TestHooksPathEveryValueCovered(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	g.write(t, ".git/benign.cfg", "[core]\n\thooksPath = hk-benign\n", 0o644)
	g.git(t, "", "config", "core.hooksPath", "hk-evil")
	g.git(t, "", "config", "includeIf.onbranch:nope.path", "benign.cfg")
	if out, err := exec.Command("git", "-C", g.ws, "config", "core.hooksPath").Output(); err != nil || strings.TrimSpace(string(out)) != "hk-evil" {
		t.Fatalf("git's core.hooksPath: %q, %v; want hk-evil", out, err)
	}
	plan := g.plan(t, nil)
	for _, d := range []string{g.ws + "/hk-evil", g.ws + "/hk-benign"} {
		if !slices.Contains(plan.Protected, d) {
			t.Errorf("%s is not protected: %v", d, plan.Protected)
		}
	}
}

// TestUserHomesLocalNotCounted: the homes /etc/passwd answers for (see
// LocalHome) are not counted among maxHomeNames: a configuration naming
// more users than the bound, none of them known, still has the hooks
// folder in the home of one the files hold covered (fresh-eyes review:
// 32 unknown names first left core.hooksPath = ~alice/hk uncovered).
func TestUserHomesLocalNotCounted(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	alice := g.ws + "/alice"
	mkdir(t, alice)
	savedLocal, savedHome := LocalHome, UserHome
	t.Cleanup(func() { LocalHome, UserHome = savedLocal, savedHome })
	var mu sync.Mutex
	asked := 0
	LocalHome = func(name string) (string, bool, bool) {
		if name == "alice" {
			return alice, true, true
		}
		return "", false, false
	}
	UserHome = func(key string, byID bool) (string, error) {
		mu.Lock()
		asked++
		mu.Unlock()
		return "", user.UnknownUserError(key)
	}
	var cfg strings.Builder
	cfg.WriteString("[alias]\n")
	for i := range 2 * maxHomeNames {
		fmt.Fprintf(&cfg, "\ta%d = !~u%d/x\n", i, i)
	}
	cfg.WriteString("[core]\n\thooksPath = ~alice/hk\n")
	g.write(t, ".git/config.d", cfg.String(), 0o644)
	g.git(t, "", "config", "include.path", "config.d")
	plan := g.plan(t, nil)
	if !slices.Contains(plan.Protected, alice+"/hk") {
		t.Errorf("~alice/hk, after %d unknown names, is not covered: %v", 2*maxHomeNames, plan.Protected)
	}
	mu.Lock()
	defer mu.Unlock()
	if asked > maxHomeNames {
		t.Errorf("the name services were asked %d times", asked)
	}
}

// TestGitItemsRanked: what a state tells comes ranked — hooks and the
// settings known to run a program first, aliases last — each with its
// kind and file, read from the entry, not from its line: a repository
// whose path holds ": alias.x = " and a diff driver named "x: alias" are
// not taken for aliases (red team 6: fifty aliases sorted by name before
// a planted core.fsmonitor pushed it out of the note).
func TestGitItemsRanked(t *testing.T) {
	g := newGitTree(t)
	dir := "r: alias.x = y"
	g.repo(t, dir)
	cfg := g.ws + "/" + dir + "/.git/config"
	body := "[core]\n\tfsmonitor = ./evil.sh\n[diff \"x: alias\"]\n\ttextconv = ./evil.sh\n[foo]\n\tbar = 1\n[alias]\n"
	for i := range 30 {
		body += fmt.Sprintf("\ta%d = !true\n\tb%d = status\n", i, i)
	}
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(body); err != nil {
		t.Fatal(err)
	}
	f.Close()
	g.write(t, dir+"/.git/hooks/pre-commit", "#!/bin/sh\n", 0o755)
	items := g.watch(t).SinceItems(GitState{})
	find := func(s string) GitItem {
		t.Helper()
		i := slices.IndexFunc(items, func(it GitItem) bool { return strings.Contains(it.Line, s) })
		if i < 0 {
			t.Fatalf("%q is not told: %q", s, itemLines(items))
		}
		return items[i]
	}
	for _, c := range []struct {
		line  string
		rank  int
		one   string
		where string
	}{
		{entryFile(cfg) + ": core.fsmonitor = ./evil.sh", RankEveryday, "core.fsmonitor setting", cfg},
		{entryFile(cfg) + ": diff.x: alias.textconv = ./evil.sh", RankEveryday, "diff.*.textconv setting", cfg},
		{"hook " + g.ws + "/" + dir + "/.git/hooks/pre-commit", RankEveryday, "hook", g.ws + "/" + dir + "/.git/hooks"},
		{entryFile(cfg) + ": foo.bar = 1", RankSetting, "foo.bar setting", cfg},
		{entryFile(cfg) + ": alias.a7 = !true", RankShellAlias, "alias running a shell command", cfg},
		{entryFile(cfg) + ": alias.b7 = status", RankAlias, "alias", cfg},
	} {
		it := find(c.line)
		if it.Rank != c.rank || it.One != c.one || it.Where != c.where {
			t.Errorf("%s: rank %d, %q in %q; want rank %d, %q in %q", c.line, it.Rank, it.One, it.Where, c.rank, c.one, c.where)
		}
	}
	if !slices.IsSortedFunc(items, func(a, b GitItem) int { return a.Rank - b.Rank }) {
		t.Errorf("not ranked: %q", itemLines(items))
	}
	if news := g.watch(t).Since(GitState{}); !strings.Contains(news[0]+news[1]+news[2], "core.fsmonitor") {
		t.Errorf("Since does not list core.fsmonitor among the first: %q", news[:3])
	}
}

// TestContentPastHashBound: a file past what contentOf hashes of its
// start (64 MiB; 1 MiB here) is told by its size and with its end hashed
// too: grown, or rewritten at its end at the same size, it is told again
// (only its first 64 MiB were hashed, their count told as the size); and
// one survey reads a file once, however many entries name it.
func TestContentPastHashBound(t *testing.T) {
	old := maxHashed
	maxHashed = 1 << 20
	t.Cleanup(func() { maxHashed = old })
	dir := t.TempDir()
	p := filepath.Join(dir, "big")
	body := []byte(strings.Repeat("x", 3<<20))
	write := func() string {
		t.Helper()
		if err := os.WriteFile(p, body, 0o755); err != nil {
			t.Fatal(err)
		}
		return contentOf(nil, p)
	}
	first := write()
	if !strings.HasPrefix(first, fmt.Sprintf("%d bytes, sha256 of its first 1 MiB and last 64 KiB ", len(body))) {
		t.Errorf("told as %q", first)
	}
	if again := contentOf(nil, p); again != first {
		t.Errorf("the same file told as %q, then %q", first, again)
	}
	// Past the bound, what lies between its start and its end is not
	// hashed: any write to it is told, the same bytes too (red team 7:
	// a rewrite in the middle, through a hard link, was untold).
	if again := write(); again == first {
		t.Errorf("written again, told as before: %q", again)
	}
	if err := os.Link(p, p+".link"); err != nil {
		t.Fatal(err)
	}
	if linked := contentOf(nil, p); !strings.Contains(linked, ", 2 names (") {
		t.Errorf("a second name is not told: %q", linked)
	}
	os.Remove(p + ".link")
	first = contentOf(nil, p)
	body[len(body)-1] = 'y'
	if end := write(); end == first {
		t.Errorf("a change at its end is not seen: %q", end)
	}
	body = append(body, 'z')
	grown := write()
	if grown == first || !strings.HasPrefix(grown, fmt.Sprintf("%d bytes,", len(body))) {
		t.Errorf("grown, told as %q (was %q)", grown, first)
	}
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := contentOf(nil, small); got != "3 bytes, sha256 ba7816bf8f01cfea414140de" {
		t.Errorf("a small file told as %q", got)
	}
	// Once a survey: what it found first is what it tells.
	s := &gitSurvey{roots: []string{dir}}
	before := s.fingerprint(p)
	body[0] = 'w'
	write()
	if got := s.fingerprint(p); got != before {
		t.Errorf("one survey read the file twice: %q, then %q", before, got)
	}
	if got := (&gitSurvey{roots: []string{dir}}).fingerprint(p); got == before {
		t.Errorf("a new survey does not see the change: %q", got)
	}
}

// TestGitItemsRankedPausedAndPaths: a paused rebase's file not checked or
// read in part, and a path file (commondir, gitdir) past the bound, rank
// with what makes git run a program, and name their folder.
func TestGitItemsRankedPausedAndPaths(t *testing.T) {
	for _, c := range []struct {
		key, where string
	}{
		{pausedStateKey + "/r/.git/rebase-merge/strategy", "/r/.git/rebase-merge"},
		{boundPausedKey + "/r/.git/rebase-merge/git-rebase-todo", "/r/.git/rebase-merge"},
		{boundPathKey + "/r/.git/commondir", "/r/.git"},
	} {
		it := GitState{}.item(c.key, "v")
		if it.Rank > RankRuns || it.Where != c.where {
			t.Errorf("%s: rank %d in %q (%q); want rank at most %d in %q", c.key, it.Rank, it.Where, it.One, RankRuns, c.where)
		}
	}
}

// TestPlanKeep: Keep adds an earlier plan's kept paths that are still
// there, inside a writable root, reached through no link; a link (to the
// root itself here) is not followed, and what is gone or outside is left.
func TestPlanKeep(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	file := filepath.Join(root, "tools", "fsmon.sh")
	os.MkdirAll(filepath.Dir(file), 0o755)
	os.WriteFile(file, []byte("#!/bin/sh\n"), 0o755)
	link := filepath.Join(root, "hooks")
	os.Symlink(".", link)
	p := Plan{WritableRoots: []string{root}}
	p.Keep([]string{file})
	if len(p.Protected) > 0 {
		t.Errorf("kept %q though the survey read all it looked for", p.Protected)
	}
	p.surveyCut = true
	p.Keep([]string{file, link, filepath.Join(root, "gone"), filepath.Join(outside, "x"), outside})
	if !slices.Equal(p.Protected, []string{file}) {
		t.Errorf("kept %q, want only %s", p.Protected, file)
	}
	if !slices.Contains(p.Kept(), file) {
		t.Errorf("Kept() = %q lacks %s", p.Kept(), file)
	}
}

// TestEntryKindRanks: keys that run a program in git's less common
// commands rank with the programs (red team 7: trailer.<t>.command,
// instaweb.httpd, sendemail.<id>.smtpServer and LFS's custom transfers
// ranked with the other settings); pager.<cmd> is one kind, a boolean
// one a setting, a command one among what everyday git runs.
func TestEntryKindRanks(t *testing.T) {
	for _, c := range []struct {
		key, value string
		rank       int
		one        string
	}{
		{"trailer.sign.command", "x", RankRuns, "trailer.*.command setting"},
		{"instaweb.httpd", "x", RankRuns, "instaweb.httpd setting"},
		{"sendemail.work.smtpserver", "/bin/x", RankRuns, "sendemail.*.smtpserver setting"},
		{"lfs.customtransfer.x.path", "x", RankRuns, "lfs.*.path setting"},
		{"pager.log", "false", RankSetting, "pager.* setting"},
		{"pager.p100", "less -R", RankEveryday, "pager.* setting"},
		{"core.fsmonitor", "x", RankEveryday, "core.fsmonitor setting"},
	} {
		if rank, one, _ := entryKind(c.key, c.value); rank != c.rank || one != c.one {
			t.Errorf("%s = %s: rank %d, %q; want %d, %q", c.key, c.value, rank, one, c.rank, c.one)
		}
	}
}
