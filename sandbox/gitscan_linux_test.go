package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/internal/testfs"
	"github.com/unified-exec/unified-exec/policy"

	"golang.org/x/sys/unix"
)

// A watched listing is used without looking its path up again while each
// folder on the way from the root, kept too, still names it (by inode).
// These tests change the way to a kept folder in each way it can change
// without an event of the folder itself.

// TestDirCacheFolderFarAboveMoved: a folder two and three levels above a
// watched one renamed away and the same path made again, with a .git at
// the end.
func TestDirCacheFolderFarAboveMoved(t *testing.T) {
	for _, above := range []string{"a", "a/b"} {
		ws := t.TempDir()
		mkdir(t, ws+"/a/b/c/proj")
		findRepos([]string{ws}, nil, nil, nil)
		if !watchedNow(ws + "/a/b/c/proj") {
			t.Skip("no inotify here")
		}
		if err := os.Rename(ws+"/"+above, ws+"/old"); err != nil {
			t.Fatal(err)
		}
		mkdir(t, ws+"/a/b/c/proj/.git")
		if f := findRepos([]string{ws}, nil, nil, nil); len(f.dotGitDirs) != 1 {
			t.Errorf("%s renamed and made again: the .git below is missed: %+v", above, f)
		}
	}
}

// TestDirCacheRootMoved: the root itself, and the folder above it,
// renamed away and made again.
func TestDirCacheRootMoved(t *testing.T) {
	for _, moved := range []string{"base/ws", "base"} {
		top := t.TempDir()
		ws := top + "/base/ws"
		mkdir(t, ws+"/in/proj")
		findRepos([]string{ws}, nil, nil, nil)
		if !watchedNow(ws + "/in/proj") {
			t.Skip("no inotify here")
		}
		if err := os.Rename(top+"/"+moved, top+"/old"); err != nil {
			t.Fatal(err)
		}
		mkdir(t, ws+"/in/proj/.git")
		if f := findRepos([]string{ws}, nil, nil, nil); len(f.dotGitDirs) != 1 {
			t.Errorf("%s renamed and made again: the .git below the root is missed: %+v", moved, f)
		}
	}
}

// TestDirCacheFoldersSwapped: two folders exchanged in one step
// (renameat2 RENAME_EXCHANGE): each path leads to the other's folder.
func TestDirCacheFoldersSwapped(t *testing.T) {
	ws := t.TempDir()
	mkdir(t, ws+"/x/p")
	mkdir(t, ws+"/y/p/.git")
	if f := findRepos([]string{ws}, nil, nil, nil); len(f.dotGitDirs) != 1 || f.dotGitDirs[0][1] != ws+"/y/p" {
		t.Fatalf("findRepos: %+v", f)
	}
	if !watchedNow(ws + "/x/p") {
		t.Skip("no inotify here")
	}
	if err := unix.Renameat2(unix.AT_FDCWD, ws+"/x", unix.AT_FDCWD, ws+"/y", unix.RENAME_EXCHANGE); err != nil {
		t.Skipf("renameat2: %v", err)
	}
	if f := findRepos([]string{ws}, nil, nil, nil); len(f.dotGitDirs) != 1 || f.dotGitDirs[0][1] != ws+"/x/p" {
		t.Errorf("after x and y were exchanged the repository is at x/p: %+v", f)
	}
}

// TestDirCacheMountedOver: a file system mounted on a kept folder (a
// mount makes no event of the folder above): the .git in what is mounted
// is found, by a bind mount of the same file system too. Root, in a
// mount namespace of its own.
func TestDirCacheMountedOver(t *testing.T) {
	if !testfs.InOwnMountNS(t) {
		return
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		t.Fatal(err)
	}
	for _, how := range []string{"tmpfs", "bind"} {
		ws := t.TempDir()
		mkdir(t, ws+"/m/proj")
		mkdir(t, ws+"/other/proj/.git")
		os.Remove(ws + "/other/proj/.git") // other/ is read, and has none yet
		findRepos([]string{ws}, nil, nil, nil)
		if !watchedNow(ws + "/m/proj") {
			t.Skip("no inotify here")
		}
		switch how {
		case "tmpfs":
			if err := unix.Mount("tmpfs", ws+"/m", "tmpfs", 0, ""); err != nil {
				t.Fatal(err)
			}
		case "bind":
			if err := unix.Mount(ws+"/other", ws+"/m", "", unix.MS_BIND, ""); err != nil {
				t.Fatal(err)
			}
		}
		t.Cleanup(func() { unix.Unmount(ws+"/m", unix.MNT_DETACH) })
		mkdir(t, ws+"/m/proj/.git")
		f := findRepos([]string{ws}, nil, nil, nil)
		if len(f.dotGitDirs) < 1 || f.dotGitDirs[0][1] != filepath.Join(ws, "m/proj") {
			t.Errorf("%s mounted on a kept folder: its .git is missed: %+v", how, f)
		}
	}
}

// TestFindReposWideFolderLast: a folder of thousands of subfolders (a
// virtualenv's lib/) does not spend the bound before the sources are
// read: a repository four folders down in src/ is found (red team 22).
func TestFindReposWideFolderLast(t *testing.T) {
	ws := t.TempDir()
	for i := range GitScanDirs + 100 {
		mkdir(t, fmt.Sprintf("%s/.venv/lib/%d", ws, i))
	}
	mkdir(t, ws+"/src/p/q/r/.git")
	f := findRepos([]string{ws}, nil, nil, nil)
	if !slices.ContainsFunc(f.dotGitDirs, func(d [2]string) bool { return d[1] == ws+"/src/p/q/r" }) {
		t.Errorf("the repository in src/ past a wide .venv/lib/ is missed: %+v", f)
	}
	if !slices.Equal(f.truncated, []string{ws}) {
		t.Errorf("the bound was reached and not said: %+v", f.truncated)
	}
}

// TestReadAfterMappedWrite: a configuration and an index are read as
// they are now even after a write through a shared mapping to a page
// already dirty, which moves no change time (red team 26: a survey kept a
// harmless reading keyed by the file's status, and the harmful content
// written so after it was never told).
func TestReadAfterMappedWrite(t *testing.T) {
	dir := t.TempDir()
	mapped := func(path string, content []byte) []byte {
		t.Helper()
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		m, err := unix.Mmap(int(f.Fd()), 0, len(content), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Munmap(m) })
		m[0] = content[0] // dirty the page: its one change of times
		return m
	}
	config := filepath.Join(dir, "config")
	cm := mapped(config, []byte("[core]\n\tpager = aaaa\n"))
	const file, link = 0o100644, 0o160000
	idxPath := filepath.Join(dir, "index")
	im := mapped(idxPath, index(2, indexEntry(file, "node_modules/pkg", false)))
	time.Sleep(racyWindow + 100*time.Millisecond)
	if got := lastValue(readGitConfig(nil, config), "core.pager"); got != "aaaa" {
		t.Fatalf("pager = %q", got)
	}
	if idx := indexGitlinks(nil, idxPath, 20); !idx.ok || len(idx.links) != 0 {
		t.Fatalf("index: %+v", idx)
	}
	copy(cm, "[core]\n\tpager = bbbb\n")
	copy(im, index(2, indexEntry(link, "node_modules/pkg", false)))
	if got := lastValue(readGitConfig(nil, config), "core.pager"); got != "bbbb" {
		t.Errorf("the configuration written through the mapping: pager = %q", got)
	}
	if idx := indexGitlinks(nil, idxPath, 20); !slices.Equal(idx.links, []string{"node_modules/pkg"}) {
		t.Errorf("the index written through the mapping: links %q", idx.links)
	}
}

// TestFindReposAbove: git run in a workspace with no .git takes the
// repository of the nearest folder above it: one a command makes in a
// folder above the workspace that lies in another writable root (/tmp) is
// found, a .git there or the folder a gitdir itself (red team 26).
func TestFindReposAbove(t *testing.T) {
	for _, bare := range []bool{false, true} {
		tmp, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		ws := tmp + "/a/b/c/ws" // below the search of /tmp, one folder deep
		mkdir(t, ws)
		if bare {
			mkdir(t, tmp+"/a/b/c/objects")
			mkdir(t, tmp+"/a/b/c/refs")
			if err := os.WriteFile(tmp+"/a/b/c/HEAD", []byte("ref: refs/heads/main\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			mkdir(t, tmp+"/a/b/.git")
		}
		f := findRepos([]string{tmp, ws}, []string{tmp}, nil, nil)
		if found := len(f.dotGitDirs) == 1 && f.dotGitDirs[0][1] == tmp+"/a/b" || slices.Equal(f.bare, []string{tmp + "/a/b/c"}); !found {
			t.Errorf("bare %v: the repository above the workspace is not found: %+v", bare, f)
		}
	}
}

// TestGitSurveyWaitsOnNothing: a command may put a FIFO, or a link to a
// stream the program would read as its own, wherever the survey reads —
// a new repository's config, HEAD, commondir, index and hooks, a .git
// file, a folder the plan lists, a file an include names — and neither
// the plan nor the git state waits on it (red team 41 hung the wrapper
// with a FIFO at r/.git/config: every later call would have hung too); a
// config that is none is told, as what is not checked.
func TestGitSurveyWaitsOnNothing(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	fifo := func(p string) {
		t.Helper()
		mkdir(t, filepath.Dir(p))
		if err := unix.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A repository of FIFOs.
	fifo(g.ws + "/r/.git/config")
	fifo(g.ws + "/r/.git/HEAD")
	fifo(g.ws + "/r/.git/commondir")
	fifo(g.ws + "/r/.git/index")
	mkdir(t, g.ws+"/r/.git/objects")
	mkdir(t, g.ws+"/r/.git/refs")
	fifo(g.ws + "/r/.git/hooks/pre-commit")
	// A .git file that is a FIFO, and a gitdir named by a regular one
	// whose config is a link to a pipe of this process (its stdin, to it).
	fifo(g.ws + "/p/.git")
	rd, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	defer wr.Close()
	mkdir(t, g.ws+"/s/gitdir/objects")
	mkdir(t, g.ws+"/s/gitdir/refs")
	g.write(t, "s/gitdir/HEAD", "ref: refs/heads/main\n", 0o644)
	symlink(t, fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), rd.Fd()), g.ws+"/s/gitdir/config")
	g.write(t, "s/w/.git", "gitdir: "+g.ws+"/s/gitdir\n", 0o644)
	// The workspace's own config includes a FIFO.
	fifo(g.ws + "/inc.fifo")
	g.git(t, "", "config", "include.path", g.ws+"/inc.fifo")

	done := make(chan GitState, 1)
	go func() {
		p := policy.DefaultSandbox()
		p.ExcludeSlashTmp = true
		if _, err := Compile(p, g.ws); err != nil {
			t.Error(err)
		}
		st, err := WatchGit(p, g.ws)
		if err != nil {
			t.Error(err)
		}
		done <- st
	}()
	select {
	case st := <-done:
		told := strings.Join(st.Since(GitState{}), "\n")
		for _, want := range []string{g.ws + "/r/.git/config", g.ws + "/inc.fifo", g.ws + "/s/gitdir/config"} {
			if !strings.Contains(told, want) || !strings.Contains(told, "not a regular file") {
				t.Errorf("%s, no regular file, is not told as unchecked:\n%s", want, told)
			}
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the survey is waiting on a FIFO or a pipe (20 s)")
	}
}

// TestGitSurveyTellsReaderDependentLinks: what a new repository's gitdir
// reaches through a link each process reads as its own (/proc/self/cwd,
// /dev/fd/../cwd) is told as not checked. The program reads such a link
// from its own working directory (the workspace), git from the
// repository's top: red team 42 had git run a planted fsmonitor, a
// pre-commit and a common directory's hook that way, and nothing was told.
func TestGitSurveyTellsReaderDependentLinks(t *testing.T) {
	g := newGitTree(t)
	t.Chdir(g.ws) // as a server started in its workspace
	p := policy.DefaultSandbox()
	p.ExcludeSlashTmp = true
	before, err := WatchGit(p, g.ws)
	if err != nil {
		t.Fatal(err)
	}
	fsmonitor := "[core]\n\tfsmonitor = \"touch /tmp/planted; false\"\n"
	hook := "#!/bin/sh\ntouch /tmp/planted\n"
	initRepo := func(r string) {
		t.Helper()
		mkdir(t, filepath.Join(g.ws, r))
		g.git(t, r, "init", "-q")
	}
	replace := func(path, target string) {
		t.Helper()
		if err := os.RemoveAll(path); err != nil {
			t.Fatal(err)
		}
		symlink(t, target, path)
	}
	// The configuration.
	initRepo("r1")
	g.write(t, "r1/x.cfg", fsmonitor, 0o644)
	replace(g.ws+"/r1/.git/config", "/proc/self/cwd/x.cfg")
	// The hooks folder.
	initRepo("r2")
	g.write(t, "r2/h/pre-commit", hook, 0o755)
	replace(g.ws+"/r2/.git/hooks", "/proc/self/cwd/h")
	// The common directory, naming a repository outside the workspace.
	initRepo("r3")
	evil := filepath.Join(g.root, "evil")
	if out, err := exec.Command("git", "init", "-q", "--bare", evil).CombinedOutput(); err != nil {
		t.Fatalf("git init --bare: %v %s", err, out)
	}
	if err := os.WriteFile(evil+"/hooks/post-commit", []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	g.write(t, "r3/cd", evil+"\n", 0o644)
	symlink(t, "/proc/self/cwd/cd", g.ws+"/r3/.git/commondir")
	// One hook, through /dev/fd.
	initRepo("r4")
	g.write(t, "r4/evil", hook, 0o755)
	symlink(t, "/dev/fd/../cwd/evil", g.ws+"/r4/.git/hooks/pre-commit")
	// The configuration through a plain link first, then the reader's.
	initRepo("r5")
	g.write(t, "r5/x.cfg", fsmonitor, 0o644)
	symlink(t, "/proc/self/cwd/x.cfg", g.ws+"/r5/lnk")
	replace(g.ws+"/r5/.git/config", "../lnk")
	// A commondir naming, as text, a path each process reads as its own:
	// from the workspace it leads back to the gitdir itself (nothing to
	// tell, read so), from the repository's top to r7/r7/.git.
	initRepo("r7")
	g.write(t, "r7/.git/commondir", "/proc/self/cwd/r7/.git\n", 0o644)
	// A .git file naming a gitdir relative through a link to
	// /proc/self/cwd (red team 43: the text was looked at only).
	mkdir(t, g.ws+"/r8")
	symlink(t, "/proc/self/cwd", g.ws+"/r8/lnk")
	g.write(t, "r8/.git", "gitdir: lnk/g\n", 0o644)
	// A control: a hooks folder linked plainly is not the reader's.
	initRepo("r6")
	g.write(t, "r6/h/pre-commit", hook, 0o755)
	replace(g.ws+"/r6/.git/hooks", "../h")

	// git, run in the repository, reads the planted configuration.
	if out := g.git(t, "r1", "config", "core.fsmonitor"); !strings.Contains(out, "/tmp/planted") {
		t.Fatalf("git in r1 does not read the planted configuration: %q", out)
	}
	after, err := WatchGit(p, g.ws)
	if err != nil {
		t.Fatal(err)
	}
	told := strings.Join(after.Since(before), "\n")
	for _, want := range []string{g.ws + "/r1/.git/config", g.ws + "/r2/.git/hooks", g.ws + "/r3/.git/commondir", g.ws + "/r4/.git/hooks/pre-commit", g.ws + "/r5/.git/config"} {
		if !slices.ContainsFunc(strings.Split(told, "\n"), func(l string) bool {
			return strings.Contains(l, want) && strings.Contains(l, "each process reads as its own")
		}) {
			t.Errorf("%s, reached through a reader's own link, is not told:\n%s", want, told)
		}
	}
	if !strings.Contains(told, g.ws+"/r7/.git/commondir names = /proc/self/cwd/r7/.git (a path each process reads as its own") {
		t.Errorf("a commondir naming /proc/self/cwd/... is not told:\n%s", told)
	}
	if !strings.Contains(told, g.ws+"/r8/.git names = lnk/g (a path each process reads as its own") {
		t.Errorf("a .git file naming a gitdir through a reader's own link is not told:\n%s", told)
	}
	if strings.Contains(told, g.ws+"/r6/.git/hooks is reached") {
		t.Errorf("a plainly linked hooks folder is told as a reader's own link:\n%s", told)
	}
	if !strings.Contains(told, "an executable hook "+g.ws+"/r6/.git/hooks/pre-commit") {
		t.Errorf("the plainly linked hooks folder's hook is not told:\n%s", told)
	}
}

// TestPausedStateUncheckedTold: the files of a paused rebase or
// cherry-pick that git reads — the to-do lists, the strategy, the
// sequencer's options — reached through a link each process reads as
// its own, or that are no regular file, are told as not checked, as the
// gitdir's own are (red team 6: links to /proc/self/cwd/…, which git, run
// from the work tree's top, read as the work tree's files, with an exec
// line and a strategy x/evil, were dropped, untold).
func TestPausedStateUncheckedTold(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	before := g.watch(t)
	g.write(t, ".git/rebase-merge/interactive", "", 0o644)
	mkdir(t, g.ws+"/.git/sequencer")
	g.write(t, "s", "x/evil\n", 0o644)
	g.write(t, "t", "exec ./evil.sh\n", 0o644)
	g.write(t, "o", "[options]\n\tstrategy = x/evil\n", 0o644)
	links := map[string]string{"rebase-merge/strategy": "/proc/self/cwd/s", "rebase-merge/git-rebase-todo": "/proc/self/cwd/t", "sequencer/opts": "/proc/self/cwd/o"}
	for l, target := range links {
		symlink(t, target, g.ws+"/.git/"+l)
	}
	if err := unix.Mkfifo(g.ws+"/.git/sequencer/todo", 0o644); err != nil {
		t.Fatal(err)
	}
	news := g.watch(t).Since(before)
	for l := range links {
		if !slices.ContainsFunc(news, func(n string) bool {
			return strings.Contains(n, g.ws+"/.git/"+l+": ") && strings.Contains(n, "each process reads as its own")
		}) {
			t.Errorf(".git/%s, a link to /proc/self/cwd/…, is not told: %q", l, news)
		}
	}
	if !slices.ContainsFunc(news, func(n string) bool {
		return strings.Contains(n, g.ws+"/.git/sequencer/todo: ") && strings.Contains(n, "not a regular file")
	}) {
		t.Errorf("a FIFO for .git/sequencer/todo is not told: %q", news)
	}
}
