//go:build linux

package integration

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// escapeIdentity: inside the sandbox a command is the user who started
// unified-exec — as root, root; as an ordinary user, that user in a user
// namespace mapping only their own uid and gid — and nothing the user
// namespace's "root" could do reaches outside it: no capability is left,
// root's files stay root's, no set-id file of another owner can be made,
// nothing can be mounted, directly or from a user namespace of its own.
func escapeIdentity(t *testing.T) {
	uid, gid := os.Getuid(), os.Getgid()
	// /etc is a writable root here, so that nothing but the command's
	// identity stands between it and root's files: Landlock and the
	// mounts let it through, the kernel's ownership checks must not.
	e := newSandboxEnv(t, "[sandbox]\nwritable_roots = [\"/etc\"]\n")

	_, out := e.run(t, "id -u; id -g")
	if want := fmt.Sprintf("%d\n%d\n", uid, gid); out != want {
		t.Fatalf("id inside: %q, want %q (the caller's uid and gid)", out, want)
	}

	_, out = e.run(t, "cat /proc/self/uid_map /proc/self/gid_map")
	maps := strings.Fields(out)
	if uid == 0 {
		if len(maps) != 6 || maps[0] != "0" || maps[1] != "0" {
			t.Fatalf("root's commands should be in the initial user namespace: %q", out)
		}
	} else if want := []string{fmt.Sprint(uid), fmt.Sprint(uid), "1", fmt.Sprint(gid), fmt.Sprint(gid), "1"}; strings.Join(maps, " ") != strings.Join(want, " ") {
		t.Fatalf("uid and gid maps %q, want only the user's own ids %v", out, want)
	}

	if uid != 0 {
		// No capability in any set: the user namespace's stay with
		// unified-exec.
		_, out = e.run(t, "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status")
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(line); len(f) != 2 || strings.Trim(f[1], "0") != "" {
				t.Errorf("a command holds capabilities: %q", line)
			}
		}
		// Root's files: open for append (which writes nothing even
		// where it succeeds) must be refused by ownership alone.
		code, out := e.run(t, ": >> /etc/passwd && echo OPENED")
		if code == 0 || strings.Contains(out, "OPENED") || !strings.Contains(out, "Permission denied") {
			t.Errorf("a root-owned file opened for writing from inside: exit %d: %s", code, out)
		}
		code, out = e.run(t, "cp /bin/true own && chown 0:0 own && echo CHOWNED; chmod 6755 /usr/bin/true && echo CHMODDED")
		if strings.Contains(out, "CHOWNED") || strings.Contains(out, "CHMODDED") {
			t.Errorf("a file given to root, or root's file made set-id, from inside: exit %d: %s", code, out)
		}
	}

	if uid != 0 {
		// Unsandboxed too (danger-full-access), a command gets none of
		// the user namespace's capabilities.
		full := newSandboxEnv(t, "[sandbox]\nmode = \"danger-full-access\"\n")
		_, out = full.run(t, "id -u; grep -E '^Cap(Inh|Prm|Eff|Amb)' /proc/self/status")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 5 || lines[0] != fmt.Sprint(uid) {
			t.Fatalf("unsandboxed identity: %q", out)
		}
		for _, line := range lines[1:] {
			if f := strings.Fields(line); len(f) != 2 || strings.Trim(f[1], "0") != "" {
				t.Errorf("an unsandboxed command holds capabilities: %q", line)
			}
		}
	}

	// Mounting: directly, and after making a user namespace of its own.
	code, out := e.run(t, "mkdir -p m; mount -t tmpfs none m && echo MOUNTED; unshare -Urm sh -c 'mount -t tmpfs none m && echo NSMOUNTED; umount /proc && echo UNMOUNTED'; true")
	if strings.Contains(out, "MOUNTED") {
		t.Errorf("a mount from inside: exit %d: %s", code, out)
	}
}

// escapeExitStatus: a command cannot forge how it ended. The helper that
// is PID 1 of a session's namespace reports the exit status on a pipe of
// its own; a command that reopened it (/proc/1/fd) could write "exit 0"
// there first and have a failed run reported as a success.
func escapeExitStatus(t *testing.T) {
	e := newSandboxEnv(t, "")
	code, out := e.run(t, `for fd in /proc/1/fd/*; do echo "exit 0" > "$fd" 2>/dev/null && echo "WROTE $fd"; done; ls -l /proc/1/fd/ 2>&1 | head -3; exit 7`)
	if code != 7 {
		t.Errorf("the command's exit 7 was reported as %d: %s", code, out)
	}
	if strings.Contains(out, "WROTE /proc/1/fd/") && code != 7 {
		t.Errorf("a descriptor of the session's init was written: %s", out)
	}
}

// escapeNestedUserNamespace: no user namespace can be made inside (there a
// command would hold every capability again, over namespaces of its own:
// kernel code an unprivileged process never reaches), while threads and
// processes still start (clone3 answers ENOSYS: libc falls back to clone).
func escapeNestedUserNamespace(t *testing.T) {
	e := newSandboxEnv(t, "")
	code, out := e.run(t, `unshare -U true && echo UNSHARED; unshare -Ur true && echo ROOTED; `+e.py+` -c 'import ctypes, os, threading
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x10000000) == 0: print("PYUNSHARED")
else: print("unshare", ctypes.get_errno())
t = threading.Thread(target=lambda: print("thread ran")); t.start(); t.join()
pid = os.fork()
if pid == 0: os._exit(0)
os.waitpid(pid, 0); print("fork ran")'`)
	if strings.Contains(out, "UNSHARED") || strings.Contains(out, "ROOTED") {
		t.Errorf("a user namespace was made inside: exit %d: %s", code, out)
	}
	for _, want := range []string{"unshare 1", "thread ran", "fork ran"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q: exit %d: %s", want, code, out)
		}
	}
}
