//go:build linux

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestPolicyCheckNamesLine(t *testing.T) {
	f := filepath.Join(t.TempDir(), "policy.toml")
	os.WriteFile(f, []byte("[approval]\nmode = \"never\"\nmood = \"x\"\n"), 0o644)
	out, err := exec.Command(binary, "policy", "check", f).CombinedOutput()
	if err == nil || !strings.Contains(string(out), f+":3: approval.mood: unknown key") {
		t.Fatalf("policy check: %v\n%s", err, out)
	}
	out, err = exec.Command(binary, "policy", "check").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok") {
		t.Fatalf("default policy: %v %s", err, out)
	}
	os.WriteFile(f, []byte("not toml at all ["), 0o644)
	out, _ = exec.Command(binary, "policy", "check", f).CombinedOutput()
	if !strings.Contains(string(out), f+":1") {
		t.Fatalf("not TOML: %s", out)
	}
}

func TestPolicyShow(t *testing.T) {
	out, err := exec.Command(binary, "policy", "show").Output()
	if err != nil || !strings.Contains(string(out), "[approval]") {
		t.Fatalf("%v %s", err, out)
	}
	f := filepath.Join(t.TempDir(), "copy.toml")
	os.WriteFile(f, out, 0o644)
	if out, err := exec.Command(binary, "policy", "check", f).CombinedOutput(); err != nil {
		t.Fatalf("the shown policy does not check: %s", out)
	}
}

func TestPolicyExplain(t *testing.T) {
	out, err := exec.Command(binary, "policy", "explain", "--", "git push origin main").CombinedOutput()
	s := string(out)
	if err != nil || !strings.Contains(s, "needs approval") || !strings.Contains(s, "line ") || !strings.Contains(s, "danger-full-access") {
		t.Fatalf("explain: %v\n%s", err, s)
	}
	out, _ = exec.Command(binary, "policy", "explain", "--", "echo ok && sudo rm -rf /").CombinedOutput()
	if !strings.Contains(string(out), "forbidden") {
		t.Fatalf("explain forbid: %s", out)
	}
}

// TestWrapNoTerminal: a command that needs approval, with no terminal to
// ask on (as in CI), exits 126 and names the rule.
func TestWrapNoTerminal(t *testing.T) {
	requireSandbox(t)
	dir := t.TempDir()
	f := filepath.Join(dir, "policy.toml")
	os.WriteFile(f, []byte("[[rule]]\npattern = [\"touch\"]\ndecision = \"prompt\"\nreason = \"touching needs a human\"\n"), 0o644)
	cmd := exec.Command("setsid", binary, "--policy", f, "--workspace", dir, "--", "touch", "x")
	cmd.Stdin = nil
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 126 {
		t.Fatalf("want exit 126, got %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "touching needs a human") || !strings.Contains(string(out), f) {
		t.Fatalf("message does not name the rule and file:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Fatal("the refused command ran")
	}
}

func TestWrapSandboxAndCodes(t *testing.T) {
	requireSandbox(t)
	dir := t.TempDir()
	out, code := wrap(t, []string{"--workspace", dir}, "bash", "-c", "touch /etc/ue-wrap-escape; echo done > ok.txt")
	// Read-only by mount (Landlock's refusal would be "Permission
	// denied"; the mount is checked first).
	if code != 0 || !strings.Contains(out, "Read-only file system") {
		t.Fatalf("exit %d: %s", code, out)
	}
	if _, err := os.Stat("/etc/ue-wrap-escape"); err == nil {
		os.Remove("/etc/ue-wrap-escape")
		t.Fatal("the wrapped command escaped")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "ok.txt")); string(b) != "done\n" {
		t.Fatal("workspace write failed")
	}
	if _, code := wrap(t, []string{"--workspace", dir}, "sudo", "true"); code != 126 {
		t.Fatalf("forbidden sudo: exit %d", code)
	}
	if out, code := wrap(t, []string{"--policy", "/nonexistent.toml"}, "true"); code != 125 || !strings.Contains(out, "nonexistent") {
		t.Fatalf("bad policy: exit %d %s", code, out)
	}
	if _, code := wrap(t, []string{"--workspace", dir, "--sandbox", "danger-full-access"}, "bash", "-c", "exit 9"); code != 9 {
		t.Fatalf("exit code: %d", code)
	}
	if out, code := wrap(t, []string{"--workspace", dir, "--network"}, "bash", "-c", "echo > /dev/tcp/127.0.0.1/9 2>&1; true"); code != 0 || strings.Contains(out, "Operation not permitted") {
		t.Fatalf("--network: %d %s", code, out)
	}
}

func TestSandboxStatus(t *testing.T) {
	out, err := exec.Command(binary, "sandbox", "status").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "landlock:") || !strings.Contains(string(out), "mode in force: workspace-write") {
		t.Fatalf("%v\n%s", err, out)
	}
}

func TestToolsFormats(t *testing.T) {
	for _, f := range []string{"mcp", "openai"} {
		out, err := exec.Command(binary, "tools", "--format", f).Output()
		if err != nil || !strings.Contains(string(out), "exec_command") || !strings.Contains(string(out), `"additionalProperties": false`) {
			t.Fatalf("%s: %v %s", f, err, out)
		}
	}
}
