package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/unified-exec/unified-exec/policy"
)

// TestGitSurveyReadsNothingCommandsCannot is red team 44's attack: the
// git survey runs outside the sandbox and tells the model what it finds,
// so a command pointed what it reads — a rebase's strategy, a commondir,
// a worktree's commondir, a .git, a config, a to-do list, remotes/,
// branches/, hooks/, modules/ — at the user's keys and folders, and read
// them back from the report. Nothing an unreadable path holds, nor the
// names in a folder commands cannot list, may reach the report or the
// plan's notes; each place git reads there is told as refused; and
// whether a file there exists is not told either.
func TestGitSurveyReadsNothingCommandsCannot(t *testing.T) {
	g := newGitTree(t)
	home := g.home
	write := func(p, body string, mode os.FileMode) {
		t.Helper()
		mkdir(t, filepath.Dir(p))
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	// What commands cannot read: keys, credentials, a folder's names.
	write(home+"/.ssh/id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\nSECRET1\n", 0o600)
	write(home+"/.ssh/config", "[core]\n\tfsmonitor = SECRET2\n", 0o600)
	write(home+"/.ssh/secretname3", "x", 0o600)
	write(home+"/.ssh/hookname4", "#!/bin/sh\necho SECRET4\n", 0o755)
	write(home+"/.ssh/todo", "exec SECRET5\n", 0o600)
	write(home+"/.aws/credentials", "[default]\naws_secret_access_key = SECRET6\n", 0o600)
	// The home is on the way to ~/.ssh: commands cannot list it, nor learn
	// the names of the repositories in it.
	mkdir(t, home+"/secretproj7")
	if out, err := gitCmd(home+"/secretproj7", "init", "-q"); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	write(home+"/secretproj7/.git/hooks/post-commit", "#!/bin/sh\n", 0o755)
	if out, err := gitCmd(home+"/secretproj7", "config", "core.fsmonitor", "SECRET8"); err != nil {
		t.Fatalf("git config: %v %s", err, out)
	}
	// An unreadable folder inside the workspace, with a repository.
	g.repo(t, "hidden/repo9")
	g.git(t, "hidden/repo9", "config", "core.fsmonitor", "SECRET9")

	p := policy.DefaultSandbox()
	p.ExcludeSlashTmp = true
	p.DenyRead = append(p.DenyRead, "hidden")
	before, err := WatchGit(p, g.ws)
	if err != nil {
		t.Fatal(err)
	}
	if told := strings.Join(before.Since(GitState{}), "\n"); strings.Contains(told, "SECRET") || strings.Contains(told, "repo9") {
		t.Fatalf("the unreadable repository in the workspace is told before any command:\n%s", told)
	}

	repo := func(r string) string {
		t.Helper()
		g.repo(t, r)
		return g.ws + "/" + r + "/.git"
	}
	link := func(target, l string) {
		t.Helper()
		mkdir(t, filepath.Dir(l))
		if err := os.RemoveAll(l); err != nil {
			t.Fatal(err)
		}
		symlink(t, target, l)
	}
	key := home + "/.ssh/id_ed25519"
	var attacks []string // the paths git reads there, each told as refused
	attack := func(p string) { attacks = append(attacks, p) }

	r := repo("r1")
	link(key, r+"/rebase-merge/strategy")
	write(r+"/rebase-merge/git-rebase-todo", "pick 0000000 x\n", 0o644)
	attack(r + "/rebase-merge/strategy")
	r = repo("r2")
	link(key, r+"/commondir")
	attack(r + "/commondir")
	r = repo("r3")
	write(r+"/worktrees/w/HEAD", "ref: refs/heads/main\n", 0o644)
	write(r+"/worktrees/w/gitdir", g.ws+"/r3wt/.git\n", 0o644)
	link(key, r+"/worktrees/w/commondir")
	attack(r + "/worktrees/w/commondir")
	mkdir(t, g.ws+"/r4/sub")
	link(home+"/.aws/credentials", g.ws+"/r4/sub/.git")
	attack(g.ws + "/r4/sub/.git")
	r = repo("r5")
	link(home+"/.ssh", r+"/remotes")
	attack(r + "/remotes")
	r = repo("r6")
	link(home, r+"/branches")
	attack(r + "/branches")
	r = repo("r7")
	link(home+"/.ssh", r+"/hooks")
	attack(r + "/hooks")
	r = repo("r8")
	g.git(t, "r8", "config", "include.path", home+"/.aws/credentials")
	attack(home + "/.aws/credentials")
	r = repo("r9")
	link(home+"/.aws/credentials", r+"/config")
	attack(r + "/config")
	r = repo("r10")
	link(home+"/.ssh/todo", r+"/sequencer/todo")
	attack(r + "/sequencer/todo")
	mkdir(t, g.ws+"/r11")
	link(home+"/.ssh", g.ws+"/r11/.git")
	attack(g.ws + "/r11/.git")
	r = repo("r12")
	link(home, r+"/modules/x")
	attack(r + "/modules/x")
	r = repo("r13")
	link(home, r+"/modules")
	attack(r + "/modules")
	r = repo("r14")
	write(r+"/commondir", home+"/.ssh\n", 0o644)
	r = repo("r15")
	link(g.ws+"/hidden", r+"/modules/y")
	attack(r + "/modules/y")
	// Whether a file in an unreadable path exists is told by nothing: an
	// include, a legacy remote and a hook naming one that is there read
	// as those naming one that is not.
	pairs := [][2]string{}
	r = repo("r16")
	g.git(t, "r16", "config", "include.path", home+"/.ssh/absent")
	r = repo("r17")
	g.git(t, "r17", "config", "include.path", key)
	pairs = append(pairs, [2]string{"r16", "r17"})
	r = repo("r18")
	link(home+"/.ssh/absent", r+"/remotes/origin")
	r = repo("r19")
	link(key, r+"/remotes/origin")
	pairs = append(pairs, [2]string{"r18", "r19"})
	r = repo("r20")
	link(home+"/.ssh/absent", r+"/hooks/pre-commit")
	r = repo("r21")
	link(home+"/.ssh/hookname4", r+"/hooks/pre-commit")
	pairs = append(pairs, [2]string{"r20", "r21"})
	r = repo("r22")
	g.git(t, "r22", "config", "core.sshCommand", home+"/.ssh/absent")
	r = repo("r23")
	g.git(t, "r23", "config", "core.sshCommand", home+"/.ssh/hookname4")
	pairs = append(pairs, [2]string{"r22", "r23"})

	after, err := WatchGit(p, g.ws)
	if err != nil {
		t.Fatal(err)
	}
	told := after.Since(before)
	plan, err := Compile(p, g.ws)
	if err != nil {
		t.Fatal(err)
	}
	everything := strings.Join(slices.Concat(told, plan.Notes), "\n")
	for _, secret := range []string{"SECRET", "aws_secret", "secretname3", "secretproj7", "repo9", "OPENSSH"} {
		if strings.Contains(everything, secret) {
			for _, l := range slices.Concat(told, plan.Notes) {
				if strings.Contains(l, secret) {
					t.Errorf("%s, which commands cannot read, is told: %s", secret, l)
				}
			}
		}
	}
	for _, a := range attacks {
		if !slices.ContainsFunc(told, func(l string) bool { return strings.Contains(l, a+",") && strings.Contains(l, "commands cannot read") }) {
			t.Errorf("git reads %s, in a path commands cannot read, and that is not told:\n%s", a, strings.Join(told, "\n"))
		}
	}
	for _, pr := range pairs {
		var lines [2][]string
		for i, name := range pr {
			for _, l := range told {
				if strings.Contains(l, "/"+name+"/") {
					l = strings.ReplaceAll(l, "/"+name+"/", "/R/")
					l = strings.ReplaceAll(l, "/.ssh/absent", "/.ssh/NAME")
					l = strings.ReplaceAll(l, "/.ssh/id_ed25519", "/.ssh/NAME")
					l = strings.ReplaceAll(l, "/.ssh/hookname4", "/.ssh/NAME")
					lines[i] = append(lines[i], l)
				}
			}
			slices.Sort(lines[i])
		}
		if !slices.Equal(lines[0], lines[1]) || len(lines[0]) == 0 {
			t.Errorf("a file absent from an unreadable path (%s) is told apart from one there (%s):\n%s\n--\n%s", pr[0], pr[1], strings.Join(lines[0], "\n"), strings.Join(lines[1], "\n"))
		}
	}
}

func gitCmd(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	return cmd.CombinedOutput()
}

// TestGitSurveyTellsNotWhatIsThere is red team 45's: paths that climb
// out of an unreadable folder (~/.ssh/NAME/..), a submodule entry of the
// index linked into one, read alike whether NAME is there or not, a
// folder, a file or a link elsewhere. Each pair of repositories differs
// only in NAME; what is told of them must read the same.
func TestGitSurveyTellsNotWhatIsThere(t *testing.T) {
	g := newGitTree(t)
	home := g.home
	mkdir(t, home+"/.ssh/subd")
	mkdir(t, home+"/private")
	if err := os.WriteFile(home+"/.ssh/id_ed25519", []byte("SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	symlink(t, home+"/private/ssh_config", home+"/.ssh/cfg")
	mkdir(t, home+"/.password-store/subd")
	if out, err := gitCmd(home+"/.password-store/subd", "init", "-q"); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	p := policy.DefaultSandbox()
	p.ExcludeSlashTmp = true
	before, err := WatchGit(p, g.ws)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"id_ed25519", "absent", "subd", "cfg"}
	type attack struct {
		name string
		make func(r, name string)
	}
	attacks := []attack{
		{"a commondir climbing out of a link to ~/.ssh", func(r, name string) {
			g.repo(t, r)
			symlink(t, home+"/.ssh", g.ws+"/"+r+"/l")
			g.write(t, r+"/.git/commondir", g.ws+"/"+r+"/l/"+name+"/..\n", 0o644)
		}},
		{"an include climbing out of a link to ~/.ssh", func(r, name string) {
			g.repo(t, r)
			symlink(t, home+"/.ssh", g.ws+"/"+r+"/l")
			g.git(t, r, "config", "include.path", g.ws+"/"+r+"/l/"+name+"/../x")
		}},
		{"a commondir naming a folder through a link to ~/.ssh", func(r, name string) {
			g.repo(t, r)
			symlink(t, home+"/.ssh", g.ws+"/"+r+"/l")
			g.write(t, r+"/.git/commondir", g.ws+"/"+r+"/l/"+name+"\n", 0o644)
		}},
		{"a gitdir whose commondir is a link into ~/.ssh", func(r, name string) {
			g.write(t, r+"/fake/HEAD", "ref: refs/heads/main\n", 0o644)
			symlink(t, home+"/.ssh/"+name, g.ws+"/"+r+"/fake/commondir")
			g.write(t, r+"/sub/.git", "gitdir: ../fake", 0o644)
		}},
		{"a .git file naming a gitdir through ~/.ssh/NAME/..", func(r, name string) {
			g.repo(t, r+"/target")
			g.write(t, r+"/.git", "gitdir: "+home+"/.ssh/"+name+"/../../../ws/"+r+"/target/.git\n", 0o644)
		}},
		{"a submodule entry linked to a store", func(r, name string) {
			g.repo(t, r)
			symlink(t, home+"/.password-store/"+name, g.ws+"/"+r+"/l")
			g.git(t, r, "update-index", "--add", "--cacheinfo", "160000,1111111111111111111111111111111111111111,l")
		}},
	}
	for i, a := range attacks {
		for j, n := range names {
			a.make(fmt.Sprintf("a%d-%d", i, j), n)
		}
	}
	after, err := WatchGit(p, g.ws)
	if err != nil {
		t.Fatal(err)
	}
	told := after.Since(before)
	for i, a := range attacks {
		var first []string
		for j, n := range names {
			r := fmt.Sprintf("a%d-%d", i, j)
			var lines []string
			for _, l := range told {
				if strings.Contains(l, "/"+r+"/") || strings.Contains(l, "/"+r+" ") {
					l = strings.ReplaceAll(l, "/"+r+"/", "/R/")
					for _, end := range []string{"/", ",", " "} {
						l = strings.ReplaceAll(l, "/"+n+end, "/NAME"+end)
					}
					lines = append(lines, l)
				}
			}
			slices.Sort(lines)
			if j == 0 {
				first = lines
				if len(lines) == 0 {
					t.Errorf("%s: nothing told", a.name)
				}
				continue
			}
			if !slices.Equal(lines, first) {
				t.Errorf("%s: told apart by what %s is:\n%s\n-- against %s:\n%s", a.name, n, strings.Join(lines, "\n"), names[0], strings.Join(first, "\n"))
			}
		}
	}
	// Nor by what the plan makes (red team 46: the hooks/, config,
	// remotes/ and branches/ made for a gitdir showed it was taken for
	// one when its commondir link led somewhere).
	plan, err := Compile(p, g.ws)
	if err != nil {
		t.Fatal(err)
	}
	made := slices.Concat(plan.MakeDirs, plan.MakeFiles)
	for i := range attacks {
		var first []string
		for j := range names {
			r := fmt.Sprintf("/a%d-%d/", i, j)
			var mine []string
			for _, m := range made {
				if strings.Contains(m, r) {
					mine = append(mine, strings.ReplaceAll(m, r, "/R/"))
				}
			}
			slices.Sort(mine)
			if j == 0 {
				first = mine
			} else if !slices.Equal(mine, first) {
				t.Errorf("%s: the plan makes %q for %s, %q for %s", attacks[i].name, mine, names[j], first, names[0])
			}
		}
	}
	if s := strings.Join(told, "\n"); strings.Contains(s, "private") || strings.Contains(s, "SECRET") {
		t.Errorf("where a link in ~/.ssh leads, or what a key holds, is told:\n%s", s)
	}
}
