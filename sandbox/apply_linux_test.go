//go:build linux

package sandbox_test

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/unified-exec/unified-exec/policy"
	"github.com/unified-exec/unified-exec/sandbox"
	"github.com/unified-exec/unified-exec/sandbox/sandboxtest"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	sandboxtest.HelperMain()
	os.Exit(m.Run())
}

// env is a workspace and a fake home for one kernel test.
type env struct {
	root, home, ws string
}

func newEnv(t *testing.T) env {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := env{root: root, home: root + "/home", ws: root + "/home/project"}
	for _, d := range []string{e.ws + "/.git/hooks", e.ws + "/src", e.ws + "/lib", e.home + "/.ssh"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range map[string]string{
		e.home + "/.ssh/id_rsa":          "PRIVATE KEY",
		e.ws + "/.git/HEAD":              "ref: refs/heads/main\n",
		e.ws + "/.git/hooks/pre-commit":  "#!/bin/sh\necho original\n",
		e.ws + "/README.md":              "readme\n",
		e.ws + "/src/a.txt":              "a\n",
		e.home + "/notes.txt":            "notes\n",
		e.ws + "/src/evil-hook":          "#!/bin/sh\necho pwned\n",
		e.ws + "/lib/keep.txt":           "keep\n",
		e.home + "/.ssh/authorized_keys": "keys\n",
	} {
		if err := os.WriteFile(name, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc", e.ws+"/etc-link"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", e.home)
	t.Setenv("TMPDIR", "")
	return e
}

// plan compiles the default policy (changed by mod) for the workspace.
// /tmp is excluded: the test tree lives there (TestApplyTmp covers it).
func (e env) plan(t *testing.T, mod func(p *policy.Sandbox)) sandbox.Plan {
	t.Helper()
	p := policy.DefaultSandbox()
	p.ExcludeSlashTmp = true
	if mod != nil {
		mod(&p)
	}
	plan, err := sandbox.Compile(p, e.ws)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func (e env) run(t *testing.T, plan sandbox.Plan, isolate bool, cmd string, extraEnv ...string) sandboxtest.Result {
	t.Helper()
	return sandboxtest.Run(t, plan, cmd, sandboxtest.Options{Dir: e.ws, Env: append([]string{"HOME=" + e.home}, extraEnv...), Isolate: isolate})
}

// layers runs f once per way Apply enforces writable roots: carving
// (no mount namespace) and mounts (the helper is PID 1 of new PID and
// mount namespaces).
func layers(t *testing.T, f func(t *testing.T, isolate bool)) {
	t.Run("carve", func(t *testing.T) { f(t, false) })
	t.Run("mounts", func(t *testing.T) {
		sandboxtest.RequireNamespaces(t)
		f(t, true)
	})
}

func mustFail(t *testing.T, r sandboxtest.Result, cmd string) {
	t.Helper()
	if r.Code == 0 {
		t.Errorf("%q succeeded in the sandbox: %q", cmd, r.Output)
	}
	if strings.Contains(r.Output, "unified-exec: sandbox:") {
		t.Fatalf("Apply failed: %s", r.Output)
	}
}

func mustPass(t *testing.T, r sandboxtest.Result, cmd, want string) {
	t.Helper()
	if r.Code != 0 || !strings.Contains(r.Output, want) {
		t.Errorf("%q: exit %d, output %q, want exit 0 and %q", cmd, r.Code, r.Output, want)
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestApplyWorkspaceWrite(t *testing.T) {
	sandboxtest.Require(t)
	layers(t, func(t *testing.T, isolate bool) {
		e := newEnv(t)
		plan := e.plan(t, nil)
		refused := []string{
			"touch /etc/ue-escape",
			"echo x > etc-link/ue-escape",
			"touch $HOME/ue-escape",
			"echo pwned > .git/hooks/pre-commit",
			"echo '[core]' >> .git/config",
			"mv src/evil-hook .git/hooks/post-checkout",
			"ln src/evil-hook .git/hooks/post-merge",
			"rm -rf .git/hooks",
			"mv .git git-moved",
			"cat $HOME/.ssh/id_rsa",
			"ls $HOME/.ssh",
			"ls $HOME",
		}
		if !isolate {
			// Without a mount namespace git = "commit" falls back to a
			// read-only repository.
			refused = append(refused, "echo x > .git/index", "rm -rf .git")
		}
		for _, cmd := range refused {
			r := e.run(t, plan, isolate, cmd)
			mustFail(t, r, cmd)
			// By its text, or as the orchestrator tells one (root finds
			// a covered folder empty: no such file, not a refusal).
			denied, _ := sandbox.DetectDenial(true, r.Code, r.Output)
			if _, attributed := sandbox.Attribute(sandbox.Evidence{Code: r.Code, Output: r.Output, Plan: &plan, Mounts: isolate, Cwd: e.ws, Home: e.home}); !denied && !attributed {
				t.Errorf("%q: refusal not recognised as a denial: %q", cmd, r.Output)
			}
		}
		for _, p := range []string{"/etc/ue-escape", e.home + "/ue-escape", e.ws + "/.git/hooks/post-checkout", e.ws + "/.git/hooks/post-merge", e.ws + "/git-moved"} {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("%s was created", p)
				os.RemoveAll(p)
			}
		}
		if got := readFile(t, e.ws+"/.git/hooks/pre-commit"); got != "#!/bin/sh\necho original\n" {
			t.Errorf("pre-commit hook changed: %q", got)
		}
		allowed := []struct{ cmd, want string }{
			{"echo hi > src/new.txt && cat src/new.txt", "hi"},
			{"mkdir -p src/d/e && echo deep > src/d/e/f && cat src/d/e/f", "deep"},
			{"echo more >> README.md && tail -1 README.md", "more"},
			{"mv src/a.txt lib/a.txt && ln lib/a.txt src/b.txt && cat src/b.txt && echo linked", "linked"},
			{"rm lib/keep.txt && echo removed", "removed"},
			{"cat .git/HEAD", "refs/heads/main"},
			{"cat /etc/hostname >/dev/null && echo readable", "readable"},
			{"cat $HOME/notes.txt", "notes"},
			{"ls /usr >/dev/null && ls $HOME/project && echo listed", "listed"},
			{"echo x > /dev/null && head -c 4 /dev/zero | wc -c", "4"},
			{"f=/dev/shm/ue-test-$$; echo shm > $f && cat $f && rm $f", "shm"},
		}
		for _, c := range allowed {
			mustPass(t, e.run(t, plan, isolate, c.cmd), c.cmd, c.want)
		}
		// What git writes for everyday work: only the mount layer allows
		// it while keeping hooks/ and config read-only.
		r := e.run(t, plan, isolate, "echo x > .git/index.lock && mv .git/index.lock .git/index && mkdir -p .git/refs/heads && echo ok")
		if isolate {
			mustPass(t, r, "write the index", "ok")
		} else {
			mustFail(t, r, "write the index")
		}
		// New entries directly in the workspace: only the mount layer can
		// allow them while keeping .git read-only.
		r = e.run(t, plan, isolate, "touch top-level.txt && echo created")
		if isolate {
			mustPass(t, r, "touch top-level.txt", "created")
		} else {
			mustFail(t, r, "touch top-level.txt")
		}
	})
}

// TestApplyGit: with a mount namespace, a repository commits and its
// hooks and config stay read-only; the folders on the way to a nested
// repository's cannot be moved, yet renames across them work (the pins
// are buried). Without one, the repository is read-only whole.
func TestApplyGit(t *testing.T) {
	sandboxtest.Require(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is needed")
	}
	layers(t, func(t *testing.T, isolate bool) {
		e := newEnv(t)
		os.RemoveAll(e.ws + "/.git")
		git := func(dir string, args ...string) {
			t.Helper()
			cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
			cmd.Dir, cmd.Env = dir, append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v %s", args, err, out)
			}
		}
		git(e.ws, "init", "-q")
		git(e.ws, "commit", "-q", "--allow-empty", "-m", "base")
		if err := os.MkdirAll(e.ws+"/lib/deep/nested", 0o755); err != nil {
			t.Fatal(err)
		}
		git(e.ws+"/lib/deep/nested", "init", "-q")
		plan := e.plan(t, nil)
		commit := "git -c user.name=t -c user.email=t@t commit -q --allow-empty -m inside && git log --format=%s -1"
		refused := []string{
			"echo pwned > .git/hooks/pre-commit", "echo '[core]' >> .git/config",
			"echo pwned > lib/deep/nested/.git/hooks/pre-commit", "mv lib/deep lib/deep2", "mv lib lib2",
		}
		for _, cmd := range refused {
			mustFail(t, e.run(t, plan, isolate, cmd, "GIT_CONFIG_NOSYSTEM=1"), cmd)
		}
		r := e.run(t, plan, isolate, commit, "GIT_CONFIG_NOSYSTEM=1")
		if !isolate {
			mustFail(t, r, commit)
			return
		}
		mustPass(t, r, commit, "inside")
		mustPass(t, e.run(t, plan, isolate, "mv lib/keep.txt src/ && mv src/keep.txt lib/deep/ && ln lib/deep/keep.txt src/k && echo moved"), "rename across pinned folders", "moved")
	})
}

// TestApplyReadOnlyFiles: the policy file and the audit log stay as they
// are inside a writable root, and so do the folders on the way to them.
func TestApplyReadOnlyFiles(t *testing.T) {
	sandboxtest.Require(t)
	layers(t, func(t *testing.T, isolate bool) {
		e := newEnv(t)
		if err := os.MkdirAll(e.ws+"/src/ci", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(e.ws+"/src/ci/policy.toml", []byte("[sandbox]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		plan := e.plan(t, nil)
		plan.AddReadOnlyFiles(e.ws + "/src/ci/policy.toml")
		refused := []string{
			"echo x >> src/ci/policy.toml", "rm src/ci/policy.toml", "mv src/ci/policy.toml src/p",
			"mv src/ci src/ci2", "ln src/ci/policy.toml src/hard",
		}
		if isolate {
			// Landlock alone does not govern metadata.
			refused = append(refused, "chmod 600 src/ci/policy.toml")
		}
		for _, cmd := range refused {
			mustFail(t, e.run(t, plan, isolate, cmd), cmd)
		}
		if got := readFile(t, e.ws+"/src/ci/policy.toml"); got != "[sandbox]\n" {
			t.Errorf("the policy file changed: %q", got)
		}
		// Carved, the folders on the way take no new entries; files in
		// them stay writable.
		mustPass(t, e.run(t, plan, isolate, "cat src/ci/policy.toml && echo x >> src/a.txt && tail -n 1 src/a.txt"), "write beside", "[sandbox]\nx")
	})
}

// TestApplyMetadata: with a mount namespace, nothing outside the writable
// roots changes, metadata included; inside them set-id bits and devices
// do not work. Without one, Landlock alone does not govern metadata.
func TestApplyMetadata(t *testing.T) {
	sandboxtest.Require(t)
	sandboxtest.RequireNamespaces(t)
	e := newEnv(t)
	plan := e.plan(t, nil)
	for _, cmd := range []string{"chmod 666 $HOME/notes.txt", "touch -d 2000-01-01 $HOME/notes.txt", "chmod 777 $HOME", "chmod 644 $HOME/.ssh/id_rsa"} {
		mustFail(t, e.run(t, plan, true, cmd), cmd)
	}
	if st, err := os.Stat(e.home + "/notes.txt"); err != nil || st.Mode().Perm() != 0o755 || st.ModTime().Year() == 2000 {
		t.Errorf("notes.txt changed: %v %v", st.Mode(), err)
	}
	mustPass(t, e.run(t, plan, true, "chmod 600 src/a.txt && touch -d 2000-01-01 src/a.txt && stat -c %a src/a.txt"), "chmod in the workspace", "600")
	flags := python(t) + ` -c "import os, sys; print(*[os.statvfs(p).f_flag & (os.ST_RDONLY | os.ST_NOSUID | os.ST_NODEV) for p in sys.argv[1:]])" / $HOME .`
	mustPass(t, e.run(t, plan, true, flags), "mount flags", "5 5 6") // read-only and nodev outside; nosuid and nodev in the workspace
}

func TestApplyReadOnly(t *testing.T) {
	sandboxtest.Require(t)
	e := newEnv(t)
	plan := e.plan(t, func(p *policy.Sandbox) { p.Mode = policy.ModeReadOnly })
	for _, cmd := range []string{"touch new.txt", "echo x > src/a.txt", "mkdir d", "rm src/a.txt", "touch /tmp/ue-ro-escape", "cat $HOME/.ssh/id_rsa"} {
		mustFail(t, e.run(t, plan, false, cmd), cmd)
	}
	if got := readFile(t, e.ws+"/src/a.txt"); got != "a\n" {
		t.Errorf("a.txt changed: %q", got)
	}
	mustPass(t, e.run(t, plan, false, "cat src/a.txt && echo x > /dev/null && echo ok"), "read", "ok")
}

// TestApplyTmp: /tmp is writable by default in workspace-write.
func TestApplyTmp(t *testing.T) {
	sandboxtest.Require(t)
	e := newEnv(t)
	// Nothing to carve around: the test tree is in /tmp.
	if err := os.RemoveAll(e.ws + "/.git"); err != nil {
		t.Fatal(err)
	}
	plan := e.plan(t, func(p *policy.Sandbox) { p.ExcludeSlashTmp = false; p.DenyRead = nil; p.Protected = nil })
	mustPass(t, e.run(t, plan, false, "f=$(mktemp /tmp/ue-XXXXXX) && echo t > $f && cat $f && rm $f"), "mktemp", "t")
}

func python(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Skipf("python3 not found: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func TestApplySyscalls(t *testing.T) {
	sandboxtest.Require(t)
	py := python(t)
	e := newEnv(t)
	off := e.plan(t, nil)
	on := e.plan(t, func(p *policy.Sandbox) { p.Network = true })
	// The Python code travels in $PY_CODE: no shell quoting to get wrong.
	pyrun := py + ` -c "$PY_CODE"`
	eperm := func(expr string) string {
		return "PY_CODE=import socket, ctypes, os, errno\ntry:\n    " + expr + "\n    print('ALLOWED')\nexcept OSError as e:\n    print('ERRNO', errno.errorcode.get(e.errno))"
	}
	const (
		tcp     = "socket.socket(socket.AF_INET, socket.SOCK_STREAM)"
		udp     = "socket.socket(socket.AF_INET, socket.SOCK_DGRAM)"
		inet6   = "socket.socket(socket.AF_INET6, socket.SOCK_STREAM)"
		netlink = "socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)"
		raw     = "socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)"
		pair    = "socket.socketpair(socket.AF_INET)"
		// libc syscall() returns -1 and sets errno; raise it as OSError.
		ptrace  = "libc = ctypes.CDLL(None, use_errno=True)\n    r = libc.ptrace(0, 0, 0, 0)\n    if r != 0: raise OSError(ctypes.get_errno(), 'ptrace')"
		uring   = "libc = ctypes.CDLL(None, use_errno=True)\n    buf = ctypes.create_string_buffer(120)\n    r = libc.syscall(425, 4, buf)\n    if r < 0: raise OSError(ctypes.get_errno(), 'io_uring_setup')"
		vmread  = "libc = ctypes.CDLL(None, use_errno=True)\n    r = libc.syscall(310, os.getppid(), None, 0, None, 0, 0)\n    if r < 0: raise OSError(ctypes.get_errno(), 'process_vm_readv')"
		unixStr = "a, b = socket.socketpair(socket.AF_UNIX)\n    a.sendall(b'ping'); assert b.recv(4) == b'ping'\n    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)"
	)
	cases := []struct {
		name    string
		expr    string
		off, on string // wanted output with the network off and on ("": not tried)
	}{
		{"tcp", tcp, "ERRNO EPERM", "ALLOWED"},
		{"udp", udp, "ERRNO EPERM", "ALLOWED"},
		{"inet6", inet6, "ERRNO EPERM", ""},
		{"netlink", netlink, "ERRNO EPERM", "ALLOWED"},
		{"raw", raw, "ERRNO EPERM", ""},
		{"socketpair inet", pair, "ERRNO EPERM", ""},
		{"unix", unixStr, "ALLOWED", "ALLOWED"},
		{"ptrace", ptrace, "ERRNO EPERM", "ERRNO EPERM"},
		{"io_uring_setup", uring, "ERRNO EPERM", "ERRNO EPERM"},
		{"process_vm_readv", vmread, "ERRNO EPERM", "ERRNO EPERM"},
		{"chmod setuid", "open('src/setid', 'w').close(); os.chmod('src/setid', 0o4755)", "ERRNO EPERM", "ERRNO EPERM"},
		{"create setgid", "os.close(os.open('src/setgid', os.O_CREAT | os.O_WRONLY, 0o2755))", "ERRNO EPERM", ""},
		{"chmod plain", "open('src/plain', 'w').close(); os.chmod('src/plain', 0o755)", "ALLOWED", "ALLOWED"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "process_vm_readv" && runtime.GOARCH != "amd64" {
				t.Skip("the test calls syscall 310, process_vm_readv on amd64 only")
			}
			r := e.run(t, off, false, pyrun, eperm(c.expr))
			if got := strings.TrimSpace(r.Output); got != c.off {
				t.Errorf("network off: %q, want %q", got, c.off)
			}
			if c.on == "" {
				return
			}
			r = e.run(t, on, false, pyrun, eperm(c.expr))
			if got := strings.TrimSpace(r.Output); got != c.on {
				t.Errorf("network on: %q, want %q", got, c.on)
			}
		})
	}
	t.Run("asyncio", func(t *testing.T) {
		mustPass(t, e.run(t, off, false, pyrun, "PY_CODE=import asyncio; asyncio.run(asyncio.sleep(0)); print('done')"), "asyncio", "done")
	})
	t.Run("status", func(t *testing.T) {
		r := e.run(t, off, false, "grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status")
		if !strings.Contains(r.Output, "NoNewPrivs:\t1") || !strings.Contains(r.Output, "Seccomp:\t2") {
			t.Errorf("/proc/self/status: %q", r.Output)
		}
	})
	if _, err := exec.LookPath("strace"); err == nil {
		t.Run("strace", func(t *testing.T) {
			r := e.run(t, off, false, "strace -o /dev/null true")
			mustFail(t, r, "strace true")
			if denied, why := sandbox.DetectDenial(true, r.Code, r.Output); !denied {
				t.Errorf("strace refusal not recognised: %q (%s)", r.Output, why)
			}
		})
	}
}

func TestApplyScoped(t *testing.T) {
	sandboxtest.Require(t)
	sandboxtest.RequireLandlockABI(t, 6)
	e := newEnv(t)
	plan := e.plan(t, nil)
	cmd := fmt.Sprintf("kill -0 %d", os.Getpid())
	// The same command outside the sandbox works: the refusal is the
	// sandbox's doing.
	if err := exec.Command("/bin/sh", "-c", cmd).Run(); err != nil {
		t.Fatalf("%q outside the sandbox: %v", cmd, err)
	}
	r := e.run(t, plan, false, cmd)
	mustFail(t, r, cmd)
	// Signals inside the sandbox still work.
	mustPass(t, e.run(t, plan, false, "sleep 5 & kill $! && wait $!; echo status $?"), "kill own child", "status 143")
}

// TestApplyFullAccess: a danger-full-access plan applies nothing.
func TestApplyFullAccess(t *testing.T) {
	e := newEnv(t)
	plan := e.plan(t, func(p *policy.Sandbox) { p.Mode = policy.ModeDangerFullAccess })
	r := e.run(t, plan, false, "grep -E '^Seccomp:' /proc/self/status; touch $HOME/full-access && echo wrote")
	if !strings.Contains(r.Output, "Seccomp:\t0") || !strings.Contains(r.Output, "wrote") {
		t.Fatalf("full access restricted: %q", r.Output)
	}
}

func TestApplyRejectsGarbage(t *testing.T) {
	if err := sandbox.Apply([]byte("{")); err == nil {
		t.Fatal("Apply accepted a broken plan")
	}
}

// TestApplySwappedToSymlink: a directory the plan grants by name (a piece
// of a carved writable root, or of / carved around an unreadable path) is
// replaced, between the plan and the command's start, by a symbolic link
// to a place the plan does not grant — as a session running meanwhile
// can do in the workspace. The grant must not follow the link: the
// secret stays unreadable and the home unwritable.
func TestApplySwappedToSymlink(t *testing.T) {
	layers(t, func(t *testing.T, isolate bool) {
		e := newEnv(t)
		if err := os.WriteFile(e.ws+"/secret.env", []byte("TOKEN\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		plan := e.plan(t, func(p *policy.Sandbox) { p.DenyRead = append(p.DenyRead, e.ws+"/secret.env") })
		if err := os.Rename(e.ws+"/src", e.ws+"/src-old"); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(e.home, e.ws+"/src"); err != nil {
			t.Fatal(err)
		}
		cmd := "cat " + e.home + "/.ssh/id_rsa"
		mustFail(t, e.run(t, plan, isolate, cmd), cmd)
		cmd = "echo pwned > " + e.home + "/.bashrc"
		mustFail(t, e.run(t, plan, isolate, cmd), cmd)
		if _, err := os.Stat(e.home + "/.bashrc"); err == nil {
			t.Fatal("the command wrote the home's .bashrc through the swapped link")
		}
		// The rest of the workspace is as the plan says.
		cmd = "echo ok > " + e.ws + "/README.md && cat " + e.ws + "/README.md"
		mustPass(t, e.run(t, plan, isolate, cmd), cmd, "ok")
	})
}

// TestApplyDenyReadFolderPinned: an unreadable path deeper in a writable
// root cannot be taken out of its listed path by moving a folder on the
// way (the next plan would no longer find it, and nothing would cover
// it): the move fails, and no later command reads it.
func TestApplyDenyReadFolderPinned(t *testing.T) {
	layers(t, func(t *testing.T, isolate bool) {
		e := newEnv(t)
		if err := os.MkdirAll(e.ws+"/secret/deeper", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(e.ws+"/secret/deeper/creds.txt", []byte("CREDS\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		mod := func(p *policy.Sandbox) { p.DenyRead = append(p.DenyRead, e.ws+"/secret/deeper/creds.txt") }
		for _, cmd := range []string{"mv secret secret2", "mv secret/deeper secret/moved"} {
			e.run(t, e.plan(t, mod), isolate, cmd)
			r := e.run(t, e.plan(t, mod), isolate, "cat secret2/deeper/creds.txt secret/moved/creds.txt secret/deeper/creds.txt 2>&1")
			if strings.Contains(r.Output, "CREDS") {
				t.Fatalf("after %q the unreadable file was read: %q", cmd, r.Output)
			}
		}
	})
}

// TestApplyNestedRootSwapped: a workspace inside another writable root
// (as one under /tmp is) is moved away by a command and a link to the
// home made in its place; likewise a $TMPDIR that a command makes a link
// to the home. The next command must not write the home: with mounts
// the move fails (the nested root is pinned); without, or whatever
// happened, the next plan refuses a root reached through a link a
// command could have made.
func TestApplyNestedRootSwapped(t *testing.T) {
	layers(t, func(t *testing.T, isolate bool) {
		e := newEnv(t)
		outer := e.root + "/outer"
		ws := outer + "/ws"
		if err := os.MkdirAll(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		mod := func(p *policy.Sandbox) { p.WritableRoots = []string{outer} }
		compile := func() (sandbox.Plan, error) {
			p := policy.DefaultSandbox()
			p.ExcludeSlashTmp = true
			mod(&p)
			return sandbox.Compile(p, ws)
		}
		plan, err := compile()
		if err != nil {
			t.Fatal(err)
		}
		r := sandboxtest.Run(t, plan, "cd "+outer+" && mv ws ws-old && ln -s "+e.home+" ws", sandboxtest.Options{Dir: outer, Isolate: isolate})
		t.Logf("moving the workspace away: exit %d %q", r.Code, r.Output)
		plan, err = compile()
		t.Logf("the next plan: %v", err)
		if err != nil {
			if !strings.Contains(err.Error(), "symbolic link") {
				t.Fatalf("the next plan failed, but not for the link: %v", err)
			}
		} else {
			cmd := "echo pwned >> " + e.home + "/notes.txt; echo pwned > " + e.home + "/pwned.txt"
			sandboxtest.Run(t, plan, cmd, sandboxtest.Options{Dir: outer, Isolate: isolate})
			if _, err := os.Stat(e.home + "/pwned.txt"); err == nil || readFile(t, e.home+"/notes.txt") != "notes\n" {
				t.Fatal("the home was written through the swapped workspace")
			}
		}

		// $TMPDIR named inside a writable root, missing: a command makes
		// it a link to the home.
		os.RemoveAll(ws)
		os.Remove(ws)
		if err := os.MkdirAll(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv("TMPDIR", outer+"/tmpdir")
		plan, err = compile()
		if err != nil {
			t.Fatal(err)
		}
		sandboxtest.Run(t, plan, "ln -s "+e.home+" "+outer+"/tmpdir", sandboxtest.Options{Dir: ws, Isolate: isolate})
		plan, err = compile()
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(plan.WritableRoots, e.home) {
			t.Fatalf("$TMPDIR made a link to the home made the home writable: %v", plan.WritableRoots)
		}
	})
}

// TestApplyTmpdirThroughLinkTarget: $TMPDIR is a link of the user's own
// (in the home) to a folder under a writable root that does not exist
// (yet); a command makes that folder a link to a directory outside the
// roots. The next plan must not make that directory writable: the link
// the command made lies where commands write, even if it is only met by
// following the user's.
func TestApplyTmpdirThroughLinkTarget(t *testing.T) {
	layers(t, func(t *testing.T, isolate bool) {
		e := newEnv(t)
		outer, target := e.root+"/outer", e.root+"/target"
		for _, d := range []string{outer, target} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink(outer+"/x", e.home+"/tmp"); err != nil {
			t.Fatal(err)
		}
		t.Setenv("TMPDIR", e.home+"/tmp")
		compile := func() sandbox.Plan { return compileWithRoot(t, e.ws, outer) }
		sandboxtest.Run(t, compile(), "ln -s "+target+" "+outer+"/x", sandboxtest.Options{Dir: e.ws, Isolate: isolate})
		if _, err := os.Lstat(outer + "/x"); err != nil {
			t.Fatalf("the command could not make the link: %v", err)
		}
		plan := compile()
		if slices.Contains(plan.WritableRoots, target) {
			t.Fatalf("a link made inside a writable root, met through $TMPDIR's own link, made %s writable: %v", target, plan.WritableRoots)
		}
		sandboxtest.Run(t, plan, "echo pwned > "+target+"/pwned.txt", sandboxtest.Options{Dir: e.ws, Isolate: isolate})
		if _, err := os.Stat(target + "/pwned.txt"); err == nil {
			t.Fatal("the command wrote outside the roots")
		}
	})
}

// TestCompileRootDotDotAfterLink: a configured root with ".." after a
// component that a command can make a link ($TMPDIR = R/tq/.., tq missing
// at first): ".." applies where the link leads, so the link the command
// makes in R must refuse the root (red team 8); and a refused root never
// takes a good one with it, whatever the order they are judged in.
func TestCompileRootDotDotAfterLink(t *testing.T) {
	e := newEnv(t)
	outer, target := e.root+"/outer", e.root+"/target"
	for _, d := range []string{outer, target + "/sub"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("TMPDIR", outer+"/tq/..")
	compile := func() sandbox.Plan { return compileWithRoot(t, e.ws, outer) }
	compile()
	if err := os.Symlink(target+"/sub", outer+"/tq"); err != nil {
		t.Fatal(err)
	}
	plan := compile()
	if slices.Contains(plan.WritableRoots, target) {
		t.Fatalf("$TMPDIR with .. after a link a command made: %s became writable: %v", target, plan.WritableRoots)
	}
	if !slices.Contains(plan.WritableRoots, outer) {
		t.Fatalf("the refused $TMPDIR took the good root %s with it: %v", outer, plan.WritableRoots)
	}
}

// compileWithRoot compiles the default policy for ws with root as its one
// extra writable root, /tmp excluded.
func compileWithRoot(t *testing.T, ws, root string) sandbox.Plan {
	t.Helper()
	p := policy.DefaultSandbox()
	p.ExcludeSlashTmp = true
	p.WritableRoots = []string{root}
	plan, err := sandbox.Compile(p, ws)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// swapLoop exchanges a and b (a folder and a link) as fast as it can until
// the test ends, as a command in a session running beside the planning
// can (red team 9's renameat2 loop).
func swapLoop(t *testing.T, a, b string) {
	t.Helper()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
}

// TestCompileRootSwapRace: $TMPDIR lies in a writable root and a command
// swaps it, in a loop, with a link to a folder outside every root (the
// home). A root resolved by one walk and judged by another became the
// home whenever the first saw the link and the second the folder (red
// team 9: ~/.bashrc and /etc written within three tries). The plan never
// makes the link's target writable; the workspace swapped the same way
// fails the call instead.
func TestCompileRootSwapRace(t *testing.T) {
	e := newEnv(t)
	outer, home := e.root+"/outer", e.root+"/home"
	for _, d := range []string{outer + "/tmpd", home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(home, outer+"/L"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", outer+"/tmpd")
	swapLoop(t, outer+"/tmpd", outer+"/L")
	p := policy.DefaultSandbox()
	p.ExcludeSlashTmp = true
	p.WritableRoots = []string{outer}
	refused := 0
	for i := 0; i < 1500; i++ {
		plan, err := sandbox.Compile(p, e.ws)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(plan.WritableRoots, func(r string) bool { return r == home }) {
			t.Fatalf("try %d: the link's target %s became a writable root: %v", i, home, plan.WritableRoots)
		}
		if !slices.Contains(plan.WritableRoots, outer+"/tmpd") {
			refused++
		}
	}
	// The loop did swap: some plans saw the link and refused $TMPDIR.
	if refused == 0 {
		t.Fatal("no plan saw the link: the swap never happened, the test proves nothing")
	}
}

// TestCompileWorkspaceSwapRace is the same for the workspace itself: it
// is resolved once by the orchestrator, and a plan that followed a link
// put in its place by a command would make the link's target writable.
func TestCompileWorkspaceSwapRace(t *testing.T) {
	e := newEnv(t)
	outer, home := e.root+"/outer", e.root+"/home"
	ws := outer + "/ws"
	for _, d := range []string{ws, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(home, outer+"/L"); err != nil {
		t.Fatal(err)
	}
	swapLoop(t, ws, outer+"/L")
	p := policy.DefaultSandbox()
	p.ExcludeSlashTmp = true
	p.ExcludeTmpdirEnvVar = true
	p.WritableRoots = []string{outer}
	failed := 0
	for i := 0; i < 1500; i++ {
		plan, err := sandbox.Compile(p, ws)
		if err != nil {
			failed++
			continue
		}
		if slices.Contains(plan.WritableRoots, home) {
			t.Fatalf("try %d: the link's target %s became writable as the workspace: %v", i, home, plan.WritableRoots)
		}
	}
	if failed == 0 {
		t.Fatal("no plan saw the link: the swap never happened, the test proves nothing")
	}
}

// TestCompileSocketFolderNotThroughLink: the tmux folder made ahead under
// $TMUX_TMPDIR is made there, never where a link on the way (one a
// command may have put in /tmp) leads (red team 10).
func TestCompileSocketFolderNotThroughLink(t *testing.T) {
	e := newEnv(t)
	elsewhere := e.root + "/elsewhere"
	if err := os.Mkdir(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, e.root+"/tmuxdir"); err != nil {
		t.Fatal(err)
	}
	for _, tmuxTmp := range []string{e.root + "/tmuxdir", e.root + "/tmuxdir/sub/.."} {
		t.Setenv("TMUX_TMPDIR", tmuxTmp)
		if _, err := sandbox.Compile(policy.DefaultSandbox(), e.ws); err != nil {
			t.Fatal(err)
		}
		if names, _ := os.ReadDir(elsewhere); len(names) != 0 {
			t.Fatalf("TMUX_TMPDIR=%s: a folder was made where a link leads: %v", tmuxTmp, names)
		}
	}
	// A real folder gets it.
	real := e.root + "/tmuxreal"
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMUX_TMPDIR", real)
	if _, err := sandbox.Compile(policy.DefaultSandbox(), e.ws); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(fmt.Sprintf("%s/tmux-%d", real, os.Getuid()))
	if err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
		t.Fatalf("the tmux folder under a real $TMUX_TMPDIR: %v %v", st, err)
	}
}

// TestApplyDenyReadAccountHome: with HOME elsewhere (a CI step's scratch
// folder) or unset, a file the policy makes unreadable under "~" cannot
// be read from inside in the account's own home either (it was, before:
// "~" was $HOME alone, and with HOME unset the entry was skipped).
func TestApplyDenyReadAccountHome(t *testing.T) {
	sandboxtest.Require(t)
	u, err := user.LookupId(strconv.Itoa(os.Getuid()))
	if err != nil || u.HomeDir == "" {
		t.Skipf("the password database gives this user no home: %v", err)
	}
	name := fmt.Sprintf(".unified-exec-deny-test-%d", os.Getpid())
	secret := filepath.Join(u.HomeDir, name)
	if err := os.WriteFile(secret, []byte("ACCOUNT SECRET\n"), 0o600); err != nil {
		t.Skipf("cannot write in the account's home %s: %v", u.HomeDir, err)
	}
	defer os.Remove(secret)
	layers(t, func(t *testing.T, isolate bool) {
		e := newEnv(t)
		deny := func(p *policy.Sandbox) { p.DenyRead = append(p.DenyRead, "~/"+name) }
		cmd := "cat " + secret
		mustFail(t, e.run(t, e.plan(t, deny), isolate, cmd), cmd+" (HOME elsewhere)")
		t.Setenv("HOME", "")
		mustFail(t, e.run(t, e.plan(t, deny), isolate, cmd), cmd+" (HOME unset)")
		mustPass(t, e.run(t, e.plan(t, nil), isolate, cmd), cmd+" (not denied)", "ACCOUNT SECRET")
	})
}

// TestApplyGlobalGitConfigInsideRoot: with HOME inside the workspace (a
// CI step's scratch home), a command can write neither ~/.gitconfig nor
// ~/.config/git/config, absent before it ran, which git run outside the
// sandbox later reads (red team 30: core.sshCommand, run by a git fetch a
// rule let out of the sandbox).
func TestApplyGlobalGitConfigInsideRoot(t *testing.T) {
	sandboxtest.Require(t)
	sandboxtest.RequireNamespaces(t)
	e := newEnv(t)
	home := e.ws + "/scratch-home"
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("GIT_CONFIG_GLOBAL", "")
	plan := e.plan(t, nil)
	env := "HOME=" + home
	for _, cmd := range []string{
		"echo '[core] sshCommand = sh -c evil' > $HOME/.gitconfig",
		"git config --global core.sshCommand 'sh -c evil'",
		"mkdir -p $HOME/.config/git && echo '[core] sshCommand = x' > $HOME/.config/git/config",
	} {
		r := sandboxtest.Run(t, plan, cmd, sandboxtest.Options{Dir: e.ws, Env: []string{env}, Isolate: true})
		mustFail(t, r, cmd)
	}
	if b, err := os.ReadFile(home + "/.gitconfig"); err != nil || len(b) != 0 {
		t.Errorf("~/.gitconfig: %q %v, want it empty", b, err)
	}
	if _, err := os.Stat(home + "/.config/git/config"); err == nil {
		t.Error("~/.config/git/config was made")
	}
	mustPass(t, sandboxtest.Run(t, plan, "echo ok > $HOME/notes && cat $HOME/notes", sandboxtest.Options{Dir: e.ws, Env: []string{env}, Isolate: true}), "the rest of the home", "ok")
}

// TestApplyDenyReadMovedStore: a store the environment moves is
// unreadable from inside where it is moved to (red team 30: a CI step's
// DOCKER_CONFIG in a scratch folder, its registry credentials readable).
func TestApplyDenyReadMovedStore(t *testing.T) {
	sandboxtest.Require(t)
	layers(t, func(t *testing.T, isolate bool) {
		e := newEnv(t)
		dock := e.root + "/scratch/docker"
		if err := os.MkdirAll(dock, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dock+"/config.json", []byte(`{"auths":{"r":{"auth":"SECRET"}}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("DOCKER_CONFIG", dock)
		cmd := "cat " + dock + "/config.json"
		mustFail(t, e.run(t, e.plan(t, nil), isolate, cmd), cmd)
		mustPass(t, e.run(t, e.plan(t, func(p *policy.Sandbox) {
			p.DenyRead = slices.DeleteFunc(p.DenyRead, func(d string) bool { return d == "~/.docker" })
		}), isolate, cmd), cmd+" (~/.docker not denied)", "SECRET")
	})
}

// TestApplyDenyReadTellsNothingByStat: Landlock governs opening a file,
// not stat, readlink or a lookup, so with the mount layer an unreadable
// path outside the writable roots is covered as one inside is: a command
// learnt the size of each key in ~/.ssh, whether a name was there, and
// where a link there led (red team 45). Without a mount namespace
// (carving) it still can: README says so.
func TestApplyDenyReadTellsNothingByStat(t *testing.T) {
	sandboxtest.Require(t)
	sandboxtest.RequireNamespaces(t)
	e := newEnv(t)
	if err := os.Symlink(e.home+"/notes.txt", e.home+"/.ssh/cfg"); err != nil {
		t.Fatal(err)
	}
	plan := e.plan(t, nil)
	probe := func(name string) string {
		cmd := fmt.Sprintf(`p=%s/.ssh/%s; stat -c '%%s %%F %%i' "$p" 2>&1; test -e "$p" && echo there; readlink "$p"; ls -a %s/.ssh 2>&1; echo end`, e.home, name, e.home)
		r := e.run(t, plan, true, cmd)
		if !strings.Contains(r.Output, "end") {
			t.Fatalf("%s: %q", cmd, r.Output)
		}
		return strings.ReplaceAll(r.Output, name, "NAME")
	}
	key, absent, link := probe("id_rsa"), probe("absent"), probe("cfg")
	if key != absent || link != absent {
		t.Errorf("a key, an absent name and a link in ~/.ssh are told apart from inside:\n%s\n--\n%s\n--\n%s", key, absent, link)
	}
	for _, leak := range []string{"notes.txt", "11 regular"} {
		if strings.Contains(key+link, leak) {
			t.Errorf("%q is told from inside:\n%s%s", leak, key, link)
		}
	}
	// What the policy leaves readable stays so.
	mustPass(t, e.run(t, plan, true, "cat "+e.home+"/notes.txt"), "cat ~/notes.txt", "notes")
}

// TestApplyDenyReadThroughSecondMount: a file system mounted twice holds
// each file at two paths, and Landlock's rules are paths: with the home
// bound elsewhere, the key was read through the other mount (red team
// 46: /home bound at /mnt/hb). Each unreadable path is denied, and
// covered, at every path the mounts give it. Binding a folder takes root.
func TestApplyDenyReadThroughSecondMount(t *testing.T) {
	sandboxtest.Require(t)
	if os.Geteuid() != 0 {
		t.Skip("binding a folder elsewhere takes root: the root run of the suite tries this")
	}
	e := newEnv(t)
	bound := e.root + "/hb"
	mkdir(t, bound)
	if err := unix.Mount(e.home, bound, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind %s at %s: %v", e.home, bound, err)
	}
	t.Cleanup(func() { unix.Unmount(bound, unix.MNT_DETACH) })
	// And a key bound on its own, as a container's volume is (red team
	// 47: a mount whose root lies inside ~/.ssh was missed).
	key := e.root + "/key"
	if err := os.WriteFile(key, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(e.home+"/.ssh/id_rsa", key, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind the key at %s: %v", key, err)
	}
	t.Cleanup(func() { unix.Unmount(key, unix.MNT_DETACH) })
	plan := e.plan(t, nil)
	if !slices.Contains(plan.DenyRead, bound+"/.ssh") {
		t.Errorf("the other path to ~/.ssh is not denied: %q", plan.DenyRead)
	}
	layers(t, func(t *testing.T, isolate bool) {
		for _, cmd := range []string{"cat " + bound + "/.ssh/id_rsa", "ls " + bound + "/.ssh", "cat " + key} {
			r := e.run(t, plan, isolate, cmd)
			mustFail(t, r, cmd)
			if strings.Contains(r.Output, "PRIVATE KEY") || strings.Contains(r.Output, "authorized_keys") {
				t.Errorf("%s: %q", cmd, r.Output)
			}
		}
		// The rest of the other mount reads as the home does.
		mustPass(t, e.run(t, plan, isolate, "cat "+bound+"/notes.txt"), "cat notes.txt through the bind", "notes")
	})
}

func mkdir(t *testing.T, d string) {
	t.Helper()
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestApplyForeignMountInRootReadOnly: a writable root is attached again
// with the mounts below it, so a bind of what lies outside every
// writable root into one (/, the home, /etc into /tmp) made all of it
// writable (red team 47), and a proc mounted there let a command write
// the kernel's settings (red team 48). Such a mount is read-only, a bind
// of the root's own folder too; a local file system of its own (a tmpfs)
// stays writable. Mounting takes root.
func TestApplyForeignMountInRootReadOnly(t *testing.T) {
	sandboxtest.Require(t)
	sandboxtest.RequireNamespaces(t)
	if os.Geteuid() != 0 {
		t.Skip("binding a folder takes root: the root run of the suite tries this")
	}
	e := newEnv(t)
	outside := e.root + "/outside"
	mkdir(t, outside)
	if err := os.WriteFile(outside+"/f", []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mounts := []struct{ src, dst, fstype string }{
		{outside, e.ws + "/ext", ""},
		{"tmpfs", e.ws + "/scratch", "tmpfs"},
		{e.ws + "/src", e.ws + "/src2", ""},
		// A chroot's /proc: its own device, the kernel's controls
		// (red team 48 wrote core_pattern through one).
		{"proc", e.ws + "/procm", "proc"},
	}
	for _, m := range mounts {
		mkdir(t, m.dst)
		flags := uintptr(unix.MS_BIND)
		if m.fstype != "" {
			flags = 0
		}
		if err := unix.Mount(m.src, m.dst, m.fstype, flags, ""); err != nil {
			t.Fatalf("mount %s at %s: %v", m.src, m.dst, err)
		}
		dst := m.dst
		t.Cleanup(func() { unix.Unmount(dst, unix.MNT_DETACH) })
	}
	plan := e.plan(t, nil)
	cmd := "echo pwned > ext/f"
	mustFail(t, e.run(t, plan, true, cmd), cmd)
	if got := readFile(t, outside+"/f"); got != "outside\n" {
		t.Errorf("written through the bind: %q", got)
	}
	// The value written back as it is: harmless if the write got through.
	for _, cmd := range []string{"echo pwned > src2/y", "v=$(cat procm/sys/kernel/core_pattern) && echo \"$v\" > procm/sys/kernel/core_pattern"} {
		mustFail(t, e.run(t, plan, true, cmd), cmd)
	}
	for _, c := range []string{"echo ok > scratch/x && cat scratch/x", "echo ok > src/y && cat src2/y", "cat ext/f"} {
		want := "ok"
		if c == "cat ext/f" {
			want = "outside"
		}
		mustPass(t, e.run(t, plan, true, c), c, want)
	}
}
