//go:build linux

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// fdTargets is what each of pid's descriptors is open on, sorted (for a
// leak's report).
func fdTargets(pid int) []string {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		target, _ := os.Readlink(filepath.Join(dir, e.Name()))
		out = append(out, target)
	}
	slices.Sort(out)
	return out
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

// BenchmarkServerIdle: what a server costs while the agent thinks: after
// one exec_command, 5 s of quiet; reports the CPU its processes (the
// relay and the serving program) used per second of it, their summed RSS
// and PSS (proportional: shared pages split), and how many there are.
func BenchmarkServerIdle(b *testing.B) {
	for b.Loop() {
		s := startServer(b, serverOpts{})
		s.exec(map[string]any{"cmd": "true"})
		relay := s.cmd.Process.Pid
		procs := []int{relay}
		if served := proctree.ServingPid(relay); served != relay {
			procs = append(procs, served)
		}
		time.Sleep(time.Second)
		cpu := func() (ticks int) {
			for _, pid := range procs {
				f, ok := proctree.Stat(fmt.Sprintf("/proc/%d/stat", pid))
				if !ok || len(f) < 13 {
					b.Fatalf("process %d is gone", pid)
				}
				u, _ := strconv.Atoi(f[11]) // utime, field 14
				st, _ := strconv.Atoi(f[12])
				ticks += u + st
			}
			return ticks
		}
		const quiet = 5 * time.Second
		c0 := cpu()
		time.Sleep(quiet)
		c1 := cpu()
		var rss, pss int
		for _, pid := range procs {
			rss += procStatus(pid, "VmRSS")
			pss += smapsRollup(pid, "Pss")
		}
		// Clock ticks are 10 ms (USER_HZ 100).
		for _, pid := range procs {
			b.Logf("process %d: RSS %d KiB, anon %d KiB, PSS %d KiB", pid, procStatus(pid, "VmRSS"), procStatus(pid, "RssAnon"), smapsRollup(pid, "Pss"))
		}
		b.ReportMetric(float64(c1-c0)*10/quiet.Seconds(), "idle-cpu-ms/s")
		b.ReportMetric(float64(rss)/1024, "rss-MiB")
		b.ReportMetric(float64(pss)/1024, "pss-MiB")
		b.ReportMetric(float64(len(procs)), "processes")
		s.session.Close()
	}
}

// smapsRollup reads a field of /proc/<pid>/smaps_rollup, in KiB.
func smapsRollup(pid int, field string) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, field+":") {
			n, _ := strconv.Atoi(strings.Fields(l)[1])
			return n
		}
	}
	return 0
}
