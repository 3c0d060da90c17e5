package ptyrun

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// batch is set while the process runs under SCHED_BATCH (BatchScheduling):
// commands are then forked from a thread put back to SCHED_OTHER.
var batch atomic.Bool

// BatchScheduling puts every thread of this process under SCHED_BATCH
// (on) or back under SCHED_OTHER (off); threads created later inherit it.
// Commands started afterwards still run under SCHED_OTHER.
//
// Why: each command is a session of its own (setsid), hence, where the
// kernel groups sessions for scheduling (autogroup), a group of its own
// that competes with the server's. A server woken for every page a
// command writes then preempts the command, reads a few KiB at a time and
// spends a third more CPU per byte than a reader in the command's group
// would (measured: 310 ms against 220 ms of CPU for 64 MiB through a
// pipe, on 2 cores). A SCHED_BATCH thread is never woken in preemption of
// the running task: output waits for the command's slice to end and is
// read in larger pieces. The server's weight is unchanged, and an idle
// CPU still runs it at once.
func BatchScheduling(on bool) error {
	from, to := uint32(unix.SCHED_NORMAL), uint32(unix.SCHED_BATCH)
	if !on {
		from, to = to, from
	}
	batch.Store(on)
	// The runtime's template thread, which makes the threads a locked
	// thread needs, is made by the first LockOSThread, from whichever
	// thread calls it: made now, before the passes, not after the last
	// one by a spare being prepared beside them (it and every thread it
	// made later kept the old policy: seen once in CI).
	runtime.LockOSThread()
	runtime.UnlockOSThread()
	// A thread being created while the list is read may be missed and
	// inherit the old policy from its creator: go over the list until a
	// pass finds nothing to change. Threads under another policy (real
	// time, idle) are left as they are, and so is their nice value.
	for pass := 0; pass < 10; pass++ {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("scheduling: %w", err)
		}
		changed := 0
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			ok, err := switchPolicy(tid, from, to)
			if err != nil {
				return fmt.Errorf("scheduling thread %d: %w", tid, err)
			}
			if ok {
				changed++
			}
		}
		if changed == 0 {
			return nil
		}
	}
	return fmt.Errorf("scheduling: threads kept starting under the old policy through 10 passes over /proc/self/task")
}

// switchPolicy moves thread tid (0: the caller) from policy from to
// policy to, keeping its nice value; it reports whether it did. A thread
// that ended meanwhile is no error.
func switchPolicy(tid int, from, to uint32) (bool, error) {
	a, err := unix.SchedGetAttr(tid, 0)
	if err == unix.ESRCH {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if a.Policy != from {
		return false, nil
	}
	a.Policy = to
	a.Size = unix.SizeofSchedAttr
	err = unix.SchedSetAttr(tid, a, 0)
	if err == unix.ESRCH {
		return false, nil
	}
	return err == nil, err
}

// forkPolicy readies the calling (locked) thread to fork a command: under
// BatchScheduling it goes back to SCHED_OTHER, which the child inherits.
// restore undoes it, for a thread that is to be reused; it reports false
// when it could not, and the thread must then be retired.
func forkPolicy() (restore func() bool, err error) {
	if !batch.Load() {
		return func() bool { return true }, nil
	}
	changed, err := switchPolicy(0, unix.SCHED_BATCH, unix.SCHED_NORMAL)
	if err != nil {
		return nil, fmt.Errorf("scheduling the forking thread: %w", err)
	}
	return func() bool {
		if !changed {
			return true
		}
		ok, err := switchPolicy(0, unix.SCHED_NORMAL, unix.SCHED_BATCH)
		return ok && err == nil
	}, nil
}
