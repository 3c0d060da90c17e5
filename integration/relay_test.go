//go:build linux

package integration

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startWrapped starts the wrapper on script (bash) and waits until it has
// printed "ready" and a process with tag in its command line runs. It
// returns the wrapper's process, its output and a channel that gets
// Wait's outcome.
func startWrapped(t *testing.T, script, tag string) (*exec.Cmd, *lockedBuffer, chan error) {
	t.Helper()
	cmd := exec.Command(binary, "--workspace", t.TempDir(), "--", "bash", "-c", script)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		done <- nil
	})
	waitFor(t, func() bool { return strings.Contains(out.String(), "ready") && len(procsWith(tag)) > 0 })
	return cmd, &out, done
}

// statusField is the value of a field of /proc/PID/status.
func statusField(t *testing.T, pid int, field string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return ""
}

// relayChild is the one child of the wrapper's first process: the program.
func relayChild(t *testing.T, relay int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", relay, relay))
	if err != nil {
		t.Fatal(err)
	}
	kids := strings.Fields(string(b))
	if len(kids) != 1 {
		t.Fatalf("the wrapper's first process has children %q, want the program alone", kids)
	}
	pid, _ := strconv.Atoi(kids[0])
	return pid
}

// TestWrapRelayStartsOnce: the wrapper starts its binary once. The first
// process makes the program's namespaces and waits in C, before the Go
// runtime starts (one thread: a Go process has several); the program, its
// one child, is PID 1 of a new PID namespace, and the binary is executed
// by neither again (the child's program is the same executable image, not
// a new start of it).
func TestWrapRelayStartsOnce(t *testing.T) {
	requireSandbox(t)
	tag := fmt.Sprintf("42%d.%d", rand.IntN(1000), rand.IntN(1000))
	cmd, _, _ := startWrapped(t, "echo ready; sleep "+tag, tag)
	relay := cmd.Process.Pid
	if th := statusField(t, relay, "Threads"); th != "1" {
		t.Errorf("the relay runs %s threads: the Go runtime started in it", th)
	}
	program := relayChild(t, relay)
	if ns := strings.Fields(statusField(t, program, "NSpid")); len(ns) < 2 || ns[len(ns)-1] != "1" {
		t.Errorf("the program is not PID 1 of a namespace of its own: NSpid %q", ns)
	}
	for _, pid := range []int{relay, program} {
		// A process started by exec of the binary has its name in
		// comm; the program is a copy made by clone, named the same.
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(comm)) != filepath.Base(binary)[:min(15, len(filepath.Base(binary)))] {
			t.Errorf("process %d is %q, not the wrapper's binary", pid, comm)
		}
	}
}

// TestWrapRelayProgramKilled: the program killed (SIGKILL, as by the OOM
// killer): the command's tree dies with its namespace, the wrapper exits
// 128+9, and the process-limit cgroups the program made for it are
// removed.
func TestWrapRelayProgramKilled(t *testing.T) {
	requireSandbox(t)
	tag := fmt.Sprintf("43%d.%d", rand.IntN(1000), rand.IntN(1000))
	cmd, out, done := startWrapped(t, "echo ready; sleep "+tag, tag)
	relay := cmd.Process.Pid
	own, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/pids/unified-exec-%d-*", relay))
	if os.Getuid() == 0 && isDir("/sys/fs/cgroup/pids") && len(own) == 0 {
		t.Fatalf("no process-limit cgroup of the wrapper's under /sys/fs/cgroup/pids while its command runs")
	}
	program := relayChild(t, relay)
	if err := syscall.Kill(program, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-done:
		done <- err
	case <-time.After(10 * time.Second):
		t.Fatalf("the wrapper did not end in 10 s after its program was killed: %s", out)
	}
	if cmd.ProcessState.ExitCode() != 128+9 {
		t.Errorf("exit code %d after the program was killed, want 137 (%v): %s", cmd.ProcessState.ExitCode(), err, out)
	}
	if left := procsWith(tag); len(left) > 0 {
		t.Errorf("the command outlived the program: %v", left)
	}
	for _, dir := range own {
		if isDir(dir) {
			t.Errorf("the process-limit cgroup %s is left after the program was killed", dir)
		}
	}
	if len(own) == 0 {
		t.Log("no process-limit cgroup here (cgroup v2 or not root): only the end of the command and the exit code were checked")
	}
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}
