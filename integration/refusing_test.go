//go:build linux

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unified-exec/unified-exec/internal/testreq"
)

// refusingHost is a shell script that makes the host that refuses user
// namespaces for real: in a user namespace of its own whose
// user.max_user_namespaces is 0 (so nothing inside can make another), it
// drops every capability and runs unified-exec as an ordinary user
// (uid 1000 there, whoever runs the test).
const refusingHost = `echo 0 > /proc/sys/user/max_user_namespaces || exit 97
exec setpriv --ambient-caps=-all --inh-caps=-all --bounding-set=-all "$@"`

// runRefusing runs the binary with args on a host that refuses user
// namespaces, in dir; it returns the output and exit code.
func runRefusing(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	argv := append([]string{"unshare", "--user", "--map-user=1000", "--map-group=1000", "--keep-caps",
		"sh", "-c", refusingHost, "refusing", binary}, args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running on the refusing host: %v", err)
	}
	if code == 97 {
		if testreq.Required() {
			t.Fatalf("cannot make a host that refuses user namespaces (a user namespace whose user.max_user_namespaces is 0): %s", out)
		}
		t.Skipf("cannot make a host that refuses user namespaces: %s", out)
	}
	return string(out), code
}

// TestRefusingHost: where user namespaces are refused, a policy that
// requires the sandbox refuses to run, naming the sysctl and the
// guarantees lost (the wrapper, `sandbox status`); with required = false
// commands run under Landlock and seccomp alone, with a note, and writes
// outside the workspace are still refused.
func TestRefusingHost(t *testing.T) {
	requireSandbox(t)
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("needs setpriv (util-linux)")
	}
	// Outside /tmp, /tmp being a writable root.
	dir, err := os.MkdirTemp("/var/tmp", "ue-refusing-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	// The policy file outside the workspace: without a mount namespace a
	// read-only file in it is carved around, and nothing new could be
	// created beside it (see Status.Degraded).
	lax := filepath.Join(dir, "lax.toml")
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(ws, 0o777)
	if err := os.WriteFile(lax, []byte("[sandbox]\nrequired = false\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	out, code := runRefusing(t, dir, "--workspace", dir, "--", "sh", "-c", "echo RAN")
	if code != 125 || strings.Contains(out, "RAN") {
		t.Fatalf("required sandbox without namespaces: exit %d, want 125 and nothing run: %s", code, out)
	}
	for _, want := range []string{"user.max_user_namespaces = 0", "PID namespace", "required = false"} {
		if !strings.Contains(out, want) {
			t.Errorf("the refusal does not say %q: %s", want, out)
		}
	}

	out, code = runRefusing(t, dir, "sandbox", "status", "--workspace", dir)
	if code == 0 || !strings.Contains(out, "ENFORCEMENT: refused") || strings.Contains(out, "ENFORCEMENT: full") || !strings.Contains(out, "namespaces: no") {
		t.Errorf("sandbox status on the refusing host: exit %d:\n%s", code, out)
	}

	out, code = runRefusing(t, ws, "--policy", lax, "--workspace", ws, "--", "sh", "-c",
		"id -u; touch /etc/ue-refusing-escape && echo ESCAPED; touch inside && echo WROTE")
	if code != 0 || !strings.Contains(out, "WROTE") || strings.Contains(out, "ESCAPED") || !strings.Contains("\n"+out, "\n1000\n") {
		t.Fatalf("required = false without namespaces: exit %d: %s", code, out)
	}
	if !strings.Contains(out, "Landlock and seccomp alone") {
		t.Errorf("no note that only Landlock and seccomp apply: %s", out)
	}

	// Git: without a mount namespace, git = "commit" falls back to a
	// read-only repository, and says so.
	repo := filepath.Join(dir, "repo")
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	os.Chmod(repo, 0o777)
	out, _ = runRefusing(t, dir, "--policy", lax, "sandbox", "status", "--workspace", repo)
	if !strings.Contains(out, `git = "commit" falls back to "read-only"`) {
		t.Errorf("sandbox status does not say what git falls back to:\n%s", out)
	}
	out, code = runRefusing(t, repo, "--policy", lax, "--workspace", repo, "--", "sh", "-c",
		"git -c user.name=a -c user.email=a@a commit -q --allow-empty -m x && echo COMMITTED; echo pwned > .git/hooks/pre-commit && echo PLANTED; echo '[core]' >> .git/config && echo CONFIGURED; echo done")
	if code != 0 || !strings.Contains(out, "done") || strings.Contains(out, "COMMITTED") || strings.Contains(out, "PLANTED") || strings.Contains(out, "CONFIGURED") {
		t.Errorf("git without a mount namespace: exit %d: %s", code, out)
	}
}
