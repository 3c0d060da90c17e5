//go:build linux

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// noisyHome is a HOME whose login profile prints what pyenv's init prints
// in a sandbox (to stderr), a line to stdout, and sets a variable.
func noisyHome(t *testing.T) string {
	t.Helper()
	home, _ := filepath.EvalSymlinks(t.TempDir())
	rc := "echo 'rc: loading'\n" +
		"echo \"mktemp: failed to create file via template '$HOME/.pyenv/shims/.pyenv-shim.XXXXXX': Permission denied\" >&2\n" +
		"echo 'pyenv: cannot rehash: couldn'\\''t acquire lock' >&2\n" +
		"export FROM_PROFILE=yes\n"
	os.WriteFile(filepath.Join(home, ".bashrc"), []byte(rc), 0o644)
	os.WriteFile(filepath.Join(home, ".bash_profile"), []byte(". ~/.bashrc\n"), 0o644)
	return home
}

// TestMCPAttribution: the cases of the issue through the real server,
// with the default login (the shell snapshot), on both spawn paths: the
// noisy profile is never in a response nor blamed; exit codes alone and
// a command's own EACCES are not denials; a real write outside the
// writable roots and a connection with the network off are, each note
// quoting the command's own line. The server's log shows the snapshot,
// with what the profile printed.
func TestMCPAttribution(t *testing.T) {
	requireSandbox(t)
	home := noisyHome(t)
	dir := t.TempDir()
	pf := filepath.Join(dir, "policy.toml")
	os.WriteFile(pf, []byte("[approval]\nmode = \"never\"\n[sandbox]\nexclude_slash_tmp = true\n"), 0o644)
	out, _ := filepath.EvalSymlinks(t.TempDir())
	unreadable := filepath.Join(out, "secret")
	os.WriteFile(unreadable, []byte("x"), 0o000)
	root := os.Getuid() == 0
	cases := []struct {
		name, cmd, note string
		asRoot          bool
	}{
		{"noisy profile", "echo hi; exit 3", "", true},
		{"grep -q", "grep -q nomatch", "", true},
		{"exit 7", "exit 7", "", true},
		{"own EACCES", "cat " + unreadable, "", false},
		{"script without x", "printf 'echo x\\n' > s; ./s", "", true},
		{"write outside", "touch " + out + "/new", "The sandbox blocked this (writing " + out + "/new (outside the writable roots): touch: cannot touch", true},
		{"curl", "curl -sS --max-time 5 http://1.1.1.1/", "The sandbox blocked this (network access is off: 1 socket call (AF_INET ×1) refused: curl: (7)", true},
	}
	for _, spawn := range []string{"thread", "helper"} {
		t.Run(spawn, func(t *testing.T) {
			env := []string{"HOME=" + home, "UNIFIED_EXEC_SPAWN="}
			if spawn == "helper" {
				env[1] = "UNIFIED_EXEC_SPAWN=helper"
			}
			s := startServer(t, serverOpts{args: []string{"--policy", pf}, env: env})
			for _, c := range cases {
				if root && !c.asRoot {
					continue // root reads every file
				}
				if strings.HasPrefix(c.cmd, "curl") {
					if _, err := exec.LookPath("curl"); err != nil {
						continue
					}
				}
				text := s.exec(map[string]any{"cmd": c.cmd, "login": true})
				if strings.Contains(text, "rc: loading") || strings.Contains(text, "pyenv") || strings.Contains(text, "mktemp") {
					t.Fatalf("%s: the profile reached the response:\n%s", c.name, text)
				}
				if strings.Contains(text, "Process exited with code 0") {
					t.Fatalf("%s: want a failure:\n%s", c.name, text)
				}
				switch {
				case c.note == "" && strings.Contains(text, "sandbox blocked"):
					t.Fatalf("%s: taken for a denial:\n%s", c.name, text)
				case c.note != "" && !strings.Contains(text, c.note):
					t.Fatalf("%s: want %q in:\n%s", c.name, c.note, text)
				}
			}
			if out := output(s.exec(map[string]any{"cmd": `echo "$FROM_PROFILE"`, "login": true})); strings.TrimSpace(out) != "yes" {
				t.Fatalf("the profile's environment: %q", out)
			}
			// Its log is complete once it has exited.
			s.session.Close()
			if log := s.stderr.String(); !strings.Contains(log, "shell snapshot of /bin/bash") || !strings.Contains(log, "kept out of commands' output") || !strings.Contains(log, "cannot rehash") {
				t.Fatalf("the server's log lacks the snapshot:\n%s", log)
			}
		})
	}
}

// TestWrapNetworkDenial: the wrapper says the sandbox blocked network
// access, from the refusal counted, not from curl's words.
func TestWrapNetworkDenial(t *testing.T) {
	requireSandbox(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip(err)
	}
	pf := filepath.Join(t.TempDir(), "policy.toml")
	os.WriteFile(pf, []byte("[approval]\nmode = \"never\"\n"), 0o644)
	out, code := wrap(t, []string{"--policy", pf}, "curl", "-sS", "--max-time", "5", "http://1.1.1.1/")
	if code != 7 || !strings.Contains(out, "unified-exec: the sandbox blocked this (network access is off: 1 socket call (AF_INET ×1) refused") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}
