//go:build linux

package ptyrun

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// threadPolicies maps each thread of this process to its policy.
func threadPolicies(t *testing.T) map[int]uint32 {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	m := map[int]uint32{}
	for _, e := range ents {
		tid, _ := strconv.Atoi(e.Name())
		a, err := unix.SchedGetAttr(tid, 0)
		if err == unix.ESRCH {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		m[tid] = a.Policy
	}
	return m
}

func allPolicy(t *testing.T, want uint32) bool {
	for _, p := range threadPolicies(t) {
		if p != want {
			return false
		}
	}
	return true
}

func requirePolicy(t *testing.T, want uint32, when string) {
	t.Helper()
	for tid, p := range threadPolicies(t) {
		if p != want {
			t.Errorf("%s: thread %d has policy %d, want %d", when, tid, p, want)
		}
	}
}

// Under BatchScheduling every thread of the server, those created later
// too, is SCHED_BATCH, and every command still starts SCHED_OTHER, on
// every way of starting one; the threads that forked and are reused are
// BATCH again.
func TestBatchScheduling(t *testing.T) {
	if err := BatchScheduling(true); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := BatchScheduling(false); err != nil {
			t.Fatal(err)
		}
		requirePolicy(t, unix.SCHED_NORMAL, "after BatchScheduling(false)")
	}()
	requirePolicy(t, unix.SCHED_BATCH, "after BatchScheduling(true)")

	// New threads: more goroutines holding their threads than there are
	// threads make the runtime start some.
	before := threadPolicies(t)
	var wg sync.WaitGroup
	release := make(chan struct{})
	tids := make(chan int, len(before)+4)
	for i := 0; i < cap(tids); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tids <- unix.Gettid()
			<-release
		}()
	}
	fresh := 0
	for i := 0; i < cap(tids); i++ {
		tid := <-tids
		_, old := before[tid]
		if !old {
			fresh++
		}
		a, err := unix.SchedGetAttr(tid, 0)
		if err != nil {
			t.Fatal(err)
		}
		if a.Policy != unix.SCHED_BATCH {
			t.Errorf("thread %d (started before: %v) has policy %d, want SCHED_BATCH", tid, old, a.Policy)
		}
	}
	close(release)
	wg.Wait()
	if fresh == 0 {
		t.Fatal("no new thread was started")
	}

	// Field 41 of stat is the policy: 0 SCHED_OTHER, 3 SCHED_BATCH.
	const script = `read -r line < /proc/$$/stat; set -- ${line##*) }; shift 38; echo "policy=$1"`
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			out, st := run(t, m, script)
			if st.Code != 0 || !strings.Contains(out, "policy=0") {
				t.Fatalf("the command's policy: got %q %v, want policy=0", out, st)
			}
			// A thread retired after the fork (a thread sandbox's)
			// stays SCHED_OTHER until it is gone; any other would
			// stay.
			deadline := time.Now().Add(10 * time.Second)
			for !allPolicy(t, unix.SCHED_BATCH) && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			requirePolicy(t, unix.SCHED_BATCH, "after starting a command")
		})
	}
}
