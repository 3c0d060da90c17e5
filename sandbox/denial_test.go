package sandbox

import "testing"

func TestDetectDenial(t *testing.T) {
	cases := []struct {
		name      string
		sandboxed bool
		code      int
		out       string
		want      bool
	}{
		// Denials.
		{"touch etc", true, 1, "touch: cannot touch '/etc/x': Permission denied\n", true},
		{"bash redirect", true, 1, "bash: line 1: /etc/x: Permission denied\n", true},
		{"python eacces", true, 1, "Traceback (most recent call last):\n  File \"<string>\", line 1\nPermissionError: [Errno 13] Permission denied: '/etc/x'\n", true},
		{"python eperm socket", true, 1, "PermissionError: [Errno 1] Operation not permitted\n", true},
		{"python erofs", true, 1, "OSError: [Errno 30] Read-only file system: '/w/.git/x'\n", true},
		{"mkdir erofs", true, 1, "mkdir: cannot create directory '.git/x': Read-only file system\n", true},
		{"curl socket", true, 7, "socket: Operation not permitted\ncurl: (7) Couldn't connect to server\n", true},
		{"git index lock", true, 128, "fatal: Unable to create '/repo/.git/index.lock': Read-only file system\n", true},
		{"go open", true, 1, "open /etc/x: permission denied\n", true},
		{"node eacces", true, 1, "Error: EACCES: permission denied, open '/etc/x'\n", true},
		{"java", true, 1, "java.io.FileNotFoundException: /etc/x (Permission denied)\n", true},
		{"rust", true, 101, "Error: Permission denied (os error 13)\n", true},
		{"sigsys", true, 159, "", true},
		{"bad system call", true, 159, "bash: line 1: 42 Bad system call (core dumped) ./x\n", true},
		{"helper failure", true, 126, "unified-exec: sandbox: landlock: ...\n", true},
		{"ping", true, 2, "ping: socket: Operation not permitted\n", true},
		{"crlf", true, 1, "touch: cannot touch '/etc/x': Permission denied\r\n", true},
		{"denial then noise", true, 2, "cp: cannot create regular file '/usr/x': Permission denied\nmake: *** [Makefile:3: all] Error 1\n", true},

		// Not denials.
		{"unsandboxed", false, 1, "touch: cannot touch '/etc/x': Permission denied\n", false},
		{"exit 0", true, 0, "ls: cannot open directory '/root/.ssh': Permission denied\n", false},
		{"sandbox path", true, 1, "/home/u/sandbox-project/x.go:3:2: undefined: foo\n", false},
		{"landlock dir", true, 2, "cd landlock-tests && make\nmain.c:3:1: error: unknown type name 'sandbox'\nmake: *** [all] Error 1\n", false},
		{"seccomp path", true, 1, "FAIL github.com/x/seccomp/filter [build failed]\n", false},
		{"grep no match", true, 1, "", false},
		{"quoted", true, 1, "--- FAIL: TestOpen\n    x_test.go:9: expected \"permission denied\", got nil\n", false},
		{"prose", true, 1, "error: permission denied is returned when the token expired\n", false},
		{"ssh publickey", true, 255, "git@github.com: Permission denied (publickey).\n", false},
		{"word sandbox", true, 1, "Error: sandbox mode is not supported by this tool\n", false},
		{"compile error", true, 2, "main.go:5:2: \"os\" imported and not used\n", false},
		{"test failure", true, 1, "--- FAIL: TestAdd (0.00s)\n    add_test.go:8: got 3, want 4\nFAIL\n", false},
		{"message in identifier", true, 1, "ErrPermissionDenied: foo\n", false},
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
