package sandbox

import (
	"flag"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/unified-exec/unified-exec/policy"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// tree builds a synthetic home and workspace under a temporary root:
//
//	home/.ssh/id_rsa, home/.aws/credentials, home/.netrc, home/notes.txt
//	home/project            the workspace: .git/hooks, src/, lib/, README.md,
//	                        secrets.env, etc-link -> /etc, sub/.git (a file)
//	gitdirs/main.git/worktrees/wt (with commondir -> ../..)
//	cache, cache-link -> cache
//
// HOME is set to home and TMPDIR to "".
func tree(t *testing.T) (root, ws string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	ws = filepath.Join(home, "project")
	for _, d := range []string{ws + "/.git/hooks", ws + "/src", ws + "/lib", ws + "/sub", home + "/.ssh", home + "/.aws",
		root + "/cache", root + "/gitdirs/main.git/worktrees/wt"} {
		mkdir(t, d)
	}
	files := map[string]string{
		home + "/.ssh/id_rsa":      "secret",
		home + "/.aws/credentials": "secret",
		home + "/.netrc":           "machine x",
		home + "/notes.txt":        "notes",
		ws + "/README.md":          "readme",
		ws + "/secrets.env":        "TOKEN=x",
		ws + "/src/a.txt":          "a",
		ws + "/.git/HEAD":          "ref: refs/heads/main\n",
		ws + "/sub/.git":           "gitdir: " + root + "/gitdirs/main.git/worktrees/wt\n",
		root + "/gitdirs/main.git/worktrees/wt/commondir": "../..\n",
	}
	for name, body := range files {
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	symlink(t, "/etc", ws+"/etc-link")
	symlink(t, root+"/cache", root+"/cache-link")
	t.Setenv("HOME", home)
	t.Setenv("TMPDIR", "")
	return root, ws
}

func mkdir(t *testing.T, d string) {
	t.Helper()
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// stable replaces the temporary root by $ROOT and drops the read grants
// outside it: they list this machine's / and /tmp.
func stable(s, root string) string {
	s = strings.ReplaceAll(s, root, "$ROOT")
	var out []string
	section := ""
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(line, " ") {
			section = line
		} else if section == "read grants:" && !strings.Contains(line, "$ROOT") {
			continue
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// goldenCase is a policy whose plan is testdata/<name>.golden.
type goldenCase struct {
	name string
	mod  func(p *policy.Sandbox, root, ws string) string // returns the workspace
}

// goldenCases are the plans of testdata. Compile them with compileGolden.
func goldenCases(t *testing.T) []goldenCase {
	return []goldenCase{
		{"workspace-write", func(p *policy.Sandbox, root, ws string) string { return ws }},
		{"read-only", func(p *policy.Sandbox, root, ws string) string { p.Mode = policy.ModeReadOnly; return ws }},
		{"full-access", func(p *policy.Sandbox, root, ws string) string {
			p.Mode = policy.ModeDangerFullAccess
			return ws
		}},
		{"network-roots", func(p *policy.Sandbox, root, ws string) string {
			p.Network = true
			p.WritableRoots = []string{root + "/cache-link", "src"} // src is inside the workspace: dropped
			p.Protected = append(p.Protected, "sub/.git", "~/project/README.md")
			p.DenyRead = append(p.DenyRead, "secrets.env", "~/no-such-secret")
			return ws
		}},
		{"no-git", func(p *policy.Sandbox, root, ws string) string {
			mkdir(t, root+"/fresh")
			return root + "/fresh"
		}},
	}
}

// compileGolden compiles c's policy on a fresh tree, as the golden files
// were: without the host's sockets. It returns the tree's root too.
func compileGolden(t *testing.T, c goldenCase) (Plan, string) {
	t.Helper()
	hostSockets := serviceSockets
	serviceSockets = func(*absence, string, []string) ([]string, error) { return nil, nil } // the host's are not the golden files
	defer func() { serviceSockets = hostSockets }()
	hostHome := accountHome
	accountHome = func() string { return "" } // nor the account's home (TestDenyReadAccountHome)
	defer func() { accountHome = hostHome }()
	clearStoreVars(t) // nor stores the environment moves (TestDenyReadMovedStores)
	root, ws := tree(t)
	p := policy.DefaultSandbox()
	p.ExcludeSlashTmp = true // the tree lives in /tmp; see TestCompileTmp
	ws = c.mod(&p, root, ws)
	plan, err := Compile(p, ws)
	if err != nil {
		t.Fatal(err)
	}
	return plan, root
}

func TestCompileGolden(t *testing.T) {
	for _, c := range goldenCases(t) {
		t.Run(c.name, func(t *testing.T) {
			plan, root := compileGolden(t, c)
			got := stable(plan.String(), root)
			file := filepath.Join("testdata", c.name+".golden")
			if *update {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("plan:\n%s\nwant:\n%s", got, want)
			}
			b, err := plan.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			back, err := Unmarshal(b)
			if err != nil || back.String() != plan.String() {
				t.Fatalf("round trip: %v\n%s", err, back)
			}
		})
	}
}

// covers reports whether grants give access a on path (a file or
// directory that exists).
func covers(grants []Grant, path string, a Access) bool {
	for _, g := range grants {
		if g.Path != path && !(g.Dir && within(path, g.Path)) {
			continue
		}
		switch {
		case g.Access == a, a == AccessRead && g.Access == AccessReadWrite:
			return true
		}
	}
	return false
}

// TestCarveCovers walks the whole tree: every path is readable unless it
// is (or is below) an unreadable one, and writable inside the workspace
// unless protected or unreadable; the directories on the way to an
// unreadable path get nothing; nothing reaches through etc-link.
func TestCarveCovers(t *testing.T) {
	root, ws := tree(t)
	p := policy.DefaultSandbox()
	p.ExcludeSlashTmp = true
	p.Protected = append(p.Protected, "sub/.git")
	p.DenyRead = append(p.DenyRead, "secrets.env")
	plan, err := Compile(p, ws)
	if err != nil {
		t.Fatal(err)
	}
	under := func(path string, list []string) bool {
		return slices.ContainsFunc(list, func(x string) bool { return path == x || within(path, x) })
	}
	for _, must := range []string{root + "/home/.ssh", root + "/home/.netrc", ws + "/secrets.env"} {
		if !slices.Contains(plan.DenyRead, must) {
			t.Errorf("%s not in DenyRead %v", must, plan.DenyRead)
		}
	}
	kept := slices.Concat(plan.Protected, plan.GitDirs)
	for _, must := range []string{ws + "/.git", ws + "/sub/.git", root + "/gitdirs/main.git/worktrees/wt", root + "/gitdirs/main.git"} {
		if under(must, plan.WritableRoots) != slices.Contains(kept, must) {
			t.Errorf("%s: protected %v, git %v, writable roots %v", must, plan.Protected, plan.GitDirs, plan.WritableRoots)
		}
	}
	n := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		n++
		if d.Type()&fs.ModeSymlink != 0 {
			for _, g := range append(plan.Read, plan.Write...) {
				if g.Path == path || within(g.Path, path) {
					t.Errorf("symlink %s granted: %+v", path, g)
				}
			}
			return nil
		}
		denied := under(path, plan.DenyRead)
		onPath := slices.ContainsFunc(plan.DenyRead, func(x string) bool { return within(x, path) })
		if got := covers(plan.Read, path, AccessRead); got != (!denied && !onPath) {
			t.Errorf("%s: readable %v; unreadable %v, holds an unreadable path %v", path, got, denied, onPath)
		}
		writable := path != ws && within(path, ws) && !denied && !under(path, kept) &&
			!slices.ContainsFunc(kept, func(x string) bool { return within(x, path) })
		if got := covers(plan.Write, path, AccessReadWrite); got != writable {
			t.Errorf("%s: writable %v, want %v", path, got, writable)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 20 {
		t.Fatalf("walked only %d paths", n)
	}
}

// TestCompileTmp: /tmp and $TMPDIR are writable roots unless excluded;
// a missing $TMPDIR is a note, not an error; read-only mode has none.
func TestCompileTmp(t *testing.T) {
	root, ws := tree(t)
	tmp, err := filepath.EvalSymlinks("/tmp")
	if err != nil {
		t.Skip("no /tmp")
	}
	mkdir(t, root+"/tmpdir")
	t.Setenv("TMPDIR", root+"/tmpdir")
	p := policy.DefaultSandbox()
	plan, err := Compile(p, ws)
	if err != nil {
		t.Fatal(err)
	}
	// The tree itself is inside /tmp, so /tmp swallows the other roots.
	if !slices.Contains(plan.WritableRoots, tmp) {
		t.Errorf("writable roots %v lack %s", plan.WritableRoots, tmp)
	}
	p.ExcludeSlashTmp = true
	plan, _ = Compile(p, ws)
	if want := []string{ws, root + "/tmpdir"}; !slices.Equal(plan.WritableRoots, sorted(want)) {
		t.Errorf("writable roots %v, want %v", plan.WritableRoots, want)
	}
	p.ExcludeTmpdirEnvVar = true
	plan, _ = Compile(p, ws)
	if !slices.Equal(plan.WritableRoots, []string{ws}) {
		t.Errorf("writable roots %v, want only the workspace", plan.WritableRoots)
	}
	p.ExcludeTmpdirEnvVar = false
	t.Setenv("TMPDIR", root+"/gone")
	plan, err = Compile(p, ws)
	if err != nil || !strings.Contains(strings.Join(plan.Notes, "\n"), root+"/gone") {
		t.Errorf("missing $TMPDIR: %v, notes %q", err, plan.Notes)
	}
	p.Mode = policy.ModeReadOnly
	plan, _ = Compile(p, ws)
	if len(plan.WritableRoots) != 0 || len(plan.Write) != 0 || len(plan.Protected) != 0 {
		t.Errorf("read-only plan writes: %v %v %v", plan.WritableRoots, plan.Write, plan.Protected)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestCompileSymlinkRoot: a writable root given through a symbolic link
// is granted at its target; so is a workspace given that way.
func TestCompileSymlinkRoot(t *testing.T) {
	root, ws := tree(t)
	symlink(t, ws, root+"/ws-link")
	p := policy.DefaultSandbox()
	p.ExcludeSlashTmp = true
	p.WritableRoots = []string{root + "/cache-link"}
	plan, err := Compile(p, root+"/ws-link")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{root + "/cache", ws}; !slices.Equal(plan.WritableRoots, want) {
		t.Fatalf("writable roots %v, want %v", plan.WritableRoots, want)
	}
	if !slices.Contains(plan.GitDirs, ws+"/.git") || !slices.Contains(plan.Protected, ws+"/.git/hooks") {
		t.Fatalf("git %v, protected %v", plan.GitDirs, plan.Protected)
	}
}

func TestCompileErrors(t *testing.T) {
	root, ws := tree(t)
	cases := []struct {
		name, ws, want string
		mod            func(p *policy.Sandbox)
	}{
		{"missing root", ws, "/nonexistent/root", func(p *policy.Sandbox) { p.WritableRoots = []string{"/nonexistent/root"} }},
		{"relative root", ws, ws + "/nope", func(p *policy.Sandbox) { p.WritableRoots = []string{"nope"} }},
		{"file root", ws, "README.md", func(p *policy.Sandbox) { p.WritableRoots = []string{"README.md"} }},
		{"missing workspace", root + "/nowhere", root + "/nowhere", func(p *policy.Sandbox) {}},
		{"missing workspace read-only", root + "/nowhere", root + "/nowhere", func(p *policy.Sandbox) { p.Mode = policy.ModeReadOnly }},
		{"bad mode", ws, `"yolo"`, func(p *policy.Sandbox) { p.Mode = "yolo" }},
		{"no mode", ws, "no mode", func(p *policy.Sandbox) { p.Mode = "" }},
		{"deny root", ws, "root directory", func(p *policy.Sandbox) { p.DenyRead = []string{"/"} }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := policy.DefaultSandbox()
			c.mod(&p)
			_, err := Compile(p, c.ws)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one naming %s", err, c.want)
			}
		})
	}
}

func TestUnmarshalRejects(t *testing.T) {
	for _, s := range []string{
		`{not json`,
		`{"mode":"yolo"}`,
		`{"mode":"read-only","read":[{"path":"etc","dir":true,"access":"read"}]}`,
		`{"mode":"read-only","read":[{"path":"/etc","dir":true,"access":"everything"}]}`,
		`{"mode":"workspace-write","writable_roots":["w"]}`,
	} {
		if _, err := Unmarshal([]byte(s)); err == nil {
			t.Errorf("accepted %s", s)
		}
	}
	if _, err := Unmarshal([]byte(`{"mode":"read-only","read":[{"path":"/","dir":true,"access":"read"}]}`)); err != nil {
		t.Errorf("rejected a good plan: %v", err)
	}
}

// TestReadGitdirFile: a .git file names its gitdir, resolved; a .git
// directory, a plain file or a missing target name nothing.
func TestReadGitdirFile(t *testing.T) {
	root, ws := tree(t)
	if got, want := readGitdirFile(nil, ws+"/sub/.git"), root+"/gitdirs/main.git/worktrees/wt"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := readGitdirFile(nil, ws+"/.git"); got != "" {
		t.Errorf(".git directory: %v", got)
	}
	if got := readGitdirFile(nil, ws+"/README.md"); got != "" {
		t.Errorf("plain file: %v", got)
	}
	os.WriteFile(ws+"/lib/.git", []byte("gitdir: ../../nowhere\n"), 0o644)
	if got := readGitdirFile(nil, ws+"/lib/.git"); got != "" {
		t.Errorf("missing gitdir: %v", got)
	}
}

// TestCompileSockets: the plan covers the service sockets that exist, as
// sockets or directories, resolved through links, and the sockets inside
// unreadable paths; missing paths, relative ones and plain files are left
// out.
func TestCompileSockets(t *testing.T) {
	root, ws := tree(t)
	l, err := net.Listen("unix", root+"/agent.sock")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l2, err := net.Listen("unix", root+"/home/.ssh/in.sock") // in an unreadable directory
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	mkdir(t, root+"/agent-dir")
	os.Symlink(root+"/agent.sock", root+"/agent-link")
	os.WriteFile(root+"/plain", []byte("x"), 0o644)
	hostSockets := serviceSockets
	serviceSockets = func(*absence, string, []string) ([]string, error) {
		return []string{root + "/agent-link", root + "/agent-dir", root + "/missing.sock", root + "/plain", "relative.sock", "", root + "/agent.sock"}, nil
	}
	defer func() { serviceSockets = hostSockets }()
	t.Setenv("HOME", filepath.Join(root, "home"))
	p := policy.DefaultSandbox()
	p.ExcludeSlashTmp = true
	plan, err := Compile(p, ws)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{root + "/agent-dir", root + "/agent.sock", root + "/home/.ssh/in.sock"}
	if !slices.Equal(slices.Sorted(slices.Values(plan.Sockets)), want) {
		t.Fatalf("Sockets = %q, want %q", plan.Sockets, want)
	}
	if !strings.Contains(plan.String(), "covered in the mount namespace (unreachable)") {
		t.Fatalf("the plan does not show the sockets:\n%s", plan)
	}
}

// TestAddReadOnlyFiles: files inside writable roots are added resolved,
// and carved out of the write grants with the folders on the way to them;
// missing files and files outside every writable root are skipped.
func TestAddReadOnlyFiles(t *testing.T) {
	root, ws := tree(t)
	p := policy.DefaultSandbox()
	p.ExcludeSlashTmp = true
	plan, err := Compile(p, ws)
	if err != nil {
		t.Fatal(err)
	}
	mkdir(t, ws+"/ci")
	for _, f := range []string{ws + "/ci/policy.toml", ws + "/audit.jsonl", root + "/home/outside.toml"} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	symlink(t, ws+"/ci/policy.toml", ws+"/policy-link.toml")
	plan.AddReadOnlyFiles(ws+"/policy-link.toml", ws+"/audit.jsonl", ws+"/missing.toml", root+"/home/outside.toml", "")
	if want := []string{ws + "/audit.jsonl", ws + "/ci/policy.toml"}; !slices.Equal(plan.ReadOnlyFiles, want) {
		t.Fatalf("ReadOnlyFiles %v, want %v", plan.ReadOnlyFiles, want)
	}
	for _, path := range []string{ws + "/ci/policy.toml", ws + "/ci", ws + "/audit.jsonl"} {
		if covers(plan.Write, path, AccessReadWrite) {
			t.Errorf("%s is writable without a mount namespace", path)
		}
	}
	if !covers(plan.Write, ws+"/src", AccessReadWrite) {
		t.Errorf("%s/src is no longer writable", ws)
	}
	if !strings.Contains(plan.String(), "read-only files inside writable roots") {
		t.Errorf("String does not list them:\n%s", plan)
	}
	b, _ := plan.Marshal()
	if back, err := Unmarshal(b); err != nil || !slices.Equal(back.ReadOnlyFiles, plan.ReadOnlyFiles) {
		t.Fatalf("round trip: %v %v", err, back.ReadOnlyFiles)
	}
}

// TestGlobIn: globIn finds what filepath.Glob finds for each pattern,
// nested ones included, with the directory read once.
func TestGlobIn(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"tmux-1000", "ssh-abc", "ssh-def", "screens/S-bob", "other"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"ssh-abc/agent.12", "vscode-1.sock", "kitty-x", "tmux-1000/default"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	patterns := []string{"tmux-1000", "ssh-*", "ssh-*/agent.*", "vscode-*.sock", "kitty-*", "zellij-1000", "screens/S-*"}
	var want []string
	for _, p := range patterns {
		m, _ := filepath.Glob(filepath.Join(dir, p))
		want = append(want, m...)
	}
	got := globIn(newAbsence(), dir, patterns...)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) || len(want) != 7 {
		t.Fatalf("globIn:\n%q\nfilepath.Glob:\n%q", got, want)
	}
	if globIn(newAbsence(), filepath.Join(dir, "missing"), "x") != nil {
		t.Fatal("a missing directory matched")
	}
}

// TestUnixSocketLine: the path of a /proc/net/unix line is the rest of
// the line, spaces and all; unbound sockets and the header have none.
func TestUnixSocketLine(t *testing.T) {
	for _, c := range []struct{ line, inode, path string }{
		{"0000000000000000: 00000002 00000000 00010000 0001 01 12345 /tmp/host sp/s.sock", "12345", "/tmp/host sp/s.sock"},
		{"0000000000000000: 00000002 00000000 00010000 0001 01    42 /run/a.sock", "42", "/run/a.sock"},
		{"0000000000000000: 00000003 00000000 00000000 0001 03 777", "777", ""},
		{"0000000000000000: 00000002 00000000 00010000 0001 01 99 r.sock", "99", "r.sock"},
	} {
		inode, path, ok := unixSocketLine(c.line)
		if !ok || inode != c.inode || path != c.path {
			t.Errorf("%q: %q %q %v", c.line, inode, path, ok)
		}
	}
	if _, _, ok := unixSocketLine("Num       RefCount Protocol Flags    Type St Inode Path"); ok {
		t.Error("the header read as a socket")
	}
}

// TestHasDotDot: hasDotDot says what splitting the path at each slash
// and looking for a ".." name says.
func TestHasDotDot(t *testing.T) {
	for _, p := range []string{"", "/", "..", "/..", "../", "/a/..", "/a/../b", "/a/..b", "/a/b..", "/a/.../b", "a//..//b", "/a/.", "...", "/a/b/c"} {
		if got, want := hasDotDot(p), slices.Contains(strings.Split(p, "/"), ".."); got != want {
			t.Errorf("hasDotDot(%q) = %v, want %v", p, got, want)
		}
	}
}

// TestDenyReadAccountHome: "~" in deny_read is $HOME and the account's
// own home where they differ, or the account's alone with HOME unset: a
// job run with HOME elsewhere (a CI step's scratch folder) or none
// (env -i) read the account's ~/.ssh before. An entry that names no home
// is skipped with a note that says why.
func TestDenyReadAccountHome(t *testing.T) {
	root, ws := tree(t)
	account := root + "/account"
	for _, d := range []string{account + "/.ssh", account + "/.aws"} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	hostHome := accountHome
	accountHome = func() string { return account }
	defer func() { accountHome = hostHome }()
	compile := func(mod func(*policy.Sandbox)) Plan {
		t.Helper()
		p := policy.DefaultSandbox()
		p.ExcludeSlashTmp = true
		if mod != nil {
			mod(&p)
		}
		plan, err := Compile(p, ws)
		if err != nil {
			t.Fatal(err)
		}
		return plan
	}
	plan := compile(nil)
	for _, want := range []string{root + "/home/.ssh", account + "/.ssh", account + "/.aws"} {
		if !slices.Contains(plan.DenyRead, want) {
			t.Errorf("HOME elsewhere: %s is readable: deny %q", want, plan.DenyRead)
		}
	}
	// HOME with a ".." after a link: the link target's parent to the
	// kernel, not the folder the name is in (red team 30).
	if err := os.MkdirAll(root+"/real/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(root+"/real/.ssh", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real/sub", root+"/lnk"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", root+"/lnk/..")
	if plan := compile(nil); !slices.Contains(plan.DenyRead, root+"/real/.ssh") {
		t.Errorf("HOME=lnk/..: %s/real/.ssh is readable: deny %q", root, plan.DenyRead)
	}
	t.Setenv("HOME", "")
	plan = compile(nil)
	if !slices.Contains(plan.DenyRead, account+"/.ssh") {
		t.Errorf("HOME unset: the account's .ssh is readable: deny %q", plan.DenyRead)
	}
	accountHome = func() string { return "" }
	plan = compile(func(p *policy.Sandbox) { p.DenyRead = []string{"~/.ssh", "~no-such-user-here/.ssh"} })
	for _, want := range []string{`deny_read "~/.ssh" skipped: $HOME is not set and the password database gives this user no home`, `deny_read "~no-such-user-here/.ssh" skipped: no user "no-such-user-here" here`} {
		if !slices.ContainsFunc(plan.Notes, func(n string) bool { return strings.HasPrefix(n, want) }) {
			t.Errorf("no note %q: %q", want, plan.Notes)
		}
	}
}

// clearStoreVars unsets the variables that move a secret store (see
// storeVars) for the test.
func clearStoreVars(t *testing.T) {
	for _, vars := range storeVars {
		for _, v := range vars {
			name, _, _ := strings.Cut(v, "/")
			t.Setenv(name, "")
		}
	}
	for _, name := range []string{"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"} {
		t.Setenv(name, "")
	}
}

// TestDenyReadMovedStores: a store the environment moves (DOCKER_CONFIG,
// KUBECONFIG, XDG_CONFIG_HOME, CARGO_HOME...) is unreadable where it is
// moved to, as its home's copy is (red team 30: a CI step's scratch
// DOCKER_CONFIG was readable); HISTFILE=/dev/null is no store, and a
// variable naming a folder that holds the workspace is left out, with a
// note.
func TestDenyReadMovedStores(t *testing.T) {
	clearStoreVars(t)
	root, ws := tree(t)
	for _, d := range []string{"/dock", "/xdg/gh", "/cargo"} {
		if err := os.MkdirAll(root+d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"/k1", "/cargo/credentials.toml"} {
		if err := os.WriteFile(root+f, []byte("secret"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("DOCKER_CONFIG", root+"/dock")
	t.Setenv("KUBECONFIG", root+"/k1:"+root+"/k2")
	t.Setenv("XDG_CONFIG_HOME", root+"/xdg")
	t.Setenv("CARGO_HOME", root+"/cargo")
	t.Setenv("HISTFILE", "/dev/null")
	t.Setenv("AWS_CONFIG_FILE", filepath.Dir(ws))
	p := policy.DefaultSandbox()
	p.ExcludeSlashTmp = true
	plan, err := Compile(p, ws)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{root + "/dock", root + "/k1", root + "/xdg/gh", root + "/cargo/credentials.toml"} {
		if !slices.Contains(plan.DenyRead, want) {
			t.Errorf("%s is readable: deny %q", want, plan.DenyRead)
		}
	}
	if slices.Contains(plan.DenyRead, "/dev/null") {
		t.Error("HISTFILE=/dev/null made /dev/null unreadable")
	}
	if !slices.ContainsFunc(plan.Notes, func(n string) bool { return strings.Contains(n, "$AWS_CONFIG_FILE names") }) {
		t.Errorf("no note of a variable naming the workspace's folder: %q", plan.Notes)
	}
}
