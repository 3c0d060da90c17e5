package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unified-exec/unified-exec/policy"
)

// attributionTree makes a workspace with a .git, a home with a .ssh, and
// a folder outside both, and compiles the plan for it.
func attributionTree(t *testing.T, mode string) (plan Plan, ws, home, out string) {
	t.Helper()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	ws, home, out = filepath.Join(root, "ws"), filepath.Join(root, "home"), filepath.Join(root, "outside")
	for _, d := range []string{ws + "/.git", ws + "/src", home + "/.ssh", home + "/.pyenv/shims", out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{ws + "/f", ws + "/.git/config", home + "/.ssh/id", out + "/file"} {
		os.WriteFile(f, []byte("x"), 0o644)
	}
	t.Setenv("TMPDIR", "")
	t.Setenv("HOME", home)
	plan, err := Compile(policy.Sandbox{Mode: mode, Protected: []string{".git"}, DenyRead: []string{"~/.ssh"}, ExcludeSlashTmp: true}, ws)
	if err != nil {
		t.Fatal(err)
	}
	return plan, ws, home, out
}

// TestAttribute: what counts as the sandbox's refusal, and what does not.
func TestAttribute(t *testing.T) {
	plan, ws, home, out := attributionTree(t, policy.ModeWorkspaceWrite)
	ro, roWs, _, _ := attributionTree(t, policy.ModeReadOnly)
	// The server's view: it may read and write everything of the tree
	// but the folder "locked" and the file "unreadable".
	allowAll := func(path string, write bool) bool {
		return !strings.Contains(path, "locked") && !strings.Contains(path, "unreadable")
	}
	var inet, netlink NetRefusals
	inet.Add(2)
	inet.Add(2)
	netlink.Add(16)
	cases := []struct {
		name string
		plan *Plan
		// carve: no mount namespace (plan.Write is what is writable).
		carve bool
		code  int
		out   string
		net   NetRefusals
		want  DenialKind // 0: not a denial
		// why is a part of Denial.String.
		why string
	}{
		{"exit 0", &plan, false, 0, "touch: cannot touch '" + out + "/x': Read-only file system\n", NetRefusals{}, 0, ""},
		{"unsandboxed", nil, false, 1, "touch: cannot touch '" + out + "/x': Read-only file system\n", NetRefusals{}, 0, ""},
		{"sigsys", &plan, false, 159, "", NetRefusals{}, DeniedSyscall, "SIGSYS"},
		{"network", &plan, false, 7, "curl: (7) Couldn't connect to server\n", inet, DeniedNetwork, "network access is off: 2 socket calls (AF_INET ×2) refused: curl: (7) Couldn't connect to server"},
		{"netlink only", &plan, false, 1, "", netlink, 0, ""},
		{"exit code alone", &plan, false, 7, "", NetRefusals{}, 0, ""},
		{"grep -q", &plan, false, 1, "", NetRefusals{}, 0, ""},
		{"write outside", &plan, false, 1, "touch: cannot touch '" + out + "/x': Read-only file system\n", NetRefusals{}, DeniedFile, "writing " + out + "/x (outside the writable roots): touch: cannot touch"},
		{"write outside, user may not either", &plan, false, 1, "touch: cannot touch '" + out + "/locked/x': Read-only file system\n", NetRefusals{}, 0, ""},
		{"create, EACCES", &plan, false, 1, "bash: line 1: " + out + "/new: Permission denied\n", NetRefusals{}, DeniedFile, "writing " + out + "/new"},
		{"program name is not the path", &plan, false, 126, "/bin/bash: line 1: ./s: Permission denied\n", NetRefusals{}, 0, ""},
		{"own EACCES in the workspace", &plan, false, 1, "cat: f: Permission denied\n", NetRefusals{}, 0, ""},
		{"own EACCES, unreadable anyway", &plan, false, 1, "cat: " + out + "/unreadable: Permission denied\n", NetRefusals{}, 0, ""},
		{"deny_read", &plan, false, 2, "ls: cannot open directory '" + home + "/.ssh': Permission denied\n", NetRefusals{}, DeniedFile, "reading " + home + "/.ssh (unreadable: deny_read"},
		{"folder on the way", &plan, false, 2, "ls: cannot open directory '" + home + "': Permission denied\n", NetRefusals{}, DeniedFile, "cannot be listed"},
		// With git = "commit" the index is the agent's to write; hooks are not.
		{"git index", &plan, false, 128, "fatal: Unable to create '" + ws + "/.git/index.lock': Permission denied\n", NetRefusals{}, 0, ""},
		{"protected", &plan, false, 1, "cp: cannot create regular file '" + ws + "/.git/hooks/pre-commit': Permission denied\n", NetRefusals{}, DeniedFile, "(protected: " + ws + "/.git/hooks)"},
		{"protected, relative", &plan, false, 255, "error: could not lock config file .git/config: Permission denied\n", NetRefusals{}, DeniedFile, "writing " + ws + "/.git/config"},
		{"python", &plan, false, 1, "PermissionError: [Errno 13] Permission denied: '" + out + "/new'\n", NetRefusals{}, DeniedFile, "writing " + out + "/new"},
		{"python repr", &plan, false, 1, "error: PermissionError(13, 'Permission denied')\n", NetRefusals{}, 0, ""},
		{"rust, no path", &plan, false, 101, "Error: Os { code: 13 }\nCaused by:\n    Permission denied (os error 13)\n", NetRefusals{}, 0, ""},
		{"sandbox in a path", &plan, false, 1, "/home/u/sandbox-project/x.go:3:2: undefined: foo\n", NetRefusals{}, 0, ""},
		{"quoted by set -x", &plan, false, 1, "+ grep -r \"Permission denied\" docs/\n", NetRefusals{}, 0, ""},
		{"seccomp named, no path", &plan, false, 1, "error: syscall blocked by seccomp\n", NetRefusals{}, 0, ""},
		{"ptrace, no path", &plan, false, 1, "strace: attach: ptrace(PTRACE_SEIZE, 1): Operation not permitted\n", NetRefusals{}, 0, ""},
		// An rc file's refusal in a command's output would count: it is a
		// refusal. The shell snapshot keeps rc output out of commands'.
		{"rc noise, if it reached the output", &plan, false, 1, "mktemp: failed to create file via template '" + home + "/.pyenv/shims/.pyenv-shim.XXXXXX': Permission denied\n", NetRefusals{}, DeniedFile, "writing " + home + "/.pyenv/shims/.pyenv-shim.XXXXXX"},
		{"helper setup", &plan, false, 126, "unified-exec: sandbox: landlock: restricting (ABI 7, 40 rules): x\n", NetRefusals{}, DeniedSetup, "unified-exec: sandbox: landlock"},
		{"read-only mode", &ro, false, 1, "touch: cannot touch '" + roWs + "/x': Read-only file system\n", NetRefusals{}, DeniedFile, "(read-only mode)"},
		{"device", &plan, false, 1, "bash: /dev/null: Permission denied\n", NetRefusals{}, 0, ""},
		{"carved: a new entry beside .git", &plan, true, 1, "touch: cannot touch 'new': Permission denied\n", NetRefusals{}, DeniedFile, "a folder that holds a protected path"},
		{"mounts: a new entry beside .git", &plan, false, 1, "touch: cannot touch 'new': Permission denied\n", NetRefusals{}, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := Evidence{Code: c.code, Output: c.out, Plan: c.plan, Mounts: !c.carve, Cwd: ws, Home: home, Net: c.net, Allowed: allowAll}
			d, ok := Attribute(ev)
			if ok != (c.want != 0) || d.Kind != c.want {
				t.Fatalf("Attribute = %v, %+v; want kind %d", ok, d, c.want)
			}
			if ok && !strings.Contains(d.String(), c.why) {
				t.Fatalf("String() = %q, want it to hold %q", d.String(), c.why)
			}
		})
	}
}

// TestPathsIn: the paths a refusal line names.
func TestPathsIn(t *testing.T) {
	cases := map[string][]string{
		"touch: cannot touch '/etc/x': Permission denied":                                        {"/etc/x"},
		"mkdir: cannot create directory ‘/usr/x’: Read-only file system":                         {"/usr/x"},
		"bash: line 1: /etc/x: Permission denied":                                                {"/etc/x"},
		"sh: 1: cannot create /etc/x: Permission denied":                                         {"/etc/x"},
		"open /etc/x: permission denied":                                                         {"/etc/x"},
		"Error: EACCES: permission denied, open '/etc/x'":                                        {"/etc/x"},
		"java.io.FileNotFoundException: /etc/x (Permission denied)":                              {"/etc/x"},
		"E: Could not open lock file /var/lib/dpkg/lock-frontend - open (13: Permission denied)": {"/var/lib/dpkg/lock-frontend"},
		"cat: x: Permission denied":                                                              {"x"},
		"ln: failed to create hard link '.git/x' => 'src/x': Invalid cross-device link":          {".git/x", "src/x"},
		"PermissionError: [Errno 13] Permission denied: '/etc/x'":                                {"/etc/x"},
		"/usr/bin/ld: cannot open output file /usr/x: Permission denied":                         {"/usr/x"},
		"/etc/x: Permission denied":                                                              {"/etc/x"},
		"Permission denied (os error 13)":                                                        nil,
	}
	for line, want := range cases {
		got := pathsIn(line)
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("pathsIn(%q) = %q, want %q", line, got, want)
		}
	}
}

// TestAttributeTellsNothingOfDenyRead: a refusal naming a path under
// deny_read is told as that entry alone, the same whether the file exists
// or not, and without where a link in it leads (red team 31 printed
// guessed names in ~/.ssh in a line of its own: "reading" told one
// existed, "writing" that it did not, and a link's target was shown).
func TestAttributeTellsNothingOfDenyRead(t *testing.T) {
	plan, ws, home, out := attributionTree(t, policy.ModeWorkspaceWrite)
	if err := os.Symlink(out+"/file", home+"/.ssh/deploy-key"); err != nil {
		t.Fatal(err)
	}
	allowAll := func(string, bool) bool { return true }
	var got []string
	for _, name := range []string{"id", "absent", "deploy-key"} {
		line := "cat: " + home + "/.ssh/" + name + ": Permission denied\n"
		d, ok := Attribute(Evidence{Plan: &plan, Code: 1, Output: line, Cwd: ws, Home: home, Mounts: true, Allowed: allowAll})
		if !ok {
			t.Fatalf("%q is not a denial", line)
		}
		got = append(got, strings.ReplaceAll(d.String(), name, "NAME"))
		if strings.Contains(d.String(), out) {
			t.Errorf("the link's target is told: %s", d)
		}
	}
	if got[0] != got[1] || got[1] != got[2] {
		t.Errorf("the denials differ by what exists:\n%s", strings.Join(got, "\n"))
	}
	// Through a link the command made to ~/.ssh, then the link in there
	// (red team 32): resolved whole, only where the last one led showed.
	if err := os.Symlink(home+"/.ssh", ws+"/l"); err != nil {
		t.Fatal(err)
	}
	line := "cat: " + ws + "/l/deploy-key: Permission denied\n"
	d, ok := Attribute(Evidence{Plan: &plan, Code: 1, Output: line, Cwd: ws, Home: home, Mounts: true, Allowed: allowAll})
	if !ok || strings.Contains(d.String(), out) || d.Path != home+"/.ssh" {
		t.Errorf("through a link to ~/.ssh: %v %s", ok, d)
	}
}

// TestAttributeCoveredFolderFoundEmpty: in a mount namespace an
// unreadable folder is covered by an empty one, where root (whose
// searches no mode stops) finds nothing rather than being refused: "No
// such file or directory" for a path in it is the sandbox's doing, and
// told as the deny_read entry. Without the mounts, or for a path outside
// every unreadable one, it is a missing file.
func TestAttributeCoveredFolderFoundEmpty(t *testing.T) {
	plan, ws, home, _ := attributionTree(t, policy.ModeWorkspaceWrite)
	line := "cat: " + home + "/.ssh/id_ed25519: No such file or directory\n"
	d, ok := Attribute(Evidence{Plan: &plan, Code: 1, Output: line, Cwd: ws, Home: home, Mounts: true})
	if !ok || d.Path != home+"/.ssh" {
		t.Errorf("a key in the covered ~/.ssh, found absent: %v %s", ok, d)
	}
	if _, ok := Attribute(Evidence{Plan: &plan, Code: 1, Output: line, Cwd: ws, Home: home}); ok {
		t.Error("without the mounts, a missing file in ~/.ssh is told as a denial")
	}
	other := "cat: " + ws + "/missing: No such file or directory\n"
	if d, ok := Attribute(Evidence{Plan: &plan, Code: 1, Output: other, Cwd: ws, Home: home, Mounts: true}); ok {
		t.Errorf("a missing file in the workspace is told as a denial: %s", d)
	}
}
