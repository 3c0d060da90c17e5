//go:build linux

package integration

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fdAttack lists every descriptor above 2 the command holds and writes to
// each: an inherited TCP socket would be the network, an inherited file
// a write outside the sandbox.
const fdAttack = `import os
for fd in range(3, 1024):
    try:
        os.fstat(fd)
    except OSError:
        continue
    try:
        target = os.readlink("/proc/self/fd/%d" % fd)
    except OSError:
        target = "?"
    try:
        os.write(fd, b"LEAKED-FD\n")
        print("fd", fd, target, "WROTE")
    except OSError as e:
        print("fd", fd, target, "held:", e.strerror)
print("done")
`

// leakedFiles are what a careless caller leaves open when it starts
// unified-exec: a TCP connection to a listener of the test's, and a file
// outside every writable root, open for writing. check reports what
// reached either.
func leakedFiles(t *testing.T) (files []*os.File, check func() string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	sock, err := c.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sock.Close() })
	out, err := os.CreateTemp("/var/tmp", "ue-leak-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Close(); os.Remove(out.Name()) })
	peer := <-accepted
	t.Cleanup(func() { peer.Close() })
	// Past the descriptors unified-exec hands its own helpers (3 and 4),
	// which would replace them.
	files = make([]*os.File, 40)
	return append(files, sock, out), func() string {
		var got []string
		if b, _ := os.ReadFile(out.Name()); len(b) > 0 {
			got = append(got, "the outside file holds "+strings.TrimSpace(string(b)))
		}
		peer.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if b, _ := bufio.NewReader(peer).ReadString('\n'); b != "" {
			got = append(got, "the TCP peer received "+strings.TrimSpace(b))
		}
		return strings.Join(got, "; ")
	}
}

// escapeInheritedFDs: descriptors the server inherited from its caller
// do not reach commands: none is open in the command, so neither the
// network nor the outside file can be used through them.
func escapeInheritedFDs(t *testing.T) {
	files, check := leakedFiles(t)
	e := newSandboxEnvWith(t, sandboxOpts{extraFiles: files})
	if err := os.WriteFile(filepath.Join(e.ws, "fds.py"), []byte(fdAttack), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tty := range []bool{false, true} {
		text, isErr, _ := e.call("exec_command", map[string]any{"cmd": e.py + " fds.py", "login": false, "tty": tty, "yield_time_ms": 20000})
		out := output(text)
		if isErr || !strings.Contains(out, "done") {
			t.Fatalf("the attack did not run (tty %v): %s", tty, text)
		}
		if strings.Contains(out, "fd ") {
			t.Errorf("descriptors above 2 are open in the command (tty %v):\n%s", tty, out)
		}
	}
	if got := check(); got != "" {
		t.Errorf("an inherited descriptor was used from the sandbox: %s", got)
	}
}

// TestWrapInheritedFDs: the same, for one command wrapped by the CLI.
func TestWrapInheritedFDs(t *testing.T) {
	requireSandbox(t)
	files, check := leakedFiles(t)
	ws := t.TempDir()
	py := python(t)
	if err := os.WriteFile(filepath.Join(ws, "fds.py"), []byte(fdAttack), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, spawn := range []string{"", "helper"} {
		cmd := exec.Command(binary, "--workspace", ws, "--", py, "fds.py")
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "UNIFIED_EXEC_SPAWN="+spawn)
		cmd.ExtraFiles = files
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "done") {
			t.Fatalf("the attack did not run: %v: %s", err, out)
		}
		if strings.Contains(string(out), "fd ") {
			t.Errorf("descriptors above 2 are open in the wrapped command:\n%s", out)
		}
	}
	if got := check(); got != "" {
		t.Errorf("an inherited descriptor was used from the sandbox: %s", got)
	}
}

// escapeReadOnlyFiles: the policy file in use and the audit log stay
// read-only inside the sandbox though they lie in the workspace (the
// README's CI example keeps the policy there): they can be neither
// rewritten, truncated, removed nor renamed, and nor can the folders on
// the way to them be swapped for others, while everything else in those
// folders stays writable and the server goes on logging.
func escapeReadOnlyFiles(t *testing.T) {
	for _, layout := range []struct{ name, policyAt, audit string }{
		{"top", "policy.toml", "audit.jsonl"},
		{"nested", "ci/policy.toml", "a/audit.jsonl"},
	} {
		t.Run(layout.name, func(t *testing.T) {
			e := newSandboxEnvWith(t, sandboxOpts{
				policy:   "[sandbox]\nmode = \"workspace-write\"\n\n[audit]\npath = \"%WS%/" + layout.audit + "\"\n",
				policyAt: layout.policyAt,
			})
			pol, audit := layout.policyAt, layout.audit
			original, err := os.ReadFile(filepath.Join(e.ws, pol))
			if err != nil {
				t.Fatal(err)
			}
			e.run(t, "true") // the audit log has lines
			attacks := []string{
				`printf '[sandbox]\nmode = "danger-full-access"\n' > ` + pol,
				"echo '[approval]' >> " + pol,
				"truncate -s 0 " + pol,
				"rm -f " + pol,
				"mv " + pol + " moved.toml",
				"chmod 666 " + pol,
				"ln " + pol + " hard.toml && echo '# pwned' >> hard.toml",
				": > " + audit,
				`echo '{"event":"forged"}' >> ` + audit,
				"rm -f " + audit,
				"mv " + audit + " moved.jsonl && echo forged > " + audit,
			}
			if dir := filepath.Dir(pol); dir != "." {
				attacks = append(attacks, "mv "+dir+" moved-dir && mkdir "+dir+` && printf '[sandbox]\nmode = "danger-full-access"\n' > `+pol)
			}
			if dir := filepath.Dir(audit); dir != "." {
				attacks = append(attacks, "mv "+dir+" moved-logs && mkdir "+dir+" && echo forged > "+audit)
			}
			for _, cmd := range attacks {
				if code, out := e.run(t, cmd); code == 0 {
					t.Errorf("%q succeeded: %s", cmd, out)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(e.ws, pol)); string(b) != string(original) {
				t.Errorf("the policy file was changed:\n%s", b)
			}
			lines := 0
			if b, err := os.ReadFile(filepath.Join(e.ws, audit)); err != nil {
				t.Errorf("the audit log: %v", err)
			} else {
				for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
					var ev map[string]any
					if json.Unmarshal([]byte(l), &ev) != nil || ev["event"] == "forged" {
						t.Errorf("the audit log holds a line the server did not write: %q", l)
					}
					lines++
				}
			}
			if lines < 2*len(attacks) {
				t.Errorf("the audit log has %d lines for %d commands", lines, len(attacks)+1)
			}
			// Everything else stays as it was: readable, and writable
			// beside them.
			allowed := []struct{ cmd, want string }{
				{"cat " + pol, "workspace-write"},
				{"tail -n 1 " + audit + " | grep -c time", "1"},
				{"echo ok > " + filepath.Dir(pol) + "/other.txt && cat " + filepath.Dir(pol) + "/other.txt", "ok"},
				{"echo ok > " + filepath.Dir(audit) + "/other.log && mv " + filepath.Dir(audit) + "/other.log b/ && cat b/other.log", "ok"},
			}
			for _, c := range allowed {
				if code, out := e.run(t, c.cmd); code != 0 || !strings.Contains(out, c.want) {
					t.Errorf("%q: exit %d, output %q (want %q)", c.cmd, code, out, c.want)
				}
			}
		})
	}
}

// escapeWorkdir: a working directory inside a protected or unreadable
// folder sees what every other path to it sees: the protected folder
// read-only, the unreadable one empty or refused.
func escapeWorkdir(t *testing.T) {
	e := newSandboxEnv(t, "[sandbox]\ndeny_read = [\"~/.ssh\", \"%WS%/private\"]\n")
	if err := os.MkdirAll(filepath.Join(e.ws, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	config, _ := os.ReadFile(filepath.Join(e.ws, ".git", "config"))
	// Writes must fail; reads and listings must not show what is hidden
	// (an empty folder is fine).
	refused := []struct{ workdir, cmd, hidden string }{
		{".git/hooks", "echo 'echo pwned' > pre-commit && chmod +x pre-commit", ""},
		{".git", "echo '[core]' >> config", ""},
		{".git", "echo x > hooks/post-checkout", ""},
		{e.ws + "/.git/hooks", "echo 'echo pwned' > pre-push", ""},
		{"private", "cat token.txt", "FAKE-"},
		{"private", "ls", "token.txt"},
		{e.home + "/.ssh", "cat id_rsa", "FAKE-"},
		{e.home + "/.ssh", "ls", "id_rsa"},
	}
	for _, c := range refused {
		text, isErr, res := e.call("exec_command", map[string]any{"cmd": c.cmd, "workdir": c.workdir, "login": false, "yield_time_ms": 20000})
		if isErr {
			continue // refused before it ran
		}
		code, ok := structured(t, res)["exit_code"].(float64)
		if c.hidden == "" && (!ok || code == 0) {
			t.Errorf("%q in %s succeeded: %s", c.cmd, c.workdir, text)
		}
		if c.hidden != "" && strings.Contains(output(text), c.hidden) {
			t.Errorf("%q in %s showed %s: %s", c.cmd, c.workdir, c.hidden, text)
		}
	}
	for _, f := range []string{"hooks/pre-commit", "hooks/pre-push", "hooks/post-checkout"} {
		if _, err := os.Stat(filepath.Join(e.ws, ".git", f)); err == nil {
			t.Errorf(".git/%s was planted", f)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, ".git", "config")); string(b) != string(config) {
		t.Errorf(".git/config was changed:\n%s", b)
	}
	allowed := []struct{ workdir, cmd, want string }{
		{"a", "echo ok > new.txt && cat new.txt file.txt", "okdata"},
		{"/tmp", "f=$(mktemp ue.XXXX) && echo t > $f && cat $f && rm $f", "t"},
		{".git", "cat HEAD", "ref:"},
	}
	for _, c := range allowed {
		text, isErr, res := e.call("exec_command", map[string]any{"cmd": c.cmd, "workdir": c.workdir, "login": false, "yield_time_ms": 20000})
		code, _ := structured(t, res)["exit_code"].(float64)
		if isErr || code != 0 || !strings.Contains(strings.ReplaceAll(output(text), "\n", ""), c.want) {
			t.Errorf("%q in %s: %s", c.cmd, c.workdir, text)
		}
	}
}
