//go:build linux

package integration

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// requireSandbox fails (under UNIFIED_EXEC_REQUIRE_SANDBOX=1) or skips when
// the host cannot enforce the sandbox.
func requireSandbox(t testing.TB) {
	t.Helper()
	out, err := exec.Command(binary, "sandbox", "status").CombinedOutput()
	if err == nil && strings.Contains(string(out), "ENFORCEMENT: full") {
		return
	}
	if os.Getenv("UNIFIED_EXEC_REQUIRE_SANDBOX") == "1" {
		t.Fatalf("the sandbox is required but not fully enforced here:\n%s", out)
	}
	t.Skipf("sandbox not fully enforced on this host:\n%s", out)
}

// python is a real interpreter (not a pyenv shim that needs $HOME).
func python(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "/usr/local/bin/python3"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Fatal("python3 is needed for the escape tests")
	}
	return strings.TrimSpace(string(p))
}

// Every escape attempt runs against both ways a session starts: forked
// from a restricted thread inside the program's PID namespace (the
// default), and through the re-executed helper, PID 1 of a namespace of
// its own (UNIFIED_EXEC_SPAWN=helper). spawnEnv is the current one's.
var spawnEnv []string

func TestEscape(t *testing.T) {
	modes := []struct {
		name string
		env  []string
		// ownNamespace: the shell's PID 1 is the helper, in a namespace
		// of its own; forked from a thread, it is the program. Either way
		// the shell's parent is PID 1.
		ownNamespace bool
	}{
		{"thread", nil, false},
		{"helper", []string{"UNIFIED_EXEC_SPAWN=helper"}, true},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			spawnEnv = m.env
			defer func() { spawnEnv = nil }()
			e := newSandboxEnv(t, "")
			if _, out := e.run(t, "echo $PPID $(head -c 19 /proc/1/cmdline)"); strings.Fields(out)[0] != "1" || strings.Contains(out, "unified-exec-helper") != m.ownNamespace {
				t.Fatalf("the session did not start the %s way: its parent and PID 1 are %s", m.name, out)
			}
			t.Run("WorkspaceWrite", escapeWorkspaceWrite)
			t.Run("ReadOnly", escapeReadOnly)
			t.Run("Network", escapeNetwork)
			t.Run("Processes", escapeProcesses)
			t.Run("Terminals", escapeTerminals)
			t.Run("OtherSessionsTerminals", escapeOtherSessionsTerminals)
			t.Run("Daemons", escapeDaemons)
			t.Run("Devices", escapeDevices)
			t.Run("TerminalInjection", escapeTerminalInjection)
			t.Run("HostTerminals", escapeHostTerminals)
			t.Run("RootPrivileges", escapeRootPrivileges)
			t.Run("HostSockets", escapeHostSockets)
			t.Run("LateTmux", escapeLateTmux)
			t.Run("Keyrings", escapeKeyrings)
			t.Run("HostSharedMemory", escapeHostSharedMemory)
			t.Run("Identity", escapeIdentity)
			t.Run("ExitStatus", escapeExitStatus)
			t.Run("NestedUserNamespace", escapeNestedUserNamespace)
			t.Run("InheritedFDs", escapeInheritedFDs)
			t.Run("ReadOnlyFiles", escapeReadOnlyFiles)
			t.Run("Workdir", escapeWorkdir)
			t.Run("Metadata", escapeMetadata)
			t.Run("SetID", escapeSetID)
			t.Run("CredentialStores", escapeCredentialStores)
			t.Run("SharedMemorySize", escapeSharedMemorySize)
		})
	}
}

// sandboxEnv is a server whose HOME is a fake home with secrets, whose
// environment holds a canary secret, and whose workspace is a git repo.
type sandboxEnv struct {
	*server
	home, ws string
	py       string
}

func newSandboxEnv(t *testing.T, policyText string) *sandboxEnv {
	t.Helper()
	return newSandboxEnvWith(t, sandboxOpts{policy: policyText})
}

// sandboxOpts are the less common settings of a sandboxEnv.
type sandboxOpts struct {
	// policy is the policy file's text ("" = the embedded default);
	// %WS% stands for the workspace.
	policy string
	// policyAt places the policy file inside the workspace (a path
	// relative to it); "" puts it beside the workspace, outside.
	policyAt string
	// env is added to the server's environment.
	env []string
	// extraFiles are inherited by the server from fd 3 on, as a careless
	// caller's open descriptors would be.
	extraFiles []*os.File
	// setup runs after the home and the workspace (a fresh repository)
	// are made, before the server starts.
	setup func(t *testing.T, home, ws string)
}

func newSandboxEnvWith(t *testing.T, o sandboxOpts) *sandboxEnv {
	t.Helper()
	requireSandbox(t)
	policyText := o.policy
	// Not under /tmp: /tmp is a writable root, and the fake home must be
	// an ordinary, unwritable place.
	root, err := os.MkdirTemp("/var/tmp", "ue-escape-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	root, _ = filepath.EvalSymlinks(root)
	home := filepath.Join(root, "home")
	ws := filepath.Join(root, "ws")
	for _, d := range []string{home + "/.ssh", home + "/.aws", ws + "/a", ws + "/b", ws + "/private"} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(home+"/.ssh/id_rsa", []byte("FAKE-PRIVATE-KEY"), 0o600)
	os.WriteFile(home+"/.aws/credentials", []byte("FAKE-AWS-SECRET"), 0o600)
	os.WriteFile(home+"/notes.txt", []byte("home file"), 0o644)
	os.WriteFile(ws+"/a/file.txt", []byte("data"), 0o644)
	os.WriteFile(ws+"/private/token.txt", []byte("FAKE-WORKSPACE-SECRET"), 0o600)
	policyText = strings.ReplaceAll(policyText, "%WS%", ws)
	git := exec.Command("git", "init", "-q", ws)
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	os.Symlink("/etc", ws+"/etc-link")
	if o.setup != nil {
		o.setup(t, home, ws)
	}
	args := []string{}
	if policyText != "" {
		pf := filepath.Join(root, "policy.toml")
		if o.policyAt != "" {
			pf = filepath.Join(ws, o.policyAt)
			os.MkdirAll(filepath.Dir(pf), 0o755)
		}
		os.WriteFile(pf, []byte(policyText), 0o644)
		args = append(args, "--policy", pf)
	}
	env := append([]string{"HOME=" + home, "UE_CANARY_TOKEN=canary-4242", "GIT_CONFIG_NOSYSTEM=1"}, spawnEnv...)
	env = append(env, o.env...)
	s := startServer(t, serverOpts{args: args, workspace: ws, env: env, extraFiles: o.extraFiles})
	return &sandboxEnv{server: s, home: home, ws: ws, py: python(t)}
}

// run executes cmd and returns its exit code and output.
func (e *sandboxEnv) run(t *testing.T, cmd string) (int, string) {
	t.Helper()
	text, isErr, res := e.call("exec_command", map[string]any{"cmd": cmd, "login": false, "yield_time_ms": 20000})
	if isErr {
		t.Fatalf("exec_command %q: %s", cmd, text)
	}
	st := structured(t, res)
	code, ok := st["exit_code"].(float64)
	if !ok {
		t.Fatalf("%q did not finish: %s", cmd, text)
	}
	return int(code), output(text)
}

func escapeWorkspaceWrite(t *testing.T) {
	e := newSandboxEnv(t, "[sandbox]\ndeny_read = [\"~/.ssh\", \"~/.aws\", \"%WS%/private\"]\n")
	refused := []struct{ name, cmd string }{
		{"write /etc", "echo x > /etc/ue-escape"},
		{"write /usr", "touch /usr/ue-escape"},
		{"write $HOME", "touch $HOME/ue-escape"},
		{"symlink to /etc", "echo x > etc-link/ue-escape"},
		{"nested shells", "bash -c 'bash -c \"touch /etc/ue-escape\"'"},
		{"git hook", "mkdir -p .git/hooks && echo 'echo pwned' > .git/hooks/pre-commit"},
		{"git config", "echo '[core]' >> .git/config"},
		{"remove .git's hooks", "rm -rf .git/hooks"},
		{"remove .git's config", "rm -f .git/config"},
		{"rename .git", "mv .git git-moved"},
		{"read ssh key", "cat $HOME/.ssh/id_rsa"},
		{"read aws", "cat $HOME/.aws/credentials"},
		{"list ssh dir", "ls $HOME/.ssh"},
		{"read secret inside the workspace", "cat private/token.txt"},
	}
	for _, c := range refused {
		t.Run("refused/"+c.name, func(t *testing.T) {
			code, out := e.run(t, c.cmd)
			if code == 0 || strings.Contains(out, "FAKE-") {
				t.Fatalf("%q succeeded (exit %d): %s", c.cmd, code, out)
			}
		})
	}
	for _, p := range []string{"/etc/ue-escape", "/usr/ue-escape", e.home + "/ue-escape", e.ws + "/.git/hooks/pre-commit"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was created", p)
			os.Remove(p)
		}
	}
	if _, err := os.Stat(e.ws + "/.git/HEAD"); err != nil {
		t.Errorf(".git damaged: %v", err)
	}
	allowed := []struct{ name, cmd, want string }{
		{"workspace write", "echo ok > new.txt && cat new.txt", "ok"},
		{"rename across folders", "mv a/file.txt b/moved.txt && cat b/moved.txt", "data"},
		{"hard link across folders", "echo l > a/l.txt && ln a/l.txt b/l2.txt && cat b/l2.txt", "l"},
		{"tmp", "f=$(mktemp /tmp/ue.XXXX) && echo t > $f && cat $f && rm $f", "t"},
		{"dev shm", "echo s > /dev/shm/ue-test-$$ && cat /dev/shm/ue-test-$$ && rm /dev/shm/ue-test-$$", "s"},
		{"dev null", "echo x > /dev/null && echo fine", "fine"},
		{"git status", "git status --short && echo git-ok", "git-ok"},
		{"read etc", "cat /etc/hostname >/dev/null && echo read-ok", "read-ok"},
		{"read home file", "cat $HOME/notes.txt", "home file"},
		{"no_new_privs and seccomp", "grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status | tr -d '\\t '", "NoNewPrivs:1\nSeccomp:2"},
	}
	for _, c := range allowed {
		t.Run("allowed/"+c.name, func(t *testing.T) {
			code, out := e.run(t, c.cmd)
			if code != 0 || !strings.Contains(out, c.want) {
				t.Fatalf("%q: exit %d, output %q (want %q)", c.cmd, code, out, c.want)
			}
		})
	}
}

func escapeReadOnly(t *testing.T) {
	e := newSandboxEnv(t, "[sandbox]\nmode = \"read-only\"\n")
	for _, cmd := range []string{"touch new.txt", "echo x > a/file.txt", "mkdir d", "rm a/file.txt", "touch /tmp/ue-ro-escape"} {
		if code, out := e.run(t, cmd); code == 0 {
			t.Errorf("%q succeeded in read-only mode: %s", cmd, out)
		}
	}
	if code, out := e.run(t, "cat a/file.txt"); code != 0 || out != "data" {
		t.Fatalf("read in read-only mode: %d %q", code, out)
	}
}

func escapeNetwork(t *testing.T) {
	e := newSandboxEnv(t, "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	udp, _ := net.ListenPacket("udp", "127.0.0.1:0")
	defer udp.Close()
	uport := udp.LocalAddr().(*net.UDPAddr).Port
	n := 0
	py := func(code string) string {
		n++
		f := fmt.Sprintf("script%d.py", n)
		os.WriteFile(filepath.Join(e.ws, f), []byte(code), 0o644)
		return e.py + " " + f
	}
	eperm := `
import errno, socket, sys
try:
    %s
except OSError as e:
    print("errno", e.errno); sys.exit(0 if e.errno == errno.EPERM else 3)
print("CONNECTED"); sys.exit(4)`
	refused := map[string]string{
		"tcp loopback": fmt.Sprintf("socket.create_connection(('127.0.0.1', %d), timeout=3)", port),
		"udp loopback": fmt.Sprintf("socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', %d))", uport),
		"inet6":        "socket.socket(socket.AF_INET6, socket.SOCK_STREAM)",
		"netlink":      "socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)",
		"raw":          "socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)",
		"packet":       "socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)",
	}
	for name, stmt := range refused {
		t.Run("refused/"+name, func(t *testing.T) {
			code, out := e.run(t, py(fmt.Sprintf(eperm, stmt)))
			if code != 0 || !strings.Contains(out, "errno 1") {
				t.Fatalf("%s: exit %d: %s", name, code, out)
			}
		})
	}
	allowed := map[string]string{
		"socketpair":   "import socket; a, b = socket.socketpair(); a.send(b'hi'); print(b.recv(2).decode())",
		"unix socket":  "import socket, os; s = socket.socket(socket.AF_UNIX); s.bind('u.sock'); s.listen(); c = socket.socket(socket.AF_UNIX); c.connect('u.sock'); c.send(b'hi'); print(s.accept()[0].recv(2).decode())",
		"asyncio":      "import asyncio\nasync def f():\n    return 'hi'\nprint(asyncio.run(f()))",
		"unix sendmsg": "import socket; a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); a.sendmsg([b'hi']); print(b.recv(2).decode())",
	}
	for name, code := range allowed {
		t.Run("allowed/"+name, func(t *testing.T) {
			c, out := e.run(t, "rm -f u.sock; "+py(code))
			if c != 0 || !strings.Contains(out, "hi") {
				t.Fatalf("%s: exit %d: %s", name, c, out)
			}
		})
	}
}

func escapeProcesses(t *testing.T) {
	e := newSandboxEnv(t, "")
	pid := e.cmd.Process.Pid
	cases := map[string]string{
		"signal the server":  fmt.Sprintf("kill -0 %d", pid),
		"server environ":     fmt.Sprintf("cat /proc/%d/environ", pid),
		"any canary environ": "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep canary-4242",
		"signal PID 1":       "kill -0 1",
		"PID 1 environ":      "tr '\\0' '\\n' < /proc/1/environ | grep canary-4242",
		"parent environ":     "tr '\\0' '\\n' < /proc/$PPID/environ | grep canary-4242",
		"ptrace":             e.py + ` -c "import ctypes, sys; libc = ctypes.CDLL(None, use_errno=True); r = libc.ptrace(0, 0, 0, 0); sys.exit(0 if r == 0 else 1)"`,
		"strace":             "strace -f true",
		"io_uring":           e.py + ` -c "import ctypes, sys; libc = ctypes.CDLL(None, use_errno=True); p = ctypes.create_string_buffer(120); r = libc.syscall(425, 8, p); sys.exit(0 if r >= 0 else 1)"`,
		"process_vm_readv":   e.py + ` -c "import ctypes, sys, os; libc = ctypes.CDLL(None, use_errno=True); r = libc.syscall(310, os.getppid(), 0, 0, 0, 0, 0); sys.exit(0 if ctypes.get_errno() != 1 else 1)"`,
		// The server (the parent on the thread path) and PID 1 must not
		// be starved (SCHED_IDLE, nice 19) or limited to death
		// (RLIMIT_CPU) from inside.
		"renice the parent":    "renice -n 19 -p $PPID",
		"renice PID 1":         "renice -n 19 -p 1",
		"renice the user":      "renice -n 19 -u $(id -u)",
		"idle the parent":      "chrt -i -p 0 $PPID",
		"idle PID 1":           "chrt -i -p 0 1",
		"ionice the parent":    "ionice -c 3 -p $PPID",
		"ionice the user":      "ionice -c 3 -u $(id -u)",
		"prlimit the parent":   "prlimit --pid $PPID --cpu=1:1",
		"prlimit PID 1":        "prlimit --pid 1 --nofile=3:3",
		"parent's fds":         "readlink /proc/$PPID/fd/0",
		"PID 1's fds":          "readlink /proc/1/fd/0",
		"oom the parent":       "echo 1000 > /proc/$PPID/oom_score_adj",
		"schedattr the parent": e.py + ` -c "import os; os.sched_setscheduler(os.getppid(), os.SCHED_IDLE, os.sched_param(0))"`,
		"pin the parent":       "taskset -p 1 $PPID",
		"pin PID 1":            "taskset -p 1 1",
	}
	if _, out := e.run(t, "head -c 19 /proc/1/cmdline"); strings.Contains(out, "unified-exec-helper") {
		// With the helper, PID 1 is the session's own init, which
		// forwards signals to the session, and whose descriptors are the
		// session's own (/dev/null): the program is out of sight.
		delete(cases, "signal PID 1")
		delete(cases, "parent's fds")
		delete(cases, "PID 1's fds")
	}
	for name, cmd := range cases {
		t.Run(name, func(t *testing.T) {
			code, out := e.run(t, cmd)
			if code == 0 || strings.Contains(out, "canary-4242") {
				t.Fatalf("%s succeeded: exit %d: %s", name, code, out)
			}
		})
	}
	// Another session: it cannot be signalled (another PID namespace with
	// the helper, another Landlock domain on the thread path).
	text := e.exec(map[string]any{"cmd": "echo pid=$$; exec sleep 300", "yield_time_ms": 500})
	other := sessionID(t, text)
	defer e.call("kill_session", map[string]any{"session_id": other})
	var otherPid int
	fmt.Sscanf(output(text), "pid=%d", &otherPid)
	if otherPid == 0 {
		t.Fatalf("no pid from the other session: %s", text)
	}
	if code, out := e.run(t, fmt.Sprintf("kill -TERM %d", otherPid)); code == 0 {
		t.Fatalf("a session signalled another: %s", out)
	}
	if code, out := e.run(t, "echo $UE_CANARY_TOKEN; env | grep -c canary-4242"); code == 0 || strings.Contains(out, "canary-4242") {
		t.Fatalf("the canary reached the command's environment: %s", out)
	}
	if code, out := e.run(t, fmt.Sprintf("renice -n 19 -p %d", otherPid)); code == 0 {
		t.Fatalf("a session reniced another: %s", out)
	}
	// On itself, a command keeps what nice, ulimit and prlimit do.
	self := map[string]struct{ cmd, want string }{
		"nice":             {"nice -n 5 nice", "5"},
		"setpriority self": {e.py + ` -c "import os; os.setpriority(os.PRIO_PROCESS, 0, 3); print(os.getpriority(os.PRIO_PROCESS, 0))"`, "3"},
		"ulimit":           {"ulimit -n 100 && ulimit -n", "100"},
		"prlimit a run":    {"prlimit --nofile=50 sh -c 'ulimit -n'", "50"},
		"read a limit":     {"prlimit --pid $PPID --nofile --noheadings --raw | tr -s ' ' | cut -d' ' -f2 | grep -c .", "1"},
		"idle self":        {e.py + ` -c "import os; os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0)); print(os.sched_getscheduler(0))"`, "5"},
		"ionice a run":     {"ionice -c 3 sh -c 'ionice'", "idle"},
		"taskset a run":    {"taskset 1 sh -c 'taskset -p $$' | grep -o 'mask: 1'", "mask: 1"},
	}
	for name, c := range self {
		t.Run("allowed/"+name, func(t *testing.T) {
			code, out := e.run(t, c.cmd)
			if code != 0 || strings.TrimSpace(out) != c.want {
				t.Fatalf("%s: exit %d: %q, want %q", name, code, out, c.want)
			}
		})
	}
}

func escapeTerminals(t *testing.T) {
	e := newSandboxEnv(t, "")
	cases := []struct{ name, cmd, want string }{
		{"stty", "stty size </dev/tty", "24 80"},
		{"script", "script -qc tty /dev/null", "/dev/pts/"},
		{"openpty", e.py + ` -c "import pty, os; m, s = pty.openpty(); os.write(s, b'via-pty\n'); print(os.read(m, 100).decode().strip())"`, "via-pty"},
		{"tty", "tty", "/dev/pts/"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text, isErr, _ := e.call("exec_command", map[string]any{"cmd": c.cmd, "login": false, "tty": true, "yield_time_ms": 10000})
			if isErr || !strings.Contains(text, "exited with code 0") || !strings.Contains(output(text), c.want) {
				t.Fatalf("%s: %s", c.name, text)
			}
		})
	}
}

// tiocstiAttack pushes a command line into the input of each terminal
// named (TIOCSTI, one byte at a time), also with the ioctl number's upper
// 32 bits set (the kernel ignores them; a filter comparing all 64 would
// not), and reports each attempt.
const tiocstiAttack = `import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
TIOCSTI = 0x5412
for path in sys.argv[1:]:
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
    except OSError as e:
        print(path, "open:", e.strerror)
        continue
    for req in (TIOCSTI, TIOCSTI | 1 << 32):
        for ch in b"echo PWNED\n":
            c = ctypes.c_char(bytes([ch]))
            if libc.ioctl(fd, ctypes.c_ulong(req), ctypes.byref(c)) != 0:
                print(path, hex(req), "refused:", os.strerror(ctypes.get_errno()))
                break
        else:
            print(path, hex(req), "INJECTED")
`

// privilegeAttack makes, as root, the calls that act on the whole machine
// and are refused only for want of a capability, each in a form that
// changes nothing even where it is allowed: the host name set to itself,
// settimeofday with neither time nor zone, reboot with a bad magic number
// and swapoff of a missing file (both checked after the capability). It prints each call's
// errno name, or "allowed".
const privilegeAttack = `import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
name = os.uname().nodename.encode()
calls = {
    "sethostname": lambda: libc.sethostname(name, len(name)),
    "settimeofday": lambda: libc.syscall(%d, None, None),
    "reboot": lambda: libc.syscall(%d, 0, 0, 0, None),
    "swapoff": lambda: libc.swapoff(b"/nonexistent-ue-swap"),
    "mknod": lambda: libc.mknod(b"ue-mem", 0o20600, os.makedev(1, 1)),
}
for what, call in calls.items():
    ctypes.set_errno(0)
    r = call()
    print(what, "allowed" if r == 0 else errno.errorcode.get(ctypes.get_errno(), "?"))
`

// keptCapabilities is the capability mask a sandboxed root command keeps:
// chown, dac_override, fowner, fsetid, kill, setgid, setuid,
// net_bind_service, sys_chroot and audit_write.
const keptCapabilities = "00000000200404fb"

// escapeRootPrivileges: a command run as root keeps what root needs in a
// checkout (owning and writing files of other users), not the machine:
// its clock, its name, reboot, swap, device nodes. The
// capabilities are gone from every set, the bounding set too, so no exec
// brings them back.
func escapeRootPrivileges(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: commands have no capabilities to drop")
	}
	e := newSandboxEnv(t, "")
	attack := fmt.Sprintf(privilegeAttack, unix.SYS_SETTIMEOFDAY, unix.SYS_REBOOT)
	if err := os.WriteFile(filepath.Join(e.ws, "privileges.py"), []byte(attack), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := e.run(t, e.py+" privileges.py")
	if code != 0 {
		t.Fatalf("the attack did not run: exit %d: %s", code, out)
	}
	for _, what := range []string{"sethostname", "settimeofday", "reboot", "swapoff", "mknod"} {
		if !strings.Contains(out, what+" EPERM") {
			t.Errorf("%s was not refused for want of a capability:\n%s", what, out)
		}
	}
	code, out = e.run(t, "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status")
	if code != 0 {
		t.Fatalf("reading the capability sets: exit %d: %s", code, out)
	}
	for _, set := range []string{"CapPrm", "CapEff", "CapBnd"} {
		if !strings.Contains(out, set+":\t"+keptCapabilities) {
			t.Errorf("%s is not the kept set %s:\n%s", set, keptCapabilities, out)
		}
	}
	for _, set := range []string{"CapInh", "CapAmb"} {
		if !strings.Contains(out, set+":\t0000000000000000") {
			t.Errorf("%s is not empty:\n%s", set, out)
		}
	}
	// What root does in a checkout owned by someone else still works.
	if err := os.MkdirAll(filepath.Join(e.ws, "theirs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(e.ws, "theirs"), 1234, 1234); err != nil {
		t.Fatal(err)
	}
	code, out = e.run(t, "echo x > theirs/mine && chown 4321:4321 theirs/mine && stat -c %u theirs/mine && chmod 600 theirs/mine && cat theirs/mine")
	if code != 0 || !strings.Contains(out, "4321") || !strings.Contains(out, "x") {
		t.Errorf("root could not write, chown and read a file in another user's directory: exit %d: %s", code, out)
	}
}

// connectAttack connects to each Unix socket named and reads its greeting.
const connectAttack = `import socket, sys
for path in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(path)
        print(path, "CONNECTED", s.recv(64).decode())
    except OSError as e:
        print(path, "refused:", e.strerror)
`

// greeter listens on a Unix socket at path and greets whoever connects.
func greeter(t *testing.T, path string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hello-from-the-host"))
			c.Close()
		}
	}()
}

// escapeHostSockets: the sockets of the user's agents and the host's
// services are out of reach, though Unix sockets work (Landlock does not
// govern connecting to one on this kernel): an ssh-agent (SSH_AUTH_SOCK,
// under /tmp, a writable root) would sign with the user's keys, a socket
// inside an unreadable directory (~/.ssh) would serve what the directory
// hides, and a tmux server anywhere (in the home, or in /tmp started
// after unified-exec) would run what it is sent outside the sandbox. A
// socket a session makes — in the workspace, or in /tmp — still connects
// from another session, so the attack itself works.
func escapeHostSockets(t *testing.T) {
	agentDir, err := os.MkdirTemp("/tmp", "ue-agent-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(agentDir) })
	agent := filepath.Join(agentDir, "agent.sock")
	greeter(t, agent)
	// A host daemon's socket in /tmp that nothing names (tmux's
	// /tmp/tmux-UID/default, a user's agent started with -a): it existed
	// before the server started.
	daemon := filepath.Join(agentDir, "daemon", "control.sock")
	os.Mkdir(filepath.Dir(daemon), 0o700)
	greeter(t, daemon)
	// One whose path holds a space (/proc/net/unix does not quote it).
	spaced := filepath.Join(agentDir, "host sp.sock")
	greeter(t, spaced)
	time.Sleep(20 * time.Millisecond) // file times are coarser than the clock
	saved := spawnEnv
	spawnEnv = append(slices.Clone(spawnEnv), "SSH_AUTH_SOCK="+agent)
	e := newSandboxEnv(t, "[sandbox]\ndeny_read = [\"~/.ssh\"]\n")
	spawnEnv = saved
	inSSH := filepath.Join(e.home, ".ssh", "agent.sock")
	greeter(t, inSSH)
	// Host servers started after unified-exec: one in the home (tmux -S
	// ~/.tmux-main), one in /tmp (a writable root).
	inHome := filepath.Join(e.home, ".tmux-main")
	greeter(t, inHome)
	hostLater := filepath.Join(agentDir, "host-later.sock")
	greeter(t, hostLater)
	if err := os.WriteFile(filepath.Join(e.ws, "connect.py"), []byte(connectAttack), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.ws, "serve.py"), []byte(sessionGreeter), 0o644); err != nil {
		t.Fatal(err)
	}
	// Sockets sessions make, as dev servers do: in the workspace and in
	// /tmp, each by a session that goes on running.
	own := filepath.Join(e.ws, "own.sock")
	later := filepath.Join(agentDir, "later.sock")
	for _, p := range []string{own, later} {
		text, isErr, _ := e.call("exec_command", map[string]any{"cmd": e.py + " serve.py " + p, "login": false, "yield_time_ms": 1500})
		if isErr || !strings.Contains(text, "listening") {
			t.Fatalf("a session's server on %s: %s", p, text)
		}
	}
	// A command moves the daemon's folder, so that the path the kernel
	// lists for it leads nowhere: refused (the folder is pinned), and the
	// socket stays covered where it is.
	moved := filepath.Join(agentDir, "daemon-moved")
	if code, out := e.run(t, "mv "+filepath.Dir(daemon)+" "+moved+" && echo MOVED"); code == 0 || strings.Contains(out, "MOVED") {
		t.Errorf("a command moved the folder of a host's socket: %s", out)
	}
	movedSock := filepath.Join(moved, "control.sock")
	code, out := e.run(t, strings.Join([]string{e.py, "connect.py", agent, inSSH, own, daemon, later, inHome, hostLater, strconv.Quote(spaced), movedSock}, " "))
	if code != 0 {
		t.Fatalf("the attack did not run: exit %d: %s", code, out)
	}
	for _, p := range []string{own, later} {
		if !strings.Contains(out, p+" CONNECTED hello-from-a-session") {
			t.Fatalf("%s did not connect: the attack is broken, or a session's own socket is covered:\n%s", p, out)
		}
	}
	for _, p := range []string{agent, inSSH, daemon, inHome, hostLater, spaced} {
		if !strings.Contains(out, p+" refused:") {
			t.Errorf("%s was reachable from the sandbox:\n%s", p, out)
		}
	}
}

// escapeLateTmux: a session starts before the user's tmux server ever ran
// (its socket folder, $TMUX_TMPDIR/tmux-UID, does not exist) and waits
// for its socket; the host starts tmux later. The session reached it and
// ran commands outside the sandbox (red team 9: run-shell, as root). The
// server makes the folder before any session starts, so every session
// covers it from its start.
func escapeLateTmux(t *testing.T) {
	tmuxTmp, err := os.MkdirTemp("/tmp", "ue-tmux-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmuxTmp) })
	saved := spawnEnv
	spawnEnv = append(slices.Clone(spawnEnv), "TMUX_TMPDIR="+tmuxTmp)
	e := newSandboxEnv(t, "")
	spawnEnv = saved
	folder := filepath.Join(tmuxTmp, "tmux-"+strconv.Itoa(os.Getuid()))
	sock := filepath.Join(folder, "default")
	if err := os.WriteFile(filepath.Join(e.ws, "wait_connect.py"), []byte(waitConnect), 0o644); err != nil {
		t.Fatal(err)
	}
	text, isErr, res := e.call("exec_command", map[string]any{"cmd": e.py + " wait_connect.py " + sock, "login": false, "yield_time_ms": 500})
	if isErr {
		t.Fatal(text)
	}
	id, ok := structured(t, res)["session_id"].(float64)
	if !ok {
		t.Fatalf("the waiting session ended at once: %s", text)
	}
	// The host's tmux starts: it makes its folder if missing, and binds.
	os.Mkdir(folder, 0o700)
	greeter(t, sock)
	out := output(text)
	for i := 0; i < 20 && !strings.Contains(out, "refused:") && !strings.Contains(out, "CONNECTED"); i++ {
		w, _, _ := e.call("write_stdin", map[string]any{"session_id": int(id), "chars": "", "yield_time_ms": 5000})
		out += output(w)
	}
	if strings.Contains(out, "CONNECTED") {
		t.Fatalf("a session started before the host's tmux reached its socket:\n%s", out)
	}
	if !strings.Contains(out, "refused:") {
		t.Fatalf("the waiting session never reported: %q", out)
	}
	// A session started now is refused too.
	if _, out := e.run(t, e.py+" wait_connect.py "+sock); !strings.Contains(out, "refused:") {
		t.Errorf("a new session reached the host's tmux:\n%s", out)
	}
}

// waitConnect tries to connect to the Unix socket named by its argument
// for 3 s, and says how it went.
const waitConnect = `import socket, sys, time
p = sys.argv[1]
err = None
for i in range(60):
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect(p)
        print(p, "CONNECTED", s.recv(100).decode(), flush=True)
        sys.exit(0)
    except OSError as e:
        err = e
    time.sleep(0.05)
print(p, "refused:", err, flush=True)
`

// sessionGreeter listens on the Unix socket named by its argument, says
// so, and greets whoever connects (a session's dev server).
const sessionGreeter = `import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(8)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    c.sendall(b"hello-from-a-session")
    c.close()
`

// escapeOtherSessionsTerminals: a session cannot reach another session's
// terminal — to read what the agent types into it, write into its output
// (a forged "exited with code 0"), or change its settings (an interrupt
// character that kills it) — from a session with a terminal or without.
// Each session's terminals are in an instance of its own: another's
// name there is nothing, or its own terminal.
func escapeOtherSessionsTerminals(t *testing.T) {
	e := newSandboxEnv(t, "")
	for name, script := range map[string]string{"pts_attack.py": ptsAttack, "victim.py": ptsVictim} {
		if err := os.WriteFile(filepath.Join(e.ws, name), []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	text, isErr, res := e.call("exec_command", map[string]any{"cmd": e.py + " victim.py", "login": false, "tty": true, "yield_time_ms": 3000})
	if isErr {
		t.Fatal(text)
	}
	victim := int(structured(t, res)["session_id"].(float64))
	stdin := func(chars string) string {
		text, isErr, _ := e.call("write_stdin", map[string]any{"session_id": victim, "chars": chars, "yield_time_ms": 3000})
		if isErr {
			t.Fatal(text)
		}
		return output(text)
	}
	name := regexp.MustCompile(`/dev/pts/\d+`).FindString(output(text))
	if name == "" {
		t.Fatalf("the victim's terminal: %q", text)
	}
	for _, tty := range []bool{false, true} {
		// The attacker reads the victim's terminal for 3 s while the
		// agent types into it.
		text, isErr, res := e.call("exec_command", map[string]any{"cmd": e.py + " pts_attack.py " + name, "login": false, "tty": tty, "yield_time_ms": 500})
		if isErr {
			t.Fatal(text)
		}
		typed := stdin("typed-by-the-agent\n")
		if !strings.Contains(typed, "got typed-by-the-agent") {
			t.Errorf("tty %v: the victim did not get what the agent typed: %q", tty, typed)
		}
		attack := output(text)
		if id, ok := structured(t, res)["session_id"].(float64); ok {
			w, _, _ := e.call("write_stdin", map[string]any{"session_id": int(id), "chars": "", "yield_time_ms": 5000})
			attack += output(w)
		}
		if strings.Contains(attack, "typed-by-the-agent") {
			t.Errorf("tty %v: the attacker read what the agent typed into another session:\n%s", tty, attack)
		}
		if !tty && strings.Count(attack, "refused:") != 3 {
			t.Errorf("a session without a terminal opened a terminal by another's name:\n%s", attack)
		}
	}
	out := stdin("intr?\n")
	if !strings.Contains(out, `intr b'\x03'`) {
		t.Errorf("the victim's settings changed: %q", out)
	}
	lines, _, _ := e.call("read_log", map[string]any{"session_id": victim})
	if strings.Contains(lines, "forged") {
		t.Errorf("the victim's output holds the attacker's text:\n%s", lines)
	}
}

// ptsVictim says which terminal it has, then answers each line typed:
// "got LINE", or its interrupt character for "intr?".
const ptsVictim = `import os, sys, termios
print("tty", os.ttyname(0), flush=True)
for line in sys.stdin:
    line = line.strip()
    if line == "intr?":
        print("intr", termios.tcgetattr(0)[6][termios.VINTR], flush=True)
    else:
        print("got", line, flush=True)
`

// ptsAttack opens the terminal named by its argument: writes into it,
// sets its interrupt character to h, and reads from it for 3 s.
const ptsAttack = `import os, sys, termios, time
victim = sys.argv[1]
for how in ("write", "stty", "read"):
    try:
        fd = os.open(victim, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        if how == "write":
            os.write(fd, b"forged exited with code 0\n")
        elif how == "stty":
            a = termios.tcgetattr(fd)
            a[6][termios.VINTR] = b"h"
            termios.tcsetattr(fd, termios.TCSANOW, a)
        else:
            got = b""
            end = time.time() + 3
            while time.time() < end:
                try:
                    got += os.read(fd, 1024)
                except BlockingIOError:
                    time.sleep(0.01)
            print("read:", got)
        print("opened:", how, flush=True)
    except OSError as e:
        print("refused:", how, e.strerror, flush=True)
`

// escapeDaemons: a process that leaves its session every way it can —
// double fork, setsid, an empty environment (no session marker), a name
// of its own — still ends with its session: when the session's command
// exits, and on kill_session. As root a cgroup holds it; as an ordinary
// user without one, its mount namespace does.
func escapeDaemons(t *testing.T) {
	t.Run("sandboxed", func(t *testing.T) { daemonsEnd(t, "") })
	// Unsandboxed, the session has the host; it still ends whole.
	t.Run("unsandboxed", func(t *testing.T) {
		daemonsEnd(t, "[approval]\nmode = \"never\"\n[sandbox]\nmode = \"danger-full-access\"\n")
	})
}

func daemonsEnd(t *testing.T, policyText string) {
	e := newSandboxEnv(t, policyText)
	if err := os.WriteFile(filepath.Join(e.ws, "daemon.py"), []byte(daemonize), 0o644); err != nil {
		t.Fatal(err)
	}
	alive := func(name string) bool {
		names, _ := os.ReadDir("/proc")
		for _, n := range names {
			b, _ := os.ReadFile("/proc/" + n.Name() + "/cmdline")
			if strings.HasPrefix(string(b), name+"\x00") {
				return true
			}
		}
		return false
	}
	gone := func(name string) bool {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if !alive(name) {
				return true
			}
		}
		return false
	}
	// The command exits at once, its daemon running on.
	name := fmt.Sprintf("ue-daemon-%d", time.Now().UnixNano())
	code, out := e.run(t, e.py+" daemon.py "+name)
	if code != 0 || !strings.Contains(out, "daemon started") {
		t.Fatalf("the daemon did not start: exit %d: %s", code, out)
	}
	if !gone(name) {
		t.Errorf("a daemon outlived its session's command")
	}
	// A session killed while it runs.
	name = fmt.Sprintf("ue-daemon-%d", time.Now().UnixNano())
	text, isErr, res := e.call("exec_command", map[string]any{"cmd": e.py + " daemon.py " + name + " && exec sleep 60", "login": false, "yield_time_ms": 1500})
	if isErr || !strings.Contains(text, "daemon started") {
		t.Fatalf("the daemon did not start: %s", text)
	}
	for deadline := time.Now().Add(5 * time.Second); !alive(name); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the daemon is not running: the test is broken")
		}
	}
	id := int(structured(t, res)["session_id"].(float64))
	if text, isErr, _ := e.call("kill_session", map[string]any{"session_id": id}); isErr {
		t.Fatal(text)
	}
	if !gone(name) {
		t.Errorf("a daemon outlived kill_session")
	}
}

// daemonize leaves its session every way it can and runs sleep under the
// name its argument gives, with an empty environment.
const daemonize = `import os, sys, time
name = sys.argv[1]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        devnull = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.execve("/bin/sleep", [name, "300"], {})
    os._exit(0)
os.wait()
time.sleep(0.2)
print("daemon started", flush=True)
`

// escapeDevices: as root (who may open any device), a command opens no
// device but the plan's (null, zero, full, random, urandom), the
// terminals and /dev/shm: not the host's disks, consoles or kernel log in
// /dev, and no device node elsewhere (a chroot's /dev/sda, a container
// image's), while the allowed ones work.
func escapeDevices(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: device nodes are the kernel's file modes' to guard, and making one needs root")
	}
	e := newSandboxEnv(t, "")
	// A node made outside /dev, in a readable place (the home): the
	// kernel's /dev/zero under another name.
	node := filepath.Join(e.home, "zero-node")
	if err := unix.Mknod(node, unix.S_IFCHR|0o644, int(unix.Mkdev(1, 5))); err != nil {
		t.Fatal(err)
	}
	targets := []string{node}
	for _, d := range []string{"/dev/kmsg", "/dev/tty0", "/dev/vcs", "/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/loop0", "/dev/mem"} {
		if f, err := os.Open(d); err == nil {
			f.Close()
			targets = append(targets, d)
		}
	}
	if len(targets) < 2 {
		t.Fatalf("no device of the host's to try: %v", targets)
	}
	for _, d := range targets {
		code, out := e.run(t, "head -c 1 "+d+" > /dev/null && echo READ")
		if code == 0 || strings.Contains(out, "READ") {
			t.Errorf("%s was read from the sandbox: %s", d, out)
		}
	}
	if code, out := e.run(t, "head -c 4 /dev/zero | od -An -tx1 && echo x > /dev/null && head -c 1 /dev/urandom > /dev/null && echo ALLOWED"); code != 0 || !strings.Contains(out, "ALLOWED") {
		t.Errorf("the plan's devices: exit %d: %s", code, out)
	}
}

// keyringAttack reads the user's keyring, where Kerberos (KEYRING: caches,
// the default on Fedora and RHEL) and keyutils-backed credential stores
// keep secrets, and adds a key of its own; it prints each call's errno.
const keyringAttack = `import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING = 0, -4
calls = {
    "keyctl": lambda: libc.syscall(%d, KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0),
    "add_key": lambda: libc.syscall(%d, b"user", b"ue-escape-test", b"x", 1, -3),
    "request_key": lambda: libc.syscall(%d, b"user", b"ue-escape-test", None, 0),
}
for what, call in calls.items():
    ctypes.set_errno(0)
    r = call()
    print(what, "allowed" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), "?"))
`

// escapeKeyrings: the kernel's keyrings are not namespaced, and a user's
// keyring is every process's of that user: the sandbox refuses keyctl,
// add_key and request_key.
func escapeKeyrings(t *testing.T) {
	e := newSandboxEnv(t, "")
	attack := fmt.Sprintf(keyringAttack, unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY)
	if err := os.WriteFile(filepath.Join(e.ws, "keyring.py"), []byte(attack), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := e.run(t, e.py+" keyring.py")
	if code != 0 {
		t.Fatalf("the attack did not run: exit %d: %s", code, out)
	}
	for _, what := range []string{"keyctl", "add_key", "request_key"} {
		if !strings.Contains(out, what+" EPERM") {
			t.Errorf("%s was not refused:\n%s", what, out)
		}
	}
}

// escapeHostSharedMemory: /dev/shm is writable in the sandbox (Python's
// multiprocessing needs it), but it is the program's own: the host's
// shared memory (other programs' segments and semaphores) is neither
// readable nor writable there.
func escapeHostSharedMemory(t *testing.T) {
	e := newSandboxEnv(t, "")
	host := fmt.Sprintf("/dev/shm/ue-escape-%d", rand.IntN(1<<30))
	if err := os.WriteFile(host, []byte("HOST-SHM-SECRET"), 0o666); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(host) })
	code, out := e.run(t, "cat "+host+"; echo tampered > "+host+"; ls /dev/shm | grep -c ue-escape; true")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	if strings.Contains(out, "HOST-SHM-SECRET") {
		t.Errorf("the host's shared memory was readable:\n%s", out)
	}
	if b, _ := os.ReadFile(host); string(b) != "HOST-SHM-SECRET" {
		t.Errorf("the host's shared memory was written: %q", b)
	}
	code, out = e.run(t, e.py+` -c "import multiprocessing as m; l = m.Lock(); l.acquire(); l.release(); print('semaphore ok')"`)
	if code != 0 || !strings.Contains(out, "semaphore ok") {
		t.Errorf("a POSIX semaphore in /dev/shm failed: exit %d: %s", code, out)
	}
}

// victimTerminal is a terminal of the test's, standing for the user's: its
// master and slave, closed when the test ends.
func victimTerminal(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { master.Close(); slave.Close() })
	return master, slave
}

// escapeHostTerminals: the host's terminals (the one unified-exec was
// started from, the user's other shells) are out of reach: a command that
// writes to every terminal it can open under /dev/pts, and to the host's
// path of the victim, reaches only its own. Reading them is the same open:
// what the user types there would be a command's to take.
func escapeHostTerminals(t *testing.T) {
	e := newSandboxEnv(t, "")
	victim, victimTTY := victimTerminal(t)
	cmd := "for t in /dev/pts/[0-9]* " + victimTTY.Name() + "; do echo SANDBOX-WAS-HERE > $t && echo wrote $t; done; true"
	text, isErr, _ := e.call("exec_command", map[string]any{"cmd": cmd, "login": false, "tty": true, "yield_time_ms": 10000})
	if isErr || !strings.Contains(text, "exited with code 0") || !strings.Contains(output(text), "wrote /dev/pts/") {
		t.Fatalf("the command did not run (or could not even write to its own terminal): %s", text)
	}
	fd := int(victim.Fd())
	if err := unix.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, err := unix.Read(fd, buf)
	if n > 0 {
		t.Fatalf("a sandboxed command wrote to a terminal of the host: %q (it saw: %s)", buf[:n], output(text))
	}
	if err != unix.EAGAIN {
		t.Fatalf("reading the victim terminal: %v", err)
	}
}

// escapeTerminalInjection: a sandboxed command cannot type into a terminal
// (TIOCSTI): into the user's terminal, what it typed would run in the
// user's shell, outside the sandbox, once the command ends. The victim is
// a terminal of the test's, as the terminal unified-exec was started from
// would be (out of reach already: its path names another terminal inside,
// see escapeHostTerminals); the session's own terminal is tried too, for
// where the program has no terminal instance of its own.
func escapeTerminalInjection(t *testing.T) {
	e := newSandboxEnv(t, "")
	_, victimTTY := victimTerminal(t)
	if err := os.WriteFile(filepath.Join(e.ws, "attack.py"), []byte(tiocstiAttack), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := e.py + " attack.py " + victimTTY.Name() + " /dev/tty"
	text, isErr, _ := e.call("exec_command", map[string]any{"cmd": cmd, "login": false, "tty": true, "yield_time_ms": 10000})
	out := output(text)
	if isErr || !strings.Contains(text, "exited with code 0") {
		t.Fatalf("the attack did not run: %s", text)
	}
	if strings.Contains(out, "INJECTED") {
		t.Errorf("a sandboxed command typed into a terminal:\n%s", out)
	}
	for _, target := range []string{victimTTY.Name(), "/dev/tty"} {
		refused := strings.Count(out, target+" 0x") - strings.Count(out, target+" 0x5412 INJECTED") - strings.Count(out, target+" 0x100005412 INJECTED")
		opened := !strings.Contains(out, target+" open:")
		if opened && refused != 2 {
			t.Errorf("%s: want both TIOCSTI forms refused:\n%s", target, out)
		}
	}
	n, err := unix.IoctlGetInt(int(victimTTY.Fd()), unix.TIOCINQ)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("the victim terminal holds %d bytes of typed input", n)
	}
}
