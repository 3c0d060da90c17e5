//go:build linux

package integration

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/internal/proctree"
)

// TestServerScheduling: the server reads output under SCHED_BATCH (so that
// it does not preempt the commands writing it), and the commands it starts,
// in a pipe or a terminal, forked from a sandboxed thread or through the
// helper, run under SCHED_OTHER.
func TestServerScheduling(t *testing.T) {
	const script = `read -r line < /proc/$$/stat; set -- ${line##*) }; shift 38; echo "policy=$1"`
	for _, env := range [][]string{nil, {"UNIFIED_EXEC_SPAWN=helper"}} {
		s := startServer(t, serverOpts{env: env})
		for _, tty := range []bool{false, true} {
			out := output(s.exec(map[string]any{"cmd": script, "tty": tty}))
			if !strings.Contains(out, "policy=0") {
				t.Errorf("env %v tty %v: the command's policy is %q, want policy=0 (SCHED_OTHER)", env, tty, out)
			}
		}
		// A thread retired after a fork keeps SCHED_OTHER until it is
		// gone: give it time to go.
		pid := proctree.ServingPid(s.cmd.Process.Pid)
		var wrong []string
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			wrong = nil
			tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range tasks {
				// Field 41 of proc(5), the policy, is [38].
				if f, ok := proctree.Stat(fmt.Sprintf("/proc/%d/task/%s/stat", pid, e.Name())); ok && f[38] != "3" {
					wrong = append(wrong, fmt.Sprintf("thread %s has policy %s", e.Name(), f[38]))
				}
			}
			if len(wrong) == 0 || time.Now().After(deadline) {
				break
			}
		}
		if len(wrong) > 0 {
			t.Errorf("env %v: server threads not SCHED_BATCH (3): %v", env, wrong)
		}
	}
}
