package sandbox

import (
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

// TestGitlinksFollowed: a submodule the workspace's index records is a
// repository the survey covers whatever its depth (past GitScanDepth),
// its folder's name (node_modules) or the folders before it (past
// GitScanDirs), in each index version, split or not, and in a sha256
// repository; one not populated is not (git does not enter it). Red team
// 18 had the host's git status run a core.fsmonitor in each of the
// first three, unreported.
func TestGitlinksFollowed(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	for _, c := range []struct{ name, format, index string }{
		{"v2", "sha1", "git update-index --index-version 2"},
		{"v3", "sha1", "git update-index --index-version 3"},
		{"v4", "sha1", "git update-index --index-version 4"},
		{"split", "sha1", "git update-index --split-index"},
		{"sha256", "sha256", "true"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
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
			f := findRepos([]string{ws}, nil, nil)
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
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	shell(t, ws, `git init -q --bare .cfg && rm .cfg/HEAD && mkdir src
echo 'ref: refs/heads/master' > src/HEAD && echo ../.cfg > src/commondir
git -C src rev-parse --git-dir`)
	f := findRepos([]string{ws}, nil, nil)
	if !slices.Contains(f.bare, filepath.Join(ws, "src")) {
		t.Fatalf("the gitdir split into src and .cfg is not found: %+v", f)
	}
}

// TestGitlinksCacheSeesChange: an index kept (unchanged past the racy
// window) and then changed — a submodule added — is read again.
func TestGitlinksCacheSeesChange(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	shell(t, ws, `git init -q . && git commit -q --allow-empty -m root
mkdir -p node_modules/pkg && git -C node_modules/pkg init -q . && git -C node_modules/pkg commit -q --allow-empty -m x`)
	time.Sleep(racyWindow + 100*time.Millisecond)
	for range 2 {
		if f := findRepos([]string{ws}, nil, nil); len(f.dotGitDirs) != 1 {
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
	if f := findRepos([]string{ws}, nil, nil); len(f.dotGitDirs) != 2 {
		t.Fatalf("the submodule added to a kept index is not covered: %+v", f)
	}
}

// TestWatchGitReportsBound: a command that makes the search for
// repositories stop at its bound is told of it by the report after the
// command (the plan's note reached no one: red team 18).
func TestWatchGitReportsBound(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
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
