//go:build linux

package integration

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// metadataAttack changes the metadata of each path named — mode, owner,
// times, an extended attribute — which Landlock does not govern, and
// prints what each call did.
const metadataAttack = `import os, sys
def attempt(what, call):
    try:
        call()
        print(what, "allowed")
    except OSError as e:
        print(what, "refused:", e.strerror)
for p in sys.argv[1:]:
    attempt("chmod " + p, lambda: os.chmod(p, 0o666))
    attempt("chown " + p, lambda: os.chown(p, 4321, 4321))
    attempt("utime " + p, lambda: os.utime(p, (0, 0)))
    attempt("setxattr " + p, lambda: os.setxattr(p, "user.ue-escape", b"x"))
`

// mountFlags prints, for each path named, whether its mount is read-only,
// nosuid and nodev, as statvfs reports them.
const mountFlags = `import os, sys
for p in sys.argv[1:]:
    f = os.statvfs(p).f_flag
    print(p, "ro" if f & os.ST_RDONLY else "rw", "nosuid" if f & os.ST_NOSUID else "suid", "nodev" if f & os.ST_NODEV else "dev")
`

// escapeMetadata: outside the writable roots, nothing changes, metadata
// included: the file system is read-only there in the command's mount
// namespace (Landlock does not govern chmod, chown, utimes or xattrs).
// The writable roots are nosuid and nodev; the devices, the terminal and
// /dev/shm still work (see the allowed cases of WorkspaceWrite and
// Terminals).
func escapeMetadata(t *testing.T) {
	e := newSandboxEnv(t, "")
	if err := os.WriteFile(filepath.Join(e.ws, "metadata.py"), []byte(metadataAttack), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.ws, "flags.py"), []byte(mountFlags), 0o644); err != nil {
		t.Fatal(err)
	}
	targets := []string{e.home + "/.ssh/id_rsa", e.home + "/notes.txt", e.home, filepath.Dir(e.ws)}
	type meta struct {
		mode     fs.FileMode
		uid      uint32
		mtime    time.Time
		hasXattr bool
	}
	stat := func(p string) meta {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		_, xerr := unix.Getxattr(p, "user.ue-escape", nil)
		return meta{st.Mode(), st.Sys().(*syscall.Stat_t).Uid, st.ModTime(), xerr == nil}
	}
	before := map[string]meta{}
	for _, p := range targets {
		before[p] = stat(p)
	}
	code, out := e.run(t, e.py+" metadata.py "+strings.Join(targets, " "))
	if code != 0 {
		t.Fatalf("the attack did not run: exit %d: %s", code, out)
	}
	if strings.Contains(out, "allowed") {
		t.Errorf("metadata outside the writable roots changed:\n%s", out)
	}
	for _, p := range targets {
		if after := stat(p); after != before[p] {
			t.Errorf("%s: %+v became %+v", p, before[p], after)
		}
	}
	// The same calls work in the workspace (xattrs depend on its file
	// system: not asked).
	code, out = e.run(t, e.py+" metadata.py a/file.txt")
	for _, what := range []string{"chmod", "utime"} {
		if !strings.Contains(out, what+" a/file.txt allowed") {
			t.Errorf("%s in the workspace failed: exit %d: %s", what, code, out)
		}
	}
	code, out = e.run(t, e.py+" flags.py "+strings.Join([]string{e.home, "/usr", "/etc", e.ws, "/tmp", "/dev/shm"}, " "))
	if code != 0 {
		t.Fatalf("flags: exit %d: %s", code, out)
	}
	for _, want := range []string{e.home + " ro", "/usr ro", "/etc ro", e.ws + " rw nosuid nodev", "/tmp rw nosuid nodev", "/dev/shm rw nosuid nodev"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q:\n%s", want, out)
		}
	}
}

// setidAttack tries every way to make a set-user-ID or set-group-ID file
// in the current directory — a root shell for the host when the sandbox
// runs as root — and prints each call's outcome (EPERM is what the
// sandbox answers; ENOSYS for openat2, so that libc falls back on calls
// the filter can read). Syscall numbers are x86_64's and left out
// elsewhere.
const setidAttack = `import ctypes, errno, os, shutil, stat, sys
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
raw = %s
shutil.copy("/bin/true", "victim")
def attempt(what, call):
    ctypes.set_errno(0)
    try:
        r = call()
    except OSError as e:
        print(what, errno.errorcode.get(e.errno, "?")); return
    if isinstance(r, int) and r < 0:
        print(what, errno.errorcode.get(ctypes.get_errno(), "?")); return
    print(what, "allowed")
fd = os.open("victim", os.O_RDONLY)
class OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]
how = OpenHow(os.O_CREAT | os.O_WRONLY, 0o4755, 0)
attempts = {
    "chmod 4755": lambda: os.chmod("victim", 0o4755),
    "chmod 2755": lambda: os.chmod("victim", 0o2755),
    "fchmod 6755": lambda: os.fchmod(fd, 0o6755),
    "fchmodat 4755": lambda: libc.fchmodat(AT_FDCWD, b"victim", 0o4755, 0),
    "open creat 4755": lambda: os.close(os.open("made1", os.O_CREAT | os.O_WRONLY, 0o4755)),
    "openat creat 2755": lambda: os.close(os.open("made2", os.O_CREAT | os.O_WRONLY, 0o2755, dir_fd=os.open(".", os.O_RDONLY))),
    "creat 4755": lambda: libc.creat(b"made3", 0o4755),
    "tmpfile 4755": lambda: os.close(os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o4755)),
    "mknod 4755": lambda: os.mknod("made4", stat.S_IFREG | 0o4755),
}
for name, nr in raw.items():
    if name == "openat2":
        attempts["openat2 4755"] = lambda nr=nr: libc.syscall(nr, AT_FDCWD, b"made5", ctypes.byref(how), ctypes.sizeof(how))
    elif name in ("chmod", "creat"):
        attempts[name + " syscall 4755"] = lambda nr=nr, name=name: libc.syscall(nr, b"victim" if name == "chmod" else b"made6", 0o4755)
    elif name == "open":
        attempts["open syscall 4755"] = lambda nr=nr: libc.syscall(nr, b"made7", os.O_CREAT | os.O_WRONLY, 0o4755)
    elif name == "fchmodat2":
        attempts["fchmodat2 4755"] = lambda nr=nr: libc.syscall(nr, AT_FDCWD, b"victim", 0o4755, 0)
    elif name == "mknod":
        attempts["mknod syscall 2755"] = lambda nr=nr: libc.syscall(nr, b"made8", stat.S_IFREG | 0o2755, 0)
for what, call in attempts.items():
    attempt(what, call)
# What stays allowed: modes without set-id bits, and the sticky bit.
attempt("control chmod 755", lambda: os.chmod("victim", 0o755))
attempt("control open creat 644", lambda: os.close(os.open("plain", os.O_CREAT | os.O_WRONLY, 0o644)))
attempt("control mknod 644", lambda: os.mknod("plain-node", stat.S_IFREG | 0o644))
os.mkdir("sticky")
attempt("control chmod 1777", lambda: os.chmod("sticky", 0o1777))
`

// setidSyscalls are the raw x86_64 numbers the set-id attack also tries.
var setidSyscalls = map[string]int{"chmod": 90, "creat": 85, "open": 2, "mknod": 133, "fchmodat2": 452, "openat2": 437}

// escapeSetID: no set-user-ID or set-group-ID file can be made, by any
// call, in the workspace or in /tmp: the host would run it with its
// owner's rights (root's, when the sandbox runs as root).
func escapeSetID(t *testing.T) {
	e := newSandboxEnv(t, "")
	raw := "{}"
	if runtime.GOARCH == "amd64" {
		var parts []string
		for name, nr := range setidSyscalls {
			parts = append(parts, fmt.Sprintf("%q: %d", name, nr))
		}
		raw = "{" + strings.Join(parts, ", ") + "}"
	}
	if err := os.WriteFile(filepath.Join(e.ws, "setid.py"), []byte(fmt.Sprintf(setidAttack, raw)), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp("/tmp", "ue-setid-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	for _, dir := range []string{e.ws + "/a", tmp} {
		code, out := e.run(t, "cd "+dir+" && "+e.py+" "+e.ws+"/setid.py")
		if code != 0 {
			t.Fatalf("the attack did not run in %s: exit %d: %s", dir, code, out)
		}
		for _, l := range strings.Split(out, "\n") {
			what, result, _ := strings.Cut(strings.TrimSpace(l), " 4755 ")
			if result == "" {
				what, result, _ = strings.Cut(strings.TrimSpace(l), " 2755 ")
			}
			if result == "" {
				what, result, _ = strings.Cut(strings.TrimSpace(l), " 6755 ")
			}
			switch {
			case strings.HasPrefix(l, "control"):
				if !strings.HasSuffix(l, "allowed") {
					t.Errorf("in %s: %s", dir, l)
				}
			case result == "":
			case strings.HasPrefix(what, "openat2"):
				if result != "ENOSYS" {
					t.Errorf("in %s: openat2 answered %s, want ENOSYS", dir, result)
				}
			case result != "EPERM":
				t.Errorf("in %s: %s answered %s, want EPERM", dir, what, result)
			}
		}
		if !strings.Contains(out, "chmod 4755") {
			t.Fatalf("no outcome in %s:\n%s", dir, out)
		}
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if info, err := d.Info(); err == nil && info.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
				t.Errorf("a set-id file was made: %s (%v)", p, info.Mode())
			}
			return nil
		})
	}
	for _, cmd := range []string{"cp /bin/bash x && chmod 4755 x", "install -m 4755 /bin/true y", "cp /bin/true z && chmod u+s z", "cp /bin/true w && chmod g+s w"} {
		if code, out := e.run(t, cmd); code == 0 {
			t.Errorf("%q succeeded: %s", cmd, out)
		}
	}
}

// escapeCredentialStores: the default policy keeps the credential stores
// agents' machines hold unreadable, and the environment's secrets out of
// the command's environment.
func escapeCredentialStores(t *testing.T) {
	secrets := map[string]string{
		"PGPASSWORD": "pw", "DB_PASS": "pw", "MYSQL_PWD_PASSFILE": "pw", "AWS_CREDENTIALS": "c", "GOOGLE_APPLICATION_CREDENTIALS": "c",
		"BASIC_AUTH": "a", "NPM_AUTH": "a", "SESSION_COOKIE": "c", "GPG_PRIVATE": "p", "GH_PAT": "p", "DATABASE_URL": "postgres://u:p@h/db",
		"SENTRY_DSN": "https://k@sentry", "Db_Password": "mixed",
	}
	kept := map[string]string{"XAUTHORITY": "/tmp/ue-xauth", "GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com", "PATHEXT": "x"}
	var env []string
	for k, v := range secrets {
		env = append(env, k+"=FAKE-ENV-"+v)
	}
	for k, v := range kept {
		if v != "" {
			env = append(env, k+"="+v)
		}
	}
	e := newSandboxEnvWith(t, sandboxOpts{env: env})
	stores := []string{
		".pgpass", ".vault-token", ".codex/auth.json", ".claude/.credentials.json", ".claude.json",
		".cargo/credentials.toml", ".cargo/credentials", ".bash_history", ".zsh_history", ".python_history",
		".psql_history", ".mysql_history", ".local/share/fish/fish_history", ".my.cnf", ".git-credentials",
		".config/git/credentials", ".gem/credentials", ".password-store/x.gpg", ".terraform.d/credentials.tfrc.json",
		".config/op/config", ".local/share/keyrings/login.keyring", ".s3cfg", ".boto",
	}
	for _, s := range stores {
		p := filepath.Join(e.home, s)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("FAKE-STORE-"+s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range stores {
		if code, out := e.run(t, "cat $HOME/"+s); code == 0 || strings.Contains(out, "FAKE-") {
			t.Errorf("~/%s was readable: %s", s, out)
		}
	}
	code, out := e.run(t, "env")
	if code != 0 {
		t.Fatalf("env: exit %d: %s", code, out)
	}
	for k := range secrets {
		if strings.Contains(out, k+"=") {
			t.Errorf("%s reached the command", k)
		}
	}
	if strings.Contains(out, "FAKE-ENV") {
		t.Errorf("a secret reached the command:\n%s", out)
	}
	for k, v := range kept {
		if v != "" && !strings.Contains(out, k+"="+v) {
			t.Errorf("%s did not reach the command", k)
		}
	}
}

// shmCap is the most the program namespace's /dev/shm may hold.
const shmCap = 1 << 30

// escapeSharedMemorySize: /dev/shm is a tmpfs in memory, the program's
// own: a command cannot fill the machine's memory through it.
func escapeSharedMemorySize(t *testing.T) {
	e := newSandboxEnv(t, "")
	code, out := e.run(t, e.py+` -c "
import errno, os
st = os.statvfs('/dev/shm')
size = st.f_blocks * st.f_frsize
print('size', size)
if size <= `+fmt.Sprint(shmCap)+`:
    fd = os.open('/dev/shm/ue-big', os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        os.posix_fallocate(fd, 0, size + (1 << 20))
        print('ALLOCATED')
    except OSError as e:
        print('refused', errno.errorcode[e.errno])
    os.unlink('/dev/shm/ue-big')
"`)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	var size int64
	fmt.Sscanf(out, "size %d", &size)
	if size <= 0 || size > shmCap {
		t.Errorf("/dev/shm holds up to %d bytes, want at most %d", size, shmCap)
	}
	if !strings.Contains(out, "refused ENOSPC") {
		t.Errorf("more than the cap was allocated in /dev/shm: %s", out)
	}
}
