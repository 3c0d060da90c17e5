package ptyrun

import (
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// As PID 1 of its namespace (EnterNamespace) the program is the parent of
// every process there whose own parent died: it must reap them, or their
// zombies would fill the process table. It must never reap a child of
// its own, though, whose owner waits for it (os/exec): children tracks
// those. A fork holds spawning for reading until its child is recorded,
// and the reaper holds it for writing while it looks, so it never sees a
// child of ours that is not yet recorded.
var children struct {
	spawning sync.RWMutex
	// mu guards owned.
	mu    sync.Mutex
	owned map[int]bool
}

// startChild starts cmd, recording its process as one whose owner reaps
// it: neither the reaper nor a session's end (reapOrphans, which waits for
// numbers it saw earlier and that may be another child's by now) ever
// reaps it.
func startChild(cmd *exec.Cmd) error {
	children.spawning.RLock()
	defer children.spawning.RUnlock()
	err := cmd.Start()
	if err == nil {
		children.mu.Lock()
		if children.owned == nil {
			children.owned = map[int]bool{}
		}
		children.owned[cmd.Process.Pid] = true
		children.mu.Unlock()
	}
	return err
}

// reaped says that the owner of a child recorded by startChild has reaped
// it (its Wait returned): the number may now be another's.
func reaped(pid int) {
	children.mu.Lock()
	delete(children.owned, pid)
	children.mu.Unlock()
	if insideOwn {
		// A new orphan may have died under this number meanwhile.
		reapUnowned()
	}
}

// reapIfUnowned reaps pid if it is a zombie child of ours that no owner
// waits for; it returns what wait4 did (0 and no error: still running,
// or someone else's to reap).
func reapIfUnowned(pid int) (int, error) {
	children.spawning.Lock()
	defer children.spawning.Unlock()
	children.mu.Lock()
	mine := children.owned[pid]
	children.mu.Unlock()
	if mine {
		return 0, nil
	}
	var ws syscall.WaitStatus
	return syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
}

// EndStrays kills every process left in the program's own namespace (the
// program is its PID 1) and returns true once none is: for a program that
// runs one command, after it. A descendant that left the command's tree
// (a daemon that double-forked: an ordinary user has no process-limit
// cgroup to end it by) would otherwise run on until the program exits,
// after the last look at what the command left: one planted repositories
// with hooks after the wrapper's git check, and some were not told
// (session 17). It returns false, doing nothing, where the program is in
// no namespace of its own, and when a process outlives endStraysGrace
// (one stuck in the kernel).
func EndStrays() bool {
	if !insideOwn || os.Getpid() != 1 {
		return false
	}
	for deadline := time.Now().Add(endStraysGrace); ; {
		// From PID 1, kill(-1) reaches every other process of the
		// namespace (of the namespaces below too), zombies included,
		// and fails with ESRCH once there is none.
		if err := syscall.Kill(-1, syscall.SIGKILL); err == syscall.ESRCH {
			return true
		}
		reapUnowned()
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// endStraysGrace bounds EndStrays' wait for the processes it killed.
const endStraysGrace = 2 * time.Second

// startReaper reaps the namespace's orphans on every SIGCHLD. It runs
// for the life of the process, which is the namespace's.
func startReaper() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGCHLD)
	go func() {
		for range sigs {
			reapUnowned()
		}
	}()
}

// reapUnowned reaps every zombie child that no owner waits for.
func reapUnowned() {
	children.spawning.Lock()
	defer children.spawning.Unlock()
	d, err := os.Open("/proc")
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	self := os.Getpid()
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid == self {
			continue
		}
		state, ppid, _, _ := procStat(pid)
		if state != "Z" || ppid != self {
			continue
		}
		children.mu.Lock()
		mine := children.owned[pid]
		children.mu.Unlock()
		if !mine {
			var ws syscall.WaitStatus
			syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		}
	}
}

// ownedChild reports whether pid is a child of ours whose owner reaps it.
func ownedChild(pid int) bool {
	children.mu.Lock()
	defer children.mu.Unlock()
	return children.owned[pid]
}

// RunOwned runs cmd as cmd.Run does, recorded as a child its caller
// waits for, which the reaper of a program in its own namespace
// (EnterNamespace) leaves alone.
func RunOwned(cmd *exec.Cmd) error {
	if err := startChild(cmd); err != nil {
		return err
	}
	err := cmd.Wait()
	reaped(cmd.Process.Pid)
	return err
}
