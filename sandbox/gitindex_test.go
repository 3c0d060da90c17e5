package sandbox

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/policy"
)

// shell runs script in dir (git with an identity), failing the test on
// an error.
func shell(t *testing.T, dir, script string) string {
	t.Helper()
	cmd := exec.Command("sh", "-ec", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return string(out)
}

// gitWorkspace is a fresh folder (resolved) for a test that needs git.
func gitWorkspace(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

// TestGitlinksFollowed: a submodule the workspace's index records is a
// repository the survey covers whatever its depth (past GitScanDepth),
// its folder's name (node_modules) or the folders before it (past
// GitScanDirs), in each index version, split or not, and in a sha256
// repository; one not populated is not (git does not enter it). Red team
// 18 had the host's git status run a core.fsmonitor in each of the
// first three, unreported.
func TestGitlinksFollowed(t *testing.T) {
	for _, c := range []struct{ name, format, index string }{
		{"v2", "sha1", "git update-index --index-version 2"},
		{"v3", "sha1", "git update-index --index-version 3"},
		{"v4", "sha1", "git update-index --index-version 4"},
		{"split", "sha1", "git update-index --split-index"},
		{"sha256", "sha256", "true"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := gitWorkspace(t)
			shell(t, ws, `F=--object-format=`+c.format+`
git init -q $F . && git commit -q --allow-empty -m root
mkdir -p m && (cd m && seq 1100 | xargs mkdir)
for p in a/b/c/d/e node_modules/pkg m/5/sub unpopulated; do
  mkdir -p $p && git -C $p init -q $F . && git -C $p commit -q --allow-empty -m x
  git update-index --add --cacheinfo 160000,$(git -C $p rev-parse HEAD),$p
done
git -C a/b/c/d/e update-index --add --cacheinfo 160000,$(git -C a/b/c/d/e rev-parse HEAD),deeper
mkdir -p a/b/c/d/e/deeper && git -C a/b/c/d/e/deeper init -q $F .
rm -rf unpopulated/.git
`+c.index)
			f := findRepos([]string{ws}, nil, nil, nil)
			var trees []string
			for _, d := range f.dotGitDirs {
				trees = append(trees, strings.TrimPrefix(d[1], ws+"/"))
			}
			for _, want := range []string{"a/b/c/d/e", "node_modules/pkg", "m/5/sub", "a/b/c/d/e/deeper"} {
				if !slices.Contains(trees, want) {
					t.Errorf("the submodule %s is not covered: %v", want, trees)
				}
			}
			if slices.Contains(trees, "unpopulated") {
				t.Errorf("an unpopulated submodule is said a repository: %v", trees)
			}
		})
	}
}

// TestSplitGitdirFound: a gitdir split in two — HEAD and a commondir file
// in one folder, objects/, refs/ and config in the folder it names — is a
// repository (git run in the first takes the second's config).
func TestSplitGitdirFound(t *testing.T) {
	ws := gitWorkspace(t)
	shell(t, ws, `git init -q --bare .cfg && rm .cfg/HEAD && mkdir src
echo 'ref: refs/heads/master' > src/HEAD && echo ../.cfg > src/commondir
git -C src rev-parse --git-dir`)
	f := findRepos([]string{ws}, nil, nil, nil)
	if !slices.Contains(f.bare, filepath.Join(ws, "src")) {
		t.Fatalf("the gitdir split into src and .cfg is not found: %+v", f)
	}
}

// TestGitlinksCacheSeesChange: an index kept (unchanged past the racy
// window) and then changed — a submodule added — is read again.
func TestGitlinksCacheSeesChange(t *testing.T) {
	ws := gitWorkspace(t)
	shell(t, ws, `git init -q . && git commit -q --allow-empty -m root
mkdir -p node_modules/pkg && git -C node_modules/pkg init -q . && git -C node_modules/pkg commit -q --allow-empty -m x`)
	time.Sleep(racyWindow + 100*time.Millisecond)
	for range 2 {
		if f := findRepos([]string{ws}, nil, nil, nil); len(f.dotGitDirs) != 1 {
			t.Fatalf("before the submodule: %+v", f)
		}
	}
	index := filepath.Join(ws, ".git", "index")
	indexes.mu.Lock()
	_, kept := indexes.m[index]
	indexes.mu.Unlock()
	if !kept {
		t.Fatal("the index, unchanged past the racy window, was not kept")
	}
	shell(t, ws, `git update-index --add --cacheinfo 160000,$(git -C node_modules/pkg rev-parse HEAD),node_modules/pkg`)
	if f := findRepos([]string{ws}, nil, nil, nil); len(f.dotGitDirs) != 2 {
		t.Fatalf("the submodule added to a kept index is not covered: %+v", f)
	}
}

// TestWatchGitReportsBound: a command that makes the search for
// repositories stop at its bound is told of it by the report after the
// command (the plan's note reached no one: red team 18).
func TestWatchGitReportsBound(t *testing.T) {
	ws := gitWorkspace(t)
	p := policy.DefaultSandbox()
	p.ExcludeSlashTmp, p.ExcludeTmpdirEnvVar = true, true
	before, err := WatchGit(p, ws)
	if err != nil {
		t.Fatal(err)
	}
	shell(t, ws, `mkdir m && cd m && seq 1100 | xargs mkdir`)
	after, err := WatchGit(p, ws)
	if err != nil {
		t.Fatal(err)
	}
	news := after.Since(before)
	if !slices.ContainsFunc(news, func(n string) bool { return strings.Contains(n, "stopped at its bound") }) {
		t.Fatalf("the report after 1100 folders were made says nothing of the bound: %q", news)
	}
}

// TestWatchGitReportsDepthBound: a repository made past the search's
// depth bound (257 folders down, a path of 514 bytes) is told as the
// folder bound is: the search stops there (red team 43: untold, and the
// host's git add, commit and status ran its fsmonitor).
func TestWatchGitReportsDepthBound(t *testing.T) {
	ws := gitWorkspace(t)
	p := policy.DefaultSandbox()
	p.ExcludeSlashTmp, p.ExcludeTmpdirEnvVar = true, true
	before, err := WatchGit(p, ws)
	if err != nil {
		t.Fatal(err)
	}
	shell(t, ws, `mkdir -p $(printf 'd/%.0s' $(seq 255)) && cd $(printf 'd/%.0s' $(seq 255)) && mkdir r && git init -q r`)
	if news := func() []string { st, _ := WatchGit(p, ws); return st.Since(before) }(); slices.ContainsFunc(news, func(n string) bool { return strings.Contains(n, "stopped at its bound") }) {
		t.Fatalf("a repository within the depth bound is told as past it: %q", news)
	}
	shell(t, ws, `cd $(printf 'd/%.0s' $(seq 255)) && mkdir -p d/r && git init -q d/r`)
	after, err := WatchGit(p, ws)
	if err != nil {
		t.Fatal(err)
	}
	news := after.Since(before)
	if !slices.ContainsFunc(news, func(n string) bool { return strings.Contains(n, "stopped at its bound") }) {
		t.Fatalf("the report after a repository past the depth bound says nothing of the bound: %q", news)
	}
}

// indexEntry is one version 2/3 entry of an index: mode, flags (the
// name's length in the low 12 bits), extended flags when flags say so.
func indexEntry(mode uint32, name string, extended bool) []byte {
	e := make([]byte, 62)
	binary.BigEndian.PutUint32(e[24:28], mode)
	flags := uint16(min(len(name), 0xfff))
	if extended {
		flags |= 0x4000
		e = append(e, 0, 0)
	}
	binary.BigEndian.PutUint16(e[60:62], flags)
	e = append(e, name...)
	return append(e, make([]byte, 8-(len(e)%8))...) // 1 to 8 NULs
}

// index is an index file of version v with entries, and a checksum's room.
func index(v uint32, entries ...[]byte) []byte {
	b := []byte("DIRC")
	b = binary.BigEndian.AppendUint32(b, v)
	b = binary.BigEndian.AppendUint32(b, uint32(len(entries)))
	for _, e := range entries {
		b = append(b, e...)
	}
	return append(b, make([]byte, 20)...)
}

// TestParseIndexAsGit: entries read as git reads them (red team 19 hid a
// submodule behind an entry parseIndex stepped over differently): the
// extended flags in a version 2 index, a name with a NUL inside its
// length; a name longer than any path or an index cut short is not read
// (and so reported), never taken for one without submodules.
func TestParseIndexAsGit(t *testing.T) {
	const file, link = 0o100644, 0o160000
	for _, c := range []struct {
		name  string
		b     []byte
		links []string
		ok    bool
	}{
		{"plain", index(2, indexEntry(file, "a", false), indexEntry(link, "node_modules/pkg", false)), []string{"node_modules/pkg"}, true},
		{"extended in v2", index(2, indexEntry(file, "a", true), indexEntry(link, "node_modules/pkg", false)), []string{"node_modules/pkg"}, true},
		{"NUL inside the name", index(2, indexEntry(file, "a\x00bcdefghijklmn", false), indexEntry(link, "node_modules/pkg", false)), []string{"node_modules/pkg"}, true},
		{"a submodule's name with a NUL", index(2, indexEntry(link, "sub\x00hidden", false)), []string{"sub"}, true},
		{"cut short", index(2, indexEntry(file, "a", false), indexEntry(link, "node_modules/pkg", false))[:90], nil, false},
		{"a name past any path", index(2, indexEntry(file, strings.Repeat("x", maxIndexName+1), false)), nil, false},
	} {
		idx := parseIndex(c.b, 20, false)
		if !slices.Equal(idx.links, c.links) || idx.ok != c.ok {
			t.Errorf("%s: links %q ok %v, want %q %v", c.name, idx.links, idx.ok, c.links, c.ok)
		}
	}
}

// TestSplitIndexReplacedBySubmodule: in a split index, a file replaced by
// a submodule is an entry with no name (git takes the shared entry's):
// the submodule is covered all the same (red team 19).
func TestSplitIndexReplacedBySubmodule(t *testing.T) {
	ws := gitWorkspace(t)
	shell(t, ws, `git init -q . && git commit -q --allow-empty -m root
mkdir -p node_modules/pkg && echo x > node_modules/pkg/file
git update-index --add node_modules/pkg/file
git update-index --force-remove node_modules/pkg/file
printf x > node_modules/pkgfile && mv node_modules/pkgfile node_modules/pkg.tmp && rm -rf node_modules/pkg && mv node_modules/pkg.tmp node_modules/pkg
git update-index --add node_modules/pkg
git update-index --split-index
rm node_modules/pkg && mkdir node_modules/pkg && git -C node_modules/pkg init -q . && git -C node_modules/pkg commit -q --allow-empty -m x
git update-index --cacheinfo 160000,$(git -C node_modules/pkg rev-parse HEAD),node_modules/pkg
git ls-files -s node_modules/pkg | grep -q ^160000`)
	f := findRepos([]string{ws}, nil, nil, nil)
	found := slices.ContainsFunc(f.dotGitDirs, func(d [2]string) bool { return d[1] == filepath.Join(ws, "node_modules/pkg") })
	if !found && !slices.Contains(f.unreadIndexes, ws) {
		t.Fatalf("the submodule that replaced a shared index's file is neither covered nor reported: %+v", f)
	}
	if !found {
		t.Errorf("the submodule is only reported, not covered: %+v", f)
	}
}

// TestParseIndexBlocks: a submodule entry hidden in a file's name bytes,
// where an IEOT extension starts a block (git, loading in threads, reads
// it there: red team 20), is read; a block past the entries is not taken
// for one without submodules (the index is reported).
func TestParseIndexBlocks(t *testing.T) {
	const file, link = 0o100644, 0o160000
	inner := indexEntry(link, "node_modules/pkg", false)
	outer := indexEntry(file, "a\x00"+string(inner), false)
	ext := func(sig string, data []byte) []byte {
		e := append([]byte(sig), binary.BigEndian.AppendUint32(nil, uint32(len(data)))...)
		return append(e, data...)
	}
	build := func(blockAt uint32) []byte {
		b := index(2, outer)
		b = b[:len(b)-20] // the checksum goes last
		extAt := uint32(len(b))
		ieot := binary.BigEndian.AppendUint32(nil, 1)
		ieot = binary.BigEndian.AppendUint32(ieot, blockAt)
		ieot = binary.BigEndian.AppendUint32(ieot, 1)
		b = append(b, ext("IEOT", ieot)...)
		b = append(b, ext("EOIE", append(binary.BigEndian.AppendUint32(nil, extAt), make([]byte, 20)...))...)
		return append(b, make([]byte, 20)...)
	}
	if idx := parseIndex(build(12+62+2), 20, false); !idx.ok || !slices.Equal(idx.links, []string{"node_modules/pkg"}) {
		t.Errorf("the submodule an IEOT block starts at: links %q ok %v", idx.links, idx.ok)
	}
	if idx := parseIndex(build(1<<20), 20, false); idx.ok {
		t.Errorf("an IEOT block past the entries was taken for no submodules")
	}
}

// indexExt is an index extension: its signature, size and data.
func indexExt(sig string, data []byte) []byte {
	e := append([]byte(sig), binary.BigEndian.AppendUint32(nil, uint32(len(data)))...)
	return append(e, data...)
}

// eoieExt is an EOIE extension naming off, with the hash git checks: of
// the headers (signature and size) of the extensions from off.
func eoieExt(off uint32, headers ...[]byte) []byte {
	h := sha1.New()
	for _, e := range headers {
		h.Write(e[:8])
	}
	return indexExt("EOIE", append(binary.BigEndian.AppendUint32(nil, off), h.Sum(nil)...))
}

// ieotExt is an IEOT extension of one block: at off, n entries.
func ieotExt(off, n uint32) []byte {
	return indexExt("IEOT", binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 1), off), n))
}

// TestParseIndexExtensionsAsGitFinds: git finds the EOIE extension at its
// fixed place before the checksum, not by walking the extensions, and
// takes the first IEOT from where EOIE says; red team 21 gave git a
// block at a submodule hidden in a file's name two ways the walk read
// otherwise: two IEOT extensions (the walk kept the last), and EOIE and
// IEOT inside an unknown extension's data (the walk stepped over them).
// Either the submodule is read or the index is reported.
func TestParseIndexExtensionsAsGitFinds(t *testing.T) {
	const file, link = 0o100644, 0o160000
	inner := indexEntry(link, "node_modules/pkg", false)
	outer := indexEntry(file, "a\x00"+string(inner), false)
	const hidden = 12 + 62 + 2 // where inner lies
	entries := index(2, outer)
	entries = entries[:len(entries)-20]
	extAt := uint32(len(entries))
	evil, benign := ieotExt(hidden, 1), ieotExt(12, 1)
	for _, c := range []struct {
		name string
		ext  []byte
	}{
		{"two IEOT", slices.Concat(evil, benign, eoieExt(extAt, evil, benign))},
		{"EOIE inside an unknown extension", indexExt("ZZZZ", slices.Concat(evil, eoieExt(extAt+8, evil)))},
		{"EOIE naming a later offset", slices.Concat(indexExt("ZZZZ", nil), evil, eoieExt(extAt+8, evil))},
	} {
		b := slices.Concat(entries, c.ext, make([]byte, 20))
		if idx := parseIndex(b, 20, false); idx.ok && !slices.Contains(idx.links, "node_modules/pkg") {
			t.Errorf("%s: the submodule git loads is neither read nor the index reported: links %q", c.name, idx.links)
		}
	}
	// What git writes is read as before.
	b := slices.Concat(entries, benign, eoieExt(extAt, benign), make([]byte, 20))
	if idx := parseIndex(b, 20, false); !idx.ok || len(idx.links) != 0 {
		t.Errorf("an index as git writes it: links %q ok %v", idx.links, idx.ok)
	}
}

// TestParseIndexV4FirstStrip: git ignores the number stripped from the
// name before a block's first entry (there is no name before it); an index
// that strips one there is read, not reported (red team 21: a false
// report teaches people to pass over the note).
func TestParseIndexV4FirstStrip(t *testing.T) {
	v4 := func(strip byte, name string, mode uint32) []byte {
		e := make([]byte, 62)
		binary.BigEndian.PutUint32(e[24:28], mode)
		binary.BigEndian.PutUint16(e[60:62], uint16(len(name)))
		return append(append(append(e, strip), name...), 0)
	}
	b := index(4, v4(1, "a", 0o100644), v4(1, "node_modules/pkg", 0o160000))
	if idx := parseIndex(b, 20, false); !idx.ok || !slices.Equal(idx.links, []string{"node_modules/pkg"}) {
		t.Errorf("links %q ok %v", idx.links, idx.ok)
	}
}

// TestGitlinksUnderCoreWorktree: a repository whose core.worktree names
// another folder has its submodules there: git status in the folder of
// its .git enters node_modules/wt/sub, not ./sub (red team 21 had the
// host's git run a core.fsmonitor so, unreported), in config.worktree
// too.
func TestGitlinksUnderCoreWorktree(t *testing.T) {
	for _, c := range []struct{ name, set string }{
		{"config", "git config core.worktree $W"},
		{"relative", "git config core.worktree ../node_modules/wt"},
		{"config.worktree", "git config extensions.worktreeConfig true && git config --worktree core.worktree $W"},
		// git takes $W: the include's condition is false (fresh-eyes
		// review: the last value read, elsewhere, was searched alone).
		{"includeIf false", `git config core.worktree $W && mkdir -p $PWD/else && printf '[core]\n\tworktree = %s\n' $PWD/else > .git/else.cfg && git config 'includeIf.onbranch:nope.path' else.cfg`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := gitWorkspace(t)
			shell(t, ws, `W=$PWD/node_modules/wt
mkdir -p $W/sub && git -C $W/sub init -q . && git -C $W/sub commit -q --allow-empty -m x
git init -q . && git --git-dir=$PWD/.git --work-tree=$W add sub
`+c.set+`
git status --porcelain >/dev/null`)
			f := findRepos([]string{ws}, nil, nil, nil)
			if !slices.ContainsFunc(f.dotGitDirs, func(d [2]string) bool { return d[1] == filepath.Join(ws, "node_modules/wt/sub") }) {
				t.Errorf("the submodule under core.worktree is not covered: %+v", f)
			}
		})
	}
}

// FuzzParseIndex: any bytes a command writes as an index are read without
// a panic, in bounded time, by every hash size; a submodule read is a
// path as git uses one (not empty, no NUL, not past maxIndexName).
func FuzzParseIndex(f *testing.F) {
	const file, link = 0o100644, 0o160000
	f.Add(index(2, indexEntry(file, "a", false), indexEntry(link, "node_modules/pkg", false)))
	f.Add(index(3, indexEntry(file, "a", true), indexEntry(link, "sub", false)))
	entries := index(2, indexEntry(file, "a", false))
	entries = entries[:len(entries)-20]
	ieot := ieotExt(12, 1)
	f.Add(slices.Concat(entries, ieot, eoieExt(uint32(len(entries)), ieot), make([]byte, 20)))
	f.Add(slices.Concat(entries, indexExt("link", make([]byte, 20)), make([]byte, 20)))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, hs := range []int{20, 32} {
			for _, keep := range []bool{false, true} {
				idx := parseIndex(b, hs, keep)
				if !idx.ok {
					continue
				}
				for _, l := range idx.links {
					if l == "" || strings.IndexByte(l, 0) >= 0 || len(l) > maxIndexName {
						t.Fatalf("a submodule %q", l)
					}
				}
			}
		}
	})
}

// sparseIndexWorkspace makes, in ws, red team 22's sparse index: its
// entry node_modules/ (a folded folder) names a tree that holds the
// submodule node_modules/pkg, which is populated (another commit); git
// unfolds the entry from the tree and enters the submodule.
func sparseIndexWorkspace(t *testing.T, ws string) {
	t.Helper()
	src := t.TempDir()
	out := shell(t, ws, `S=`+src+`
git -C $S init -q && echo x>$S/f && git -C $S add f && git -C $S commit -qm m && echo y>>$S/f && git -C $S commit -qam m2
git init -q . && mkdir -p src && echo s>src/a && git add src
git update-index --add --cacheinfo 160000,$(git -C $S rev-parse HEAD),node_modules/pkg && git commit -qm top
git rev-parse HEAD:node_modules
git rm -q --cached node_modules/pkg && mkdir -p node_modules && echo z > node_modules/z && git add node_modules/z && git commit -qm two
git rev-parse HEAD:node_modules
git config index.sparse true && git sparse-checkout set --cone src 2>/dev/null`)
	trees := strings.Fields(out)
	if len(trees) != 2 {
		t.Fatalf("trees: %q", out)
	}
	with, without := trees[0], trees[1]
	idx := filepath.Join(ws, ".git/index")
	b, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := hex.DecodeString(with)
	wo, _ := hex.DecodeString(without)
	if !bytes.Contains(b, wo) {
		t.Fatal("the index folds no node_modules/")
	}
	b = bytes.Replace(b[:len(b)-20], wo, w, 1)
	sum := sha1.Sum(b)
	if err := os.WriteFile(idx, append(b, sum[:]...), 0o644); err != nil {
		t.Fatal(err)
	}
	shell(t, ws, `rm -rf node_modules/pkg node_modules/z
git clone -q `+src+` node_modules/pkg && git -C node_modules/pkg checkout -q HEAD~1
git ls-files -s | grep -q '^160000.*node_modules/pkg$'`)
}

// TestGitlinksUnderSparseFolder: a submodule git unfolds from a sparse
// index's folded folder is covered.
func TestGitlinksUnderSparseFolder(t *testing.T) {
	ws := gitWorkspace(t)
	sparseIndexWorkspace(t, ws)
	f := findRepos([]string{ws}, nil, nil, nil)
	if !slices.ContainsFunc(f.dotGitDirs, func(d [2]string) bool { return d[1] == filepath.Join(ws, "node_modules/pkg") }) {
		t.Errorf("the submodule in the folded node_modules/ is not covered: %+v", f)
	}
}

// TestWatchGitReportsUnlistableFolder: a folder this user may enter but
// not list (mode 0311) hides a repository from the search, not from git,
// which finds it by its name: it is told as the bound is, after every
// command while it lasts. Root lists every folder whatever its mode.
func TestWatchGitReportsUnlistableFolder(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root lists a folder whatever its mode: the ordinary user's run of the suite tries this")
	}
	g := newGitTree(t)
	before := g.watch(t)
	// As a command would: made, then closed to listing, in one run.
	g.repo(t, "d/r")
	if err := os.Chmod(g.ws+"/d", 0o311); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(g.ws+"/d", 0o755) })
	after := g.watch(t)
	want := func(lines []string) bool {
		return slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, g.ws+"/d") && strings.Contains(l, "cannot be listed") })
	}
	if told := after.Since(before); !want(told) {
		t.Errorf("a folder that hides a repository from the search is untold:\n%s", strings.Join(told, "\n"))
	}
	if !want(after.Unchecked(before)) {
		t.Errorf("not told as unchecked: %q", after.Unchecked(before))
	}
	// Not told where git cannot enter either.
	if err := os.Chmod(g.ws+"/d", 0o200); err != nil {
		t.Fatal(err)
	}
	if told := g.watch(t).Since(before); want(told) {
		t.Errorf("a folder nobody can enter is told:\n%s", strings.Join(told, "\n"))
	}
}
