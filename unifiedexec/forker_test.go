//go:build linux

package unifiedexec

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/internal/proctree"
	"github.com/unified-exec/unified-exec/internal/testreq"
	"github.com/unified-exec/unified-exec/ptyrun"
)

// requireV1Limit skips where sessions get no v1 pids cgroup: the Forker
// prepares threads only there (cgroup v2 clones straight into the
// cgroup; without a process limit there is nothing to join).
func requireV1Limit(t *testing.T) {
	t.Helper()
	if !ptyrun.InOwnNamespace() {
		t.Skip("not in a namespace of its own (fuzzing, or no namespaces here)")
	}
	ok, err := ptyrun.ProcessLimitAvailable()
	if !ok {
		if testreq.ProcessLimitRequired() {
			t.Fatalf("process limit required but unavailable: %v", err)
		}
		t.Skipf("no process limit here: %v", err)
	}
	if _, err := os.Stat("/sys/fs/cgroup/pids"); err != nil {
		t.Skip("no cgroup v1 pids hierarchy: sessions are cloned into their cgroups (v2)")
	}
}

// cgroupOf is the pids cgroup of a process, from the command's side.
const cgroupOf = `grep -E '^[0-9]+:pids:' /proc/self/cgroup | cut -d: -f3`

// TestForkerPreparesAhead: a thread waits in a cgroup of its own before
// each session; the session's command is born in that cgroup, under the
// session's limit; a new one is prepared for the next; Close leaves no
// cgroup and no goroutine behind.
func TestForkerPreparesAhead(t *testing.T) {
	requireV1Limit(t)
	before := runtime.NumGoroutine()
	procs := runtime.GOMAXPROCS(0)
	m := New(Config{Workspace: t.TempDir(), MaxProcesses: 50})
	// Threads blocked in a cgroup move or removal must not take every P
	// from the requests: the program runs more Ps than before.
	if got := runtime.GOMAXPROCS(0); got < procs+2 && got < runtime.NumCPU()+2 {
		t.Fatalf("GOMAXPROCS is %d with a Forker (%d before, %d CPUs): the cgroup waits can hold every P", got, procs, runtime.NumCPU())
	}
	var seen []string
	for i := 0; i < 3; i++ {
		dir := m.PreparedCgroup()
		if dir == "" {
			t.Fatalf("session %d: no thread prepared", i)
		}
		if tasks, err := os.ReadFile(filepath.Join(dir, "tasks")); err != nil || len(strings.Fields(string(tasks))) != 1 {
			t.Fatalf("session %d: the prepared cgroup %s holds %q (%v), want the one thread", i, dir, tasks, err)
		}
		seen = append(seen, dir)
		r := exec1(t, m, ExecRequest{Cmd: cgroupOf + `; cat /sys/fs/cgroup/pids$(` + cgroupOf + `)/pids.max`, Login: noLogin, Yield: 10 * time.Second})
		out := strings.Fields(r.Output)
		if len(out) != 2 || !strings.HasSuffix(dir, out[0]) || out[1] != "50" {
			t.Fatalf("session %d ran in %q, want the prepared %s with pids.max 50", i, r.Output, dir)
		}
		if next := m.PreparedCgroup(); next == "" || next == dir {
			t.Fatalf("session %d: the next thread is prepared in %q", i, next)
		}
	}
	m.Close()
	for _, dir := range seen {
		waitGone(t, dir)
	}
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines before the manager, %d after its Close", before, runtime.NumGoroutine())
		}
	}
}

// TestForkerOneCommand: a manager for one command prepares one thread,
// and none after it; an unused one is removed by Close.
func TestForkerOneCommand(t *testing.T) {
	requireV1Limit(t)
	m := New(Config{Workspace: t.TempDir(), MaxProcesses: 50, OneCommand: true})
	dir := m.PreparedCgroup()
	if dir == "" {
		t.Fatal("no thread prepared")
	}
	exec1(t, m, ExecRequest{Cmd: "true", Login: noLogin, Yield: 10 * time.Second})
	if next := m.PreparedCgroup(); next != "" {
		t.Fatalf("a one-command manager prepared another thread, in %s", next)
	}
	m.Close()
	waitGone(t, dir)

	unused := New(Config{Workspace: t.TempDir(), MaxProcesses: 50, OneCommand: true})
	dir = unused.PreparedCgroup()
	unused.Close()
	waitGone(t, dir)
}

func waitGone(t *testing.T, dir string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cgroup %s still there", dir)
		}
	}
}

// TestOrphansReaped: the program is PID 1 of its namespace, so processes
// whose parent died come to it: they are reaped (no zombie is left),
// while every session's own exit status still reaches its session —
// many at once, their orphans dying meanwhile.
func TestOrphansReaped(t *testing.T) {
	if !ptyrun.InOwnNamespace() || os.Getpid() != 1 {
		t.Skip("not PID 1 of a namespace of its own")
	}
	m := newManager(t, Config{MaxSessions: 64})
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := 0; i < 40; i++ {
		wg.Go(func() {
			code := i % 7
			// Two orphans: one that dies at once, one a little later.
			cmd := fmt.Sprintf("(exit 3) & (sleep 0.0%d; exit 4) & exit %d", i%10, code)
			r, err := m.Exec(context.Background(), ExecRequest{Cmd: cmd, Login: noLogin, Yield: 10 * time.Second})
			switch {
			case err != nil:
				errs <- err
			case r.ExitCode == nil || *r.ExitCode != code:
				errs <- fmt.Errorf("session %d: exit %v, want %d: %q", i, r.ExitCode, code, r.Output)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	self := strconv.Itoa(os.Getpid())
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var zombies []int
		for _, c := range proctree.Children(os.Getpid()) {
			if c.State == "Z" {
				zombies = append(zombies, c.Pid)
			}
		}
		if len(zombies) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("zombie children of PID %s left: %v", self, zombies)
		}
	}
}
