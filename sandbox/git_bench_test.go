package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/policy"
)

// benchRepoTree makes a workspace like an agent's: a repository with a
// commit, 300 folders below it (10 × 30), two nested repositories and a
// submodule; its folders are dated an hour back, as a tree is between an
// agent's commands (see dirCache).
func benchRepoTree(b *testing.B) string {
	b.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git is needed")
	}
	root, _ := filepath.EvalSymlinks(b.TempDir())
	ws := root + "/ws"
	b.Setenv("HOME", root)
	b.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	git := func(dir string, args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=b", "-c", "user.email=b@b", "-c", "protocol.file.allow=always"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	for i := range 10 {
		for j := range 30 {
			os.MkdirAll(fmt.Sprintf("%s/pkg%d/sub%d", ws, i, j), 0o755)
		}
	}
	for _, r := range []string{ws, ws + "/pkg1/vendored", ws + "/pkg2/sub3/tool", root + "/lib"} {
		os.MkdirAll(r, 0o755)
		git(r, "init", "-q")
		os.WriteFile(r+"/README", []byte("x"), 0o644)
		git(r, "add", "README")
		git(r, "commit", "-qm", "x")
	}
	git(ws, "submodule", "add", "-q", "../lib", "sub")
	old := time.Now().Add(-time.Hour)
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chtimes(p, old, old)
		}
		return nil
	})
	// Change times cannot be set back: the files' own are let age past
	// racyWindow, as a tree's are between an agent's commands, so that
	// what is kept while a file is the same (indexes, configurations) is.
	time.Sleep(racyWindow + 100*time.Millisecond)
	return ws
}

// BenchmarkCompileRepo compiles the default policy (without /tmp, which
// is the machine's) for such a workspace, as the orchestrator does for
// every command.
func BenchmarkCompileRepo(b *testing.B) {
	ws := benchRepoTree(b)
	p := policy.DefaultSandbox()
	p.ExcludeSlashTmp = true
	for b.Loop() {
		if _, err := Compile(p, ws); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWatchGit is the look the orchestrator takes after every
// command.
func BenchmarkWatchGit(b *testing.B) {
	ws := benchRepoTree(b)
	p := policy.DefaultSandbox()
	p.ExcludeSlashTmp = true
	for b.Loop() {
		if _, err := WatchGit(p, ws); err != nil {
			b.Fatal(err)
		}
	}
}
