//go:build linux

package ptyrun

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"

	"github.com/unified-exec/unified-exec/internal/testreq"
	"github.com/unified-exec/unified-exec/internal/userns"
)

// ownPIDsEnv marks a test binary that ownPIDNamespace ran again as PID 1
// of a PID namespace of its own.
const ownPIDsEnv = "UNIFIED_EXEC_TEST_OWN_PIDS"

// enterOwnPIDs, called from TestMain, gives the test binary re-run by
// ownPIDNamespace a /proc of its namespace (the numbers a session sees and
// kills are the namespace's). It exits on failure.
func enterOwnPIDs() {
	if os.Getenv(ownPIDsEnv) != "1" {
		return
	}
	if os.Getpid() != 1 {
		os.Stderr.WriteString(ownPIDsEnv + " set outside a PID namespace of the test's own\n")
		os.Exit(2)
	}
	if err := mountProc(); err != nil {
		os.Stderr.WriteString("own PID namespace: " + err.Error() + "\n")
		os.Exit(2)
	}
}

// ownPIDNamespace runs the calling top-level test again, alone, in a PID
// (and mount) namespace of its own, where it may hand chosen numbers to
// new processes (ns_last_pid): nothing but the test forks there, so no
// other process takes the number first, as on a busy machine — and an
// ordinary user can do it too (through a user namespace). It returns true
// in that run, where the test does its work; in the outer run it returns
// false once the inner run passed, and fails the test if it did not pass
// (a skip inside counts as a failure).
func ownPIDNamespace(t *testing.T) bool {
	t.Helper()
	if os.Getenv(ownPIDsEnv) == "1" {
		return true
	}
	kind, err := userns.Probe()
	if kind == userns.None {
		if testreq.Required() {
			t.Fatalf("a PID namespace is required to hand out chosen pids: %v", err)
		}
		t.Skipf("no PID namespace to hand out chosen pids in: %v", err)
	}
	cmd := exec.Command("/proc/self/exe", "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), ownPIDsEnv+"=1")
	cmd.SysProcAttr = userns.Attr(kind, 0)
	// The parent-death signal follows the thread that forked: keep it
	// until the run is over.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	runtime.LockOSThread()
	out, err := cmd.CombinedOutput()
	runtime.UnlockOSThread()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: "+t.Name()+" ")) {
		t.Fatalf("the run in a PID namespace of its own did not pass (%v):\n%s", err, out)
	}
	t.Logf("passed in a PID namespace of its own:\n%s", out)
	return false
}

// A newcomer is a process handed a chosen number (see handPid).
type newcomer struct {
	cmd  *exec.Cmd
	stop io.WriteCloser
}

// handPid starts a process numbered pid that leads a session of its own
// (its group and session numbered as it is, as every session leader's
// are), and exits 7 once told to (see survived). In the test's own PID
// namespace (see ownPIDNamespace) only the test itself could take the
// number first: a thread the runtime starts between a write of
// ns_last_pid and the fork (a thread sandbox's forking thread retires,
// and the runtime makes another) — under load it did, 20 times in a row.
// So a shell, one thread, writes ns_last_pid and forks at once; the
// newcomer is its child (setsid execs in place: a background job leads
// no group), and the shell exits with the newcomer's status.
func handPid(t *testing.T, pid int) *newcomer {
	t.Helper()
	script := fmt.Sprintf(`exec 3<&0
echo %d > /proc/sys/kernel/ns_last_pid || exit 99
setsid sh -c 'read line; exit 7' <&3 &
echo $!
wait $!`, pid-1)
	for try := 0; try < 20; try++ {
		c := exec.Command("/bin/sh", "-c", script)
		w, err := c.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := c.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		var got int
		if _, err := fmt.Fscan(out, &got); err != nil {
			w.Close()
			c.Wait()
			t.Fatalf("the shell that hands out pid %d said no number: %v (%v)", pid, err, c.ProcessState)
		}
		if got == pid {
			t.Cleanup(func() { c.Process.Kill(); w.Close(); c.Wait() })
			return &newcomer{c, w}
		}
		w.Close()
		c.Wait()
	}
	t.Fatalf("could not hand pid %d to a new process in 20 tries, in a PID namespace of the test's own", pid)
	return nil
}

// survived tells the newcomer to exit and fails the test unless it
// exits as told: a signal sent to it before (kill(2) has made it pending,
// or the process is already dying) ends it first, whatever the timing.
func (n *newcomer) survived(t *testing.T, what string) {
	t.Helper()
	n.stop.Close()
	n.cmd.Wait()
	if st := n.cmd.ProcessState; st.ExitCode() != 7 {
		t.Fatalf("%s: the new process numbered %d (with its own group and session) was signalled: %v", what, n.cmd.Process.Pid, st)
	}
}

// TestKillAfterExitSparesReusedPid: a session killed (or closed with its
// manager) long after it ended must not signal the process that now has
// its leader's number, nor that process's group or session. The number
// is handed to a new process on purpose (ns_last_pid): the kernel reuses
// numbers once pid_max wraps, which a busy machine does within a minute.
func TestKillAfterExitSparesReusedPid(t *testing.T) {
	if !ownPIDNamespace(t) {
		return
	}
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			var out syncBuf
			p, err := Start(Spec{Argv: []string{"/bin/true"}, TTY: m.tty, Output: &out, Helper: m.helper})
			if err != nil {
				t.Fatal(err)
			}
			<-p.Done()
			other := handPid(t, p.Pid())
			p.Kill(0)
			p.Signal(syscall.SIGKILL)
			other.survived(t, "Kill after the session ended")
		})
	}
}

// TestKillWhileDrainingSparesReusedPid: between the reaping of the leader
// and the end of the drain of its output (which waits for the output
// sink), the leader's number is free and may be a new process's — one
// that leads a session of its own, as the commands of any other program
// running unified-exec do. A Kill then (a manager closing, a timeout)
// must not reach it, its group or its session. Before the fix it did:
// killTree signalled the number until the session was done.
func TestKillWhileDrainingSparesReusedPid(t *testing.T) {
	if !ownPIDNamespace(t) {
		return
	}
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			release := make(chan struct{})
			// The sink holds the pump at the first output: the session
			// stays between reaped and done until it is released.
			sink := writerFunc(func(b []byte) (int, error) { <-release; return len(b), nil })
			p, err := Start(Spec{Argv: []string{"/bin/bash", "-c", "echo out"}, TTY: m.tty, Output: sink, Helper: m.helper})
			if err != nil {
				t.Fatal(err)
			}
			released := false
			defer func() {
				if !released {
					close(release)
				}
				p.Kill(0)
			}()
			<-p.Exited() // reaped
			select {
			case <-p.Done():
				t.Fatal("the session is done with its output sink blocked")
			default:
			}
			other := handPid(t, p.Pid())
			// What Kill does once the leader has exited (Kill itself would
			// then wait for the drain, held by the sink).
			p.killTree(syscall.SIGKILL)
			p.Signal(syscall.SIGKILL)
			close(release)
			released = true
			p.Kill(0)
			other.survived(t, "a kill while the output drained")
		})
	}
}
