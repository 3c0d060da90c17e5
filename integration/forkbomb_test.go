//go:build linux

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/internal/testreq"

	"github.com/unified-exec/unified-exec/ptyrun"
)

// processLimitPolicy skips (or fails, when the sandbox is required) where
// there is no process limit, and writes a policy with max_processes = n in
// a fresh workspace.
func processLimitPolicy(t *testing.T, n int) (dir, policyFile string) {
	t.Helper()
	if ok, err := ptyrun.ProcessLimitAvailable(); !ok {
		if testreq.ProcessLimitRequired() {
			t.Fatalf("process limit required but unavailable: %v", err)
		}
		t.Skipf("process limit unavailable (an ordinary user without a delegated cgroup v2 subtree has none): %v", err)
	}
	dir = t.TempDir()
	policyFile = filepath.Join(dir, "policy.toml")
	if err := os.WriteFile(policyFile, []byte(fmt.Sprintf("[limits]\nmax_processes = %d\n", n)), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, policyFile
}

// TestForkBombContained: a fork bomb in a sandboxed session stops at the
// session's process limit, the response says so, other sessions keep
// answering, and killing the session leaves no process and no cgroup.
func TestForkBombContained(t *testing.T) {
	dir, pf := processLimitPolicy(t, 64)
	s := startServer(t, serverOpts{args: []string{"--policy", pf}, workspace: dir})
	text := s.exec(map[string]any{"cmd": "grep pids /proc/self/cgroup; b() { b | b & }; b; sleep 60", "yield_time_ms": 3000})
	id := sessionID(t, text)
	if !strings.Contains(text, "hit its process limit (64 processes and threads)") {
		t.Fatalf("no process-limit note while the bomb runs:\n%s", text)
	}
	m := regexp.MustCompile(`pids:(/\S*unified-exec-\S+)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("the bomb runs in no session cgroup:\n%s", text)
	}
	cgroup := filepath.Join("/sys/fs/cgroup/pids", m[1])
	if _, err := os.Stat(cgroup); err != nil {
		t.Fatal(err)
	}

	if out := output(s.exec(map[string]any{"cmd": "echo alive"})); !strings.Contains(out, "alive") {
		t.Fatalf("another session beside the bomb answered %q", out)
	}

	// The sandbox keeps a command in its cgroup: moving itself to the
	// root (no limit) is refused.
	esc := output(s.exec(map[string]any{"cmd": "echo $$ > /sys/fs/cgroup/pids/cgroup.procs && echo ESCAPED; grep pids /proc/self/cgroup"}))
	if strings.Contains(esc, "ESCAPED") || !strings.Contains(esc, "unified-exec-") {
		t.Fatalf("a sandboxed command left its session cgroup:\n%s", esc)
	}

	if text, isErr, _ := s.call("kill_session", map[string]any{"session_id": id}); isErr {
		t.Fatalf("kill_session: %s", text)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(cgroup); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bomb's cgroup %s is still there after the kill", cgroup)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWrapProcessLimit: the wrapper gives its one command the same limit,
// and starts it as a session would (forked in the program's namespace).
func TestWrapProcessLimit(t *testing.T) {
	dir, pf := processLimitPolicy(t, 32)
	forker := `$| = 1; my $n = 0; for (1..100) { my $p = fork; if (!defined $p) { print "refused\n"; last } if ($p == 0) { sleep 30; exit 0 } $n++ } print "forked $n\n"`
	out, code := wrap(t, []string{"--policy", pf, "--workspace", dir}, "perl", "-e", forker)
	i := strings.Index(out, "forked")
	if i < 0 {
		t.Fatalf("exit %d, no count in the output:\n%s", code, out)
	}
	n := 0
	fmt.Sscanf(out[i:], "forked %d", &n)
	if code != 0 || !strings.Contains(out, "refused") || n >= 32 {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
}

// TestProgramKilledCgroupsRemoved: when the program is killed (the OOM
// killer picks the biggest process) while sessions run, the relay removes
// their cgroups and the prepared ones, all named after it; nothing waits
// for the next start's stale cleanup.
func TestProgramKilledCgroupsRemoved(t *testing.T) {
	dir, pf := processLimitPolicy(t, 64)
	s := startServer(t, serverOpts{args: []string{"--policy", pf}, workspace: dir})
	text := s.exec(map[string]any{"cmd": "grep pids /proc/self/cgroup; sleep 60", "yield_time_ms": 500})
	m := regexp.MustCompile(`pids:(/\S*unified-exec-\S+)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("the session runs in no session cgroup:\n%s", text)
	}
	parent := filepath.Dir(filepath.Join("/sys/fs/cgroup/pids", m[1]))
	relay := s.cmd.Process.Pid
	own := func() []string {
		found, _ := filepath.Glob(filepath.Join(parent, fmt.Sprintf("unified-exec-%d-*", relay)))
		return found
	}
	if len(own()) == 0 {
		t.Fatalf("no cgroup named after the relay in %s", parent)
	}
	// The program is the relay's one child (forked by any of its threads).
	var children []string
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", relay))
	for _, task := range tasks {
		b, _ := os.ReadFile(task)
		children = append(children, strings.Fields(string(b))...)
	}
	if len(children) != 1 {
		t.Fatalf("the relay's children: %q, want the program alone", children)
	}
	program, _ := strconv.Atoi(children[0])
	if err := syscall.Kill(program, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(own()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("cgroups of the killed program left: %v", own())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
