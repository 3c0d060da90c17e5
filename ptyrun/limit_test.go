//go:build linux

package ptyrun

import (
	"errors"
	"github.com/unified-exec/unified-exec/internal/testreq"
	"unsafe"

	"golang.org/x/sys/unix"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// forker forks up to 100 sleeping children and says how many it got.
const forker = `perl -e '$| = 1; my $n = 0; for (1..100) { my $p = fork; if (!defined $p) { print "refused: $!\n"; last } if ($p == 0) { sleep 30; exit 0 } $n++ } print "forked $n\n"; sleep 30'`

func requireProcessLimit(t *testing.T) {
	t.Helper()
	if ok, err := ProcessLimitAvailable(); !ok {
		if testreq.ProcessLimitRequired() {
			t.Fatalf("process limit required but unavailable: %v", err)
		}
		t.Skipf("process limit unavailable (an ordinary user without a delegated cgroup v2 subtree has none): %v", err)
	}
}

func sessionCgroups(t *testing.T) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(pidsRoot.dir, cgroupPrefix+strconv.Itoa(os.Getpid())+"-*"))
	return m
}

// TestProcessLimit: forks beyond MaxProcs fail inside the session, the
// refusals are counted, and a kill leaves no process and no cgroup.
func TestProcessLimit(t *testing.T) {
	requireProcessLimit(t)
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			var out syncBuf
			p, err := Start(Spec{Argv: []string{"/bin/bash", "-c", forker}, TTY: m.tty, Output: &out, Helper: m.helper, MaxProcs: 20})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Kill(0) })
			waitFor(t, func() bool { return strings.Contains(out.String(), "forked") })
			got := regexp.MustCompile(`forked (\d+)`).FindStringSubmatch(out.String())
			n, _ := strconv.Atoi(got[1])
			if n >= 20 || !strings.Contains(out.String(), "refused: Resource temporarily unavailable") {
				t.Fatalf("a limit of 20 let %d forks through:\n%s", n, out.String())
			}
			if p.ForksRefused() == 0 {
				t.Fatal("ForksRefused is 0 after a refused fork")
			}
			if len(sessionCgroups(t)) != 1 {
				t.Fatalf("session cgroups: %v", sessionCgroups(t))
			}
			p.Kill(100 * time.Millisecond)
			if left := sessionCgroups(t); len(left) != 0 {
				t.Fatalf("cgroup left after kill: %v", left)
			}
			if p.ForksRefused() == 0 {
				t.Fatal("the refusal count was lost with the cgroup")
			}
			if z := zombieChildren(); len(z) > 0 {
				t.Fatalf("zombies left: %v %s", z, describe(z))
			}
		})
	}
}

// TestProcessLimitUnderLimit: a session that stays under its limit runs
// as usual, and its cgroup goes when it exits on its own.
func TestProcessLimitUnderLimit(t *testing.T) {
	requireProcessLimit(t)
	var out syncBuf
	p, err := Start(Spec{Argv: []string{"/bin/bash", "-c", "echo a | cat; (sleep 0.05 &); exit 4"}, Output: &out, Helper: &Helper{Isolate: true}, MaxProcs: 50})
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if st := p.ExitStatus(); st.Code != 4 || !strings.Contains(out.String(), "a") || p.ForksRefused() != 0 {
		t.Fatalf("status %v, refused %d, output %q", st, p.ForksRefused(), out.String())
	}
	<-p.removed // the cgroup goes after the answer (see Spec.Pending)
	if left := sessionCgroups(t); len(left) != 0 {
		t.Fatalf("cgroup left after exit: %v", left)
	}
}

// TestStaleCgroupsRemoved: an empty session cgroup left long ago is
// removed by the next program; a fresh one (a session being set up) and a
// busy one are kept.
func TestStaleCgroupsRemoved(t *testing.T) {
	requireProcessLimit(t)
	stale := filepath.Join(pidsRoot.dir, cgroupPrefix+"999999999-deadbeef")
	fresh := filepath.Join(pidsRoot.dir, cgroupPrefix+strconv.Itoa(os.Getpid())+"-feedface")
	for _, d := range []string{stale, fresh} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(d)
	}
	old := time.Now().Add(-2 * staleAfter)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	var out syncBuf
	p, err := Start(Spec{Argv: []string{"/bin/sleep", "30"}, Output: &out, MaxProcs: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill(0)
	busy := p.limit.dir
	if err := os.Chtimes(busy, old, old); err != nil {
		t.Fatal(err)
	}
	removeStaleCgroups(pidsRoot.dir)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatal("the stale cgroup was kept")
	}
	for _, d := range []string{fresh, busy} {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("%s was removed", d)
		}
	}
}

// TestThreadsRetired: each session forked from a dedicated thread gives
// that thread back to the kernel once the session ends; a thread whose
// preparation failed is retired at once, and the session is not started.
func TestThreadsRetired(t *testing.T) {
	threads := func() int {
		e, _ := os.ReadDir("/proc/self/task")
		return len(e)
	}
	// The thread's name stands for what a sandbox applies to it: no
	// thread may keep it once its session is over.
	marked := &Helper{Payload: []byte("{}"), Thread: func([]byte, string) error {
		name := []byte("ue-marked\x00")
		return unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&name[0])), 0, 0, 0)
	}}
	markedThreads := func() int {
		n := 0
		tasks, _ := filepath.Glob("/proc/self/task/*/comm")
		for _, c := range tasks {
			if b, _ := os.ReadFile(c); strings.TrimSpace(string(b)) == "ue-marked" {
				n++
			}
		}
		return n
	}
	run(t, mode{"warm-up", false, threadHelper()}, "true")
	before := threads()
	for i := 0; i < 20; i++ {
		if out, st := run(t, mode{"thread", i%2 == 0, marked}, "echo ok"); st.Code != 0 || !strings.Contains(out, "ok") {
			t.Fatalf("%v %q", st, out)
		}
	}
	waitFor(t, func() bool { return markedThreads() == 0 })
	failing := &Helper{Payload: []byte("{}"), Thread: func([]byte, string) error { return errors.New("no sandbox today") }}
	if _, err := Start(Spec{Argv: []string{"/bin/true"}, Helper: failing}); err == nil || !strings.Contains(err.Error(), "no sandbox today") {
		t.Fatalf("a failed thread sandbox started the command: %v", err)
	}
	waitFor(t, func() bool { return threads() <= before+2 })
	if z := zombieChildren(); len(z) > 0 {
		t.Fatalf("zombies left: %v", z)
	}
}
