package sandbox

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/unified-exec/unified-exec/policy"
)

var update = flag.Bool("update", false, "rewrite golden files")

// tree builds a synthetic home and workspace: a repo with .git, a
// worktree-style .git file, secrets, and a symlinked writable root.
func tree(t *testing.T) (root, ws string) {
	t.Helper()
	root, _ = filepath.EvalSymlinks(t.TempDir())
	home := filepath.Join(root, "home")
	ws = filepath.Join(home, "project")
	for _, d := range []string{ws + "/.git/hooks", ws + "/src", home + "/.ssh", home + "/.aws", root + "/cache", root + "/gitdirs/wt"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(home+"/.ssh/id_rsa", []byte("secret"), 0o600)
	os.WriteFile(home+"/.netrc", []byte("machine x"), 0o600)
	os.MkdirAll(ws+"/sub", 0o755)
	os.WriteFile(ws+"/sub/.git", []byte("gitdir: "+root+"/gitdirs/wt\n"), 0o644)
	os.Symlink(root+"/cache", root+"/cache-link")
	t.Setenv("HOME", home)
	t.Setenv("TMPDIR", "")
	return root, ws
}

func TestCompileGolden(t *testing.T) {
	root, ws := tree(t)
	base := policy.DefaultSandbox()
	cases := map[string]func(p *policy.Sandbox){
		"workspace-write": func(p *policy.Sandbox) {},
		"read-only":       func(p *policy.Sandbox) { p.Mode = policy.ModeReadOnly },
		"full-access":     func(p *policy.Sandbox) { p.Mode = policy.ModeDangerFullAccess },
		"network-roots": func(p *policy.Sandbox) {
			p.Network = true
			p.WritableRoots = []string{root + "/cache-link"}
			p.ExcludeSlashTmp = true
			p.Protected = append(p.Protected, "sub/.git")
		},
	}
	for name, mod := range cases {
		t.Run(name, func(t *testing.T) {
			p := base
			p.Protected = slices.Clone(base.Protected)
			mod(&p)
			plan, err := Compile(p, ws)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.ReplaceAll(plan.String(), root, "$ROOT")
			file := filepath.Join("testdata", name+".golden")
			if *update {
				os.WriteFile(file, []byte(got), 0o644)
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Fatalf("plan:\n%s\nwant:\n%s", got, want)
			}
			// Round trip through the helper's encoding.
			b, _ := plan.Marshal()
			back, err := Unmarshal(b)
			if err != nil || back.String() != plan.String() {
				t.Fatalf("round trip: %v", err)
			}
		})
	}
}

// TestCarve: the read grants cover every sibling and never a denied path
// or one of its ancestors.
func TestCarve(t *testing.T) {
	root, ws := tree(t)
	plan, err := Compile(policy.DefaultSandbox(), ws)
	if err != nil {
		t.Fatal(err)
	}
	home := root + "/home"
	granted := append(append([]string{}, plan.ReadDirs...), plan.ReadFiles...)
	for _, g := range granted {
		for _, d := range plan.DenyRead {
			if g == d || within(d, g) || within(g, d) {
				t.Fatalf("grant %s covers denied %s", g, d)
			}
		}
	}
	for _, want := range []string{ws, home + "/.netrc"} {
		if want == home+"/.netrc" {
			continue // .netrc is denied by default
		}
		if !slices.Contains(plan.ReadDirs, want) {
			t.Errorf("%s not granted: %v", want, plan.ReadDirs)
		}
	}
	if !slices.Contains(plan.DenyRead, home+"/.netrc") || !slices.Contains(plan.DenyRead, home+"/.ssh") {
		t.Fatalf("deny: %v", plan.DenyRead)
	}
}

func TestCompileErrors(t *testing.T) {
	_, ws := tree(t)
	p := policy.DefaultSandbox()
	p.WritableRoots = []string{"/nonexistent/root"}
	if _, err := Compile(p, ws); err == nil || !strings.Contains(err.Error(), "/nonexistent/root") {
		t.Fatalf("missing root: %v", err)
	}
	p = policy.DefaultSandbox()
	p.Mode = "yolo"
	if _, err := Compile(p, ws); err == nil || !strings.Contains(err.Error(), "yolo") {
		t.Fatalf("bad mode: %v", err)
	}
	if _, err := Compile(policy.DefaultSandbox(), "/nonexistent/ws"); err == nil {
		t.Fatal("missing workspace accepted")
	}
	if _, err := Unmarshal([]byte("{not json")); err == nil {
		t.Fatal("broken plan accepted")
	}
}
