//go:build linux

package ptyrun

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/internal/testreq"
	"golang.org/x/sys/unix"
)

// v1Limit is a fresh session cgroup of a v1 pids hierarchy, removed when
// the test ends; the test skips where sessions get none (cgroup v2, or
// an ordinary user).
func v1Limit(tb testing.TB) *procLimit {
	tb.Helper()
	if ok, err := ProcessLimitAvailable(); !ok {
		if testreq.ProcessLimitRequired() {
			tb.Fatalf("process limit required but unavailable: %v", err)
		}
		tb.Skipf("process limit unavailable (an ordinary user without a delegated cgroup v2 subtree has none): %v", err)
	}
	if pidsRoot.v2 {
		tb.Skip("cgroup v2: sessions are cloned into their cgroup, no thread moves")
	}
	l, err := newProcLimit(0, newMarker())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.close() })
	return l
}

// onThread runs f on a locked thread of its own, never the main thread,
// which then ends (it may be left in a cgroup; the runtime would wedge
// the main thread rather than end it).
func onThread(f func()) {
	done := make(chan struct{})
	var run func()
	run = func() {
		runtime.LockOSThread() // never unlocked: the thread goes with the goroutine
		if unix.Gettid() == os.Getpid() {
			// Held while another goroutine, which then cannot get it,
			// runs f.
			onThread(f)
			runtime.UnlockOSThread()
			close(done)
			return
		}
		defer close(done)
		f()
	}
	go run()
	<-done
}

// TestJoinCgroupV1MovesTheCallingThreadOnly: joinCgroupV1 puts the thread
// that calls it in the cgroup, and no other thread of the process.
func TestJoinCgroupV1MovesTheCallingThreadOnly(t *testing.T) {
	l := v1Limit(t)
	var tid int
	var err error
	var here string
	onThread(func() {
		tid = unix.Gettid()
		if err = joinCgroupV1(l.dir); err == nil {
			here, err = threadCgroup()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if here != l.dir {
		t.Fatalf("the thread is in %s after joining %s", here, l.dir)
	}
	tasks, _ := os.ReadFile(filepath.Join(l.dir, "tasks"))
	got := []int{}
	for _, f := range strings.Fields(string(tasks)) {
		n, _ := strconv.Atoi(f)
		got = append(got, n)
	}
	if len(got) > 1 || (len(got) == 1 && got[0] != tid) {
		t.Fatalf("tasks of the cgroup = %v, want at most the thread that joined (%d)", got, tid)
	}
	if slices.Contains(got, os.Getpid()) {
		t.Fatalf("the main thread was moved too: %v", got)
	}
	if mine, err := threadCgroup(); err != nil || mine == l.dir {
		t.Fatalf("the test's own thread is in %s (%v): only the caller's should have moved", mine, err)
	}
}

// BenchmarkCgroupV1Move: a thread moving itself into a fresh v1 cgroup
// after 200 ms of quiet (the way an agent's calls come), by its number
// (which takes the kernel's lock on every thread group, and waits for an
// RCU grace period) and as "0" (joinCgroupV1), alternating; medians.
func BenchmarkCgroupV1Move(b *testing.B) {
	var byTid, bySelf []time.Duration
	move := func(self bool) time.Duration {
		l := v1Limit(b)
		var d time.Duration
		var err error
		onThread(func() {
			time.Sleep(200 * time.Millisecond)
			t0 := time.Now()
			if self {
				err = joinCgroupV1(l.dir)
			} else {
				err = os.WriteFile(filepath.Join(l.dir, "tasks"), []byte(strconv.Itoa(unix.Gettid())), 0)
			}
			d = time.Since(t0)
		})
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
	for b.Loop() {
		byTid = append(byTid, move(false))
		bySelf = append(bySelf, move(true))
	}
	med := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2]) / 1e6
	}
	t, s := med(byTid), med(bySelf)
	b.ReportMetric(t, "by-number-ms")
	b.ReportMetric(s, "self-ms")
	b.ReportMetric(t/s, "by-number/self")
}
