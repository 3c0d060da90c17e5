//go:build linux

package integration

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/internal/proctree"
)

// procStatus reads a field of /proc/<pid>/status, in KiB.
func procStatus(pid int, field string) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, field+":") {
			n, _ := strconv.Atoi(strings.Fields(l)[1])
			return n
		}
	}
	return 0
}

func countFDs(pid int) int {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(ents)
}

func children(pid int) int { return len(proctree.Children(pid)) }

// BenchmarkServerIdleSessions: 500 idle sessions in one server; reports
// the server's RSS per session, then checks nothing is left once they are
// closed.
func BenchmarkServerIdleSessions(b *testing.B) {
	n := 500
	if v, err := strconv.Atoi(os.Getenv("UE_BENCH_SESSIONS")); err == nil {
		n = v
	}
	for b.Loop() {
		dir := b.TempDir()
		pf := dir + "/policy.toml"
		os.WriteFile(pf, []byte("[limits]\nmax_sessions = 600\n"), 0o644)
		s := startServer(b, serverOpts{args: []string{"--policy", pf}, workspace: dir})
		s.exec(map[string]any{"cmd": "true"})
		pid := proctree.ServingPid(s.cmd.Process.Pid)
		time.Sleep(200 * time.Millisecond)
		base := procStatus(pid, "VmRSS")
		fds0 := countFDs(pid)
		var ids []int
		for i := 0; i < n; i++ {
			text := s.exec(map[string]any{"cmd": "exec sleep 600", "tty": i%2 == 0, "yield_time_ms": 250})
			ids = append(ids, sessionIDOf(text))
		}
		rss := procStatus(pid, "VmRSS")
		b.ReportMetric(float64(rss-base)/float64(n), "KiB/session")
		for _, id := range ids {
			s.call("kill_session", map[string]any{"session_id": id})
		}
		time.Sleep(500 * time.Millisecond)
		if c := children(pid); c != 0 {
			b.Fatalf("%d children left", c)
		}
		if fds := countFDs(pid); fds > fds0+2 {
			b.Fatalf("fds: %d before, %d after", fds0, fds)
		}
		s.session.Close()
	}
}

// BenchmarkServerFlood: 1 GB of output through one exec_command; reports
// the growth of the server's peak RSS.
func BenchmarkServerFlood(b *testing.B) {
	for b.Loop() {
		s := startServer(b, serverOpts{workspace: b.TempDir()})
		s.exec(map[string]any{"cmd": "true"})
		pid := proctree.ServingPid(s.cmd.Process.Pid)
		base := procStatus(pid, "VmHWM")
		text := s.exec(map[string]any{"cmd": "head -c 1000000000 /dev/zero | tr '\\0' 'x' | fold -w 200; echo END", "yield_time_ms": 30000})
		for !strings.Contains(text, "exited") {
			text = func() string {
				t, _, _ := s.call("write_stdin", map[string]any{"session_id": sessionIDOf(text), "yield_time_ms": 30000})
				return t
			}()
		}
		b.ReportMetric(float64(procStatus(pid, "VmHWM")-base)/1024, "MiB-peak-growth")
		s.session.Close()
	}
}

func sessionIDOf(text string) int {
	var id int
	for _, l := range strings.Split(text, "\n") {
		if _, err := fmt.Sscanf(l, "Process running with session ID %d", &id); err == nil {
			return id
		}
	}
	return 0
}
