//go:build linux

package ptyrun

import (
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestReaperSparesOwned: the reaper of a namespace's init reaps a zombie
// child nobody waits for, and never one started through startChild,
// whose owner then still gets its exit status.
func TestReaperSparesOwned(t *testing.T) {
	insideOwn = true
	defer func() { insideOwn = false }()

	owned, orphan := ownedAndOrphan(t)

	reapUnowned()

	if _, err := os.Stat("/proc/" + strconv.Itoa(orphan)); !os.IsNotExist(err) {
		t.Fatalf("the unowned zombie %d was not reaped", orphan)
	}
	err := owned.Wait()
	reaped(owned.Process.Pid)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
		t.Fatalf("the owner of a child got %v, want exit status 7", err)
	}
}

// ownedAndOrphan makes two zombie children: one started through
// startChild (its owner reaps it: exit status 7) and one nobody owns.
func ownedAndOrphan(t *testing.T) (owned *exec.Cmd, orphan int) {
	t.Helper()
	owned = exec.Command("/bin/sh", "-c", "exit 7")
	if err := startChild(owned); err != nil {
		t.Fatal(err)
	}
	orphan, err := syscall.ForkExec("/bin/true", []string{"true"}, &syscall.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	waitZombie(t, owned.Process.Pid)
	waitZombie(t, orphan)
	return owned, orphan
}

func waitZombie(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if state, _, _, _ := procStat(pid); state == "Z" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d never became a zombie", pid)
		}
	}
}

// TestSessionEndSparesOthers: the end of a session forked from a thread
// whose sandbox made no namespace of its own kills the session's
// processes only, never another process of the user that shares the
// program's mount namespace (the kill finds a session by its own mount
// namespace only when it has one).
func TestSessionEndSparesOthers(t *testing.T) {
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	for _, tty := range []bool{false, true} {
		p, err := Start(Spec{Argv: []string{"/bin/sh", "-c", "sleep 0.1 & true"}, TTY: tty, Output: io.Discard, Helper: threadHelper()})
		if err != nil {
			t.Fatal(err)
		}
		<-p.Done()
		p.Kill(0)
	}
	time.Sleep(100 * time.Millisecond)
	if err := syscall.Kill(other.Process.Pid, 0); err != nil {
		t.Fatalf("another process of the user died with a session: %v", err)
	}
	if state, _, _, _ := procStat(other.Process.Pid); state == "Z" {
		t.Fatal("another process of the user was killed with a session")
	}
}

// TestSessionMountNSReleased: a session whose thread made a mount
// namespace of its own is found by it while it lives, and holds it open
// (its number cannot be another's meanwhile); once the session is gone
// it names nothing, so a late kill cannot reach a later session that got
// the number.
func TestSessionMountNSReleased(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: a thread needs CAP_SYS_ADMIN to make a mount namespace outside a program namespace")
	}
	unshare := &Helper{Payload: []byte("{}"), Thread: func([]byte, string) error {
		return syscall.Unshare(syscall.CLONE_NEWNS | syscall.CLONE_FS)
	}}
	p, err := Start(Spec{Argv: []string{"/bin/sh", "-c", "sleep 30"}, Output: io.Discard, Helper: unshare})
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	ns, held := p.mntNS, p.mntFile != nil
	p.mu.Unlock()
	own, _ := os.Readlink("/proc/self/ns/mnt")
	if ns == "" || ns == own || !held {
		t.Fatalf("the session's mount namespace %q (the process's %q), held open %v", ns, own, held)
	}
	if got, _ := os.Readlink("/proc/" + strconv.Itoa(p.Pid()) + "/ns/mnt"); got != ns {
		t.Fatalf("the command is in %q, the session's is %q", got, ns)
	}
	p.Kill(0)
	p.mu.Lock()
	ns, held = p.mntNS, p.mntFile != nil
	p.mu.Unlock()
	if ns != "" || held {
		t.Fatalf("after the session: its mount namespace %q, held open %v", ns, held)
	}
}

// TestOrphanReapSparesOwned: a session's end waits for the numbers it saw
// (reapOrphans); one of them may belong by then to another session's
// leader, a child of ours that its owner waits for. That child, even a
// zombie at that moment, is left to its owner, who still gets its exit
// status; a zombie nobody owns is reaped.
func TestOrphanReapSparesOwned(t *testing.T) {
	owned, orphan := ownedAndOrphan(t)

	reapOrphans([]int{owned.Process.Pid, orphan})

	if _, err := os.Stat("/proc/" + strconv.Itoa(orphan)); !os.IsNotExist(err) {
		t.Fatalf("the unowned zombie %d was not reaped", orphan)
	}
	err := owned.Wait()
	reaped(owned.Process.Pid)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
		t.Fatalf("the owner of a child got %v, want exit status 7", err)
	}
}

// TestSeenProcIdentity: a process seen at a kill is told from a later one
// given the same number by its start time.
func TestSeenProcIdentity(t *testing.T) {
	c := exec.Command("sleep", "30")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pid := c.Process.Pid
	seen := seenProc{pid, procStart(pid)}
	if seen.start == 0 || !seen.same() {
		t.Fatalf("a live process is not the one seen: %+v", seen)
	}
	if (seenProc{pid, seen.start + 1}).same() {
		t.Fatal("a process with another start time passed for the one seen")
	}
	c.Process.Kill()
	c.Wait()
	if seen.same() {
		t.Fatal("a reaped process passed for the one seen")
	}
}

// TestRunOwned: a child the program runs itself with RunOwned gets its
// exit status however busy the reaper is; one run with cmd.Run loses it
// (the reaper takes the zombie first: ECHILD), which is why RunOwned is
// there.
func TestRunOwned(t *testing.T) {
	insideOwn = true
	defer func() { insideOwn = false }()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				reapUnowned()
			}
		}
	}()
	defer func() { close(stop); <-done }()
	for i := range 100 {
		err := RunOwned(exec.Command("/bin/sh", "-c", "exit 3"))
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
			t.Fatalf("run %d: got %v, want exit status 3", i, err)
		}
	}
	lost := 0
	for range 100 {
		if _, ok := exec.Command("/bin/sh", "-c", "exit 3").Run().(*exec.ExitError); !ok {
			lost++
		}
	}
	t.Logf("plain cmd.Run lost %d exit statuses in 100 beside the same reaper", lost)
}

// TestEndStrays: as PID 1 of its namespace, EndStrays kills what is left
// there — daemons that double-forked into sessions of their own, a zombie
// nobody owns — and returns once nothing is; outside one it does nothing
// and says so.
func TestEndStrays(t *testing.T) {
	if os.Getpid() != 1 && EndStrays() {
		t.Fatal("EndStrays acted outside a namespace of the program's own")
	}
	if !ownPIDNamespace(t) {
		return
	}
	insideOwn = true
	defer func() { insideOwn = false }()
	if os.Getpid() != 1 {
		t.Fatalf("the run in its own PID namespace is pid %d", os.Getpid())
	}
	for range 3 {
		// A daemon: its parent exits at once, it leads a session of its own.
		if err := exec.Command("/bin/sh", "-c", "setsid sleep 60 </dev/null >/dev/null 2>&1 &").Run(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := syscall.ForkExec("/bin/true", []string{"true"}, &syscall.ProcAttr{}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(-1, 0); err != nil {
		t.Fatalf("no process left before EndStrays (the test cannot tell): %v", err)
	}
	if !EndStrays() {
		t.Fatal("EndStrays gave up")
	}
	if err := syscall.Kill(-1, 0); err != syscall.ESRCH {
		t.Fatalf("a process is left after EndStrays: kill(-1, 0) = %v", err)
	}
}
