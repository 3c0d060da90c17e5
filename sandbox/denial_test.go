package sandbox

import (
	"strings"
	"testing"
)

func TestDetectDenial(t *testing.T) {
	cases := []struct {
		name      string
		sandboxed bool
		code      int
		out       string
		want      bool
	}{
		// Denials, as the tools print them.
		{"touch", true, 1, "touch: cannot touch '/etc/x': Permission denied\n", true},
		{"bash redirect", true, 1, "bash: /etc/x: Permission denied\n", true},
		{"bash line", true, 1, "bash: line 1: /etc/x: Permission denied\n", true},
		{"python eacces", true, 1, "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nPermissionError: [Errno 13] Permission denied: '/etc/x'\n", true},
		{"python eperm socket", true, 1, "PermissionError: [Errno 1] Operation not permitted\n", true},
		{"python erofs", true, 1, "OSError: [Errno 30] Read-only file system: '/w/.git/x'\n", true},
		{"python repr", true, 1, "error: PermissionError(13, 'Permission denied')\n", true},
		{"pip retry", true, 1, "WARNING: Retrying after connection broken by 'NewConnectionError('<conn>: Failed to establish a new connection: [Errno 1] Operation not permitted')': /simple/x/\nERROR: No matching distribution found for x\n", true},
		{"mkdir erofs curly quotes", true, 1, "mkdir: cannot create directory ‘/usr/x’: Read-only file system\n", true},
		{"curl with errno", true, 7, "socket: Operation not permitted\ncurl: (7) Couldn't connect to server\n", true},
		{"git index lock", true, 128, "fatal: Unable to create '/repo/.git/index.lock': Permission denied\n", true},
		{"git prefixed", true, 128, "git: fatal: Unable to create '/repo/.git/index.lock': Permission denied\n", true},
		{"git config lock", true, 255, "error: could not lock config file .git/config: Permission denied\n", true},
		{"git config pinned", true, 4, "error: could not write config file .git/config: Device or resource busy\n", true},
		{"mv pinned", true, 1, "mv: cannot move 'nested' to 'nested-old': Device or resource busy\n", true},
		{"go open", true, 1, "open /etc/x: permission denied\n", true},
		{"node", true, 1, "Error: EACCES: permission denied, open '/etc/x'\n    at Object.openSync (node:fs:596:3)\n", true},
		{"java", true, 1, "java.io.FileNotFoundException: /etc/x (Permission denied)\n", true},
		{"rust", true, 101, "Error: Os { code: 13 }\nCaused by:\n    Permission denied (os error 13)\n", true},
		{"apt", true, 100, "E: Could not open lock file /var/lib/dpkg/lock-frontend - open (13: Permission denied)\n", true},
		{"kill scoped", true, 1, "bash: kill: (4242) - Operation not permitted\n", true},
		{"strace", true, 1, "strace: attach: ptrace(PTRACE_SEIZE, 1): Operation not permitted\n", true},
		{"gdb", true, 1, "ptrace: Operation not permitted.\n", true},
		{"ln exdev", true, 1, "ln: failed to create hard link '.git/x' => 'src/x': Invalid cross-device link\n", true},
		{"sigsys", true, 159, "", true},
		{"bad system call", true, 159, "bash: line 1:    42 Bad system call         (core dumped) ./x\n", true},
		{"named seccomp", true, 1, "error: syscall blocked by seccomp\n", true},
		{"named landlock", true, 1, "warning: write denied by Landlock\n", true},
		{"chromium", true, 133, "../../sandbox/linux/seccomp-bpf-helpers/sigsys_handlers.cc:**CRASHING**:seccomp-bpf failure in syscall 0231\n", true},
		{"helper failure", true, 126, "unified-exec: sandbox: landlock: restricting (ABI 7, 40 rules): ...\n", true},
		{"ping", true, 2, "ping: socket: Operation not permitted\n", true},
		{"crlf", true, 1, "touch: cannot touch '/etc/x': Permission denied\r\n", true},
		{"double-quoted path", true, 1, "cp: cannot create regular file \"/usr/x\": Permission denied\n", true},
		{"denial then noise", true, 2, "cp: cannot create regular file '/usr/x': Permission denied\nmake: *** [Makefile:3: all] Error 1\n", true},
		{"ls secret dir", true, 2, "ls: cannot open directory '/root/.ssh': Permission denied\n", true},

		// Not denials.
		{"unsandboxed", false, 1, "touch: cannot touch '/etc/x': Permission denied\n", false},
		{"unsandboxed sigsys", false, 159, "", false},
		{"exit 0", true, 0, "ls: cannot open directory '/root/.ssh': Permission denied\n", false},
		{"sandbox path", true, 1, "/home/u/sandbox-project/x.go:3:2: undefined: foo\n", false},
		{"landlock dir", true, 2, "cd landlock-tests && make\nmain.c:3:1: error: unknown type name 'sandbox'\nmake: *** [all] Error 1\n", false},
		{"seccomp package", true, 1, "FAIL github.com/x/seccomp/filter [build failed]\n", false},
		{"seccomp dir missing", true, 1, "bash: cd: seccomp: No such file or directory\n", false},
		{"landlock word", true, 1, "landlock: unknown flag -x\nusage: landlock [opts]\n", false},
		{"grep no match", true, 1, "", false},
		{"grep echoed by set -x", true, 1, "+ grep -r \"Permission denied\" docs/\n", false},
		{"quoted expectation", true, 1, "--- FAIL: TestOpen (0.00s)\n    x_test.go:9: expected \"permission denied\", got nil\n", false},
		{"quoted got", true, 1, "    x_test.go:12: got error \"open /x: permission denied\", want nil\n", false},
		{"prose", true, 1, "error: permission denied is returned when the token expired\n", false},
		{"docker group", true, 1, "Got permission denied while trying to connect to the Docker daemon socket\n", false},
		{"ssh publickey", true, 255, "git@github.com: Permission denied (publickey).\nfatal: Could not read from remote repository.\n", false},
		{"ssh password", true, 255, "Permission denied, please try again.\n", false},
		{"word sandbox", true, 1, "Error: sandbox mode is not supported by this tool\n", false},
		{"compile error", true, 2, "main.go:5:2: \"os\" imported and not used\n", false},
		{"test failure", true, 1, "--- FAIL: TestAdd (0.00s)\n    add_test.go:8: got 3, want 4\nFAIL\n", false},
		{"identifier", true, 1, "ErrPermissionDenied: foo\n", false},
		{"test name", true, 1, "--- FAIL: TestPermissionDenied (0.01s)\n", false},
		{"grep hit in file", true, 2, "docs/errors.md:12:Permission denied\ngrep: nosuch: No such file or directory\n", false},
		{"changelog", true, 1, "- Permission denied errors are now reported (#123)\n", false},
		{"curl without errno", true, 7, "curl: (7) Couldn't connect to server\n", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, why := DetectDenial(c.sandboxed, c.code, c.out)
			if got != c.want {
				t.Fatalf("DetectDenial(%v, %d, %q) = %v (%q), want %v", c.sandboxed, c.code, c.out, got, why, c.want)
			}
			if got && why == "" {
				t.Fatal("a denial without a reason")
			}
		})
	}
}

// TestDetectDenialWindow: only the end of a long output is read, and the
// reason quotes the denying line.
func TestDetectDenialWindow(t *testing.T) {
	deny := "touch: cannot touch '/etc/x': Permission denied\n"
	filler := strings.Repeat("x", 300<<10) + "\n"
	if got, _ := DetectDenial(true, 1, deny+filler); got {
		t.Fatal("a denial 300 KiB before the end was counted")
	}
	got, why := DetectDenial(true, 1, filler+deny)
	if !got || why != strings.TrimSpace(deny) {
		t.Fatalf("got %v, %q", got, why)
	}
}
