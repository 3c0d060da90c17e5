//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/unified-exec/unified-exec/internal/testreq"
	"github.com/unified-exec/unified-exec/policy"
	"golang.org/x/sys/unix"
)

// signalProbe is a perl script that reports, one word each, whether it
// may name the thread TID (of process PID) as a signal's target in every
// way guardForkingThread refuses, and whether it may signal itself.
const signalProbe = `
my ($pid, $tid, $tgkill, $sigqueue, $pidfd_open, $pidfd_send) = map { $_ + 0 } @ARGV;
sub r { my ($name, $rv) = @_; print $name, "=", ($rv == -1 ? ($!{EPERM} ? "EPERM" : "err:" . ($!+0)) : "ok"), "\n" }
r("kill", kill(0, $tid) ? 0 : -1);
r("self", kill(0, $$) ? 0 : -1);
r("tgkill", syscall($tgkill, $pid, $tid, 0));
my $info = "\0" x 128;
r("rt_sigqueueinfo", syscall($sigqueue, $tid, 0, $info));
r("pidfd_open", syscall($pidfd_open, $tid, 0));
r("pidfd_send_signal", syscall($pidfd_send, 1000, 0, 0, 0));
pipe(my $rd, my $wr) or die "pipe: $!";
my $owner = pack("ii", 0, $tid);
r("setown_ex", defined(fcntl($rd, 15, $owner)) ? 0 : -1);
r("setown", defined(fcntl($rd, 8, $tid)) ? 0 : -1);
r("setown_group", defined(fcntl($rd, 8, -$tid)) ? 0 : -1);
r("setown_self", defined(fcntl($rd, 8, $$ + 0)) ? 0 : -1);
my $who = pack("i", $tid);
r("fiosetown", defined(ioctl($rd, 0x8901, $who)) ? 0 : -1);
r("siocspgrp", defined(ioctl($rd, 0x8902, $who)) ? 0 : -1);
`

// probeFromThread runs signalProbe in a child forked from a locked thread
// of its own, after prepare (if any) ran there, and returns its report
// and the thread's id. The thread ends with the probe.
func probeFromThread(t *testing.T, prepare func() error) (string, int) {
	t.Helper()
	return perlFromThread(t, prepare, signalProbe, func(tid int) []string {
		return []string{fmt.Sprint(os.Getpid()), fmt.Sprint(tid),
			fmt.Sprint(unix.SYS_TGKILL), fmt.Sprint(unix.SYS_RT_SIGQUEUEINFO), fmt.Sprint(unix.SYS_PIDFD_OPEN), fmt.Sprint(unix.SYS_PIDFD_SEND_SIGNAL)}
	})
}

// perlFromThread runs the perl script in a child forked from a locked
// thread of its own, after prepare (if any) ran there, with the
// arguments args gives for the thread's id, and returns its output and
// the thread's id. The thread ends with the child.
func perlFromThread(t *testing.T, prepare func() error, script string, args func(tid int) []string) (string, int) {
	t.Helper()
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("perl is needed")
	}
	type result struct {
		out string
		tid int
		err error
	}
	done := make(chan result, 1)
	goRetired(func() { // the filtered thread ends with f
		tid := unix.Gettid()
		if prepare != nil {
			if err := prepare(); err != nil {
				done <- result{err: err}
				return
			}
		}
		cmd := exec.Command("perl", append([]string{"-e", script}, args(tid)...)...)
		out, err := cmd.CombinedOutput()
		done <- result{string(out), tid, err}
	})
	r := <-done
	if r.err != nil {
		if strings.Contains(r.err.Error(), "main thread") {
			return perlFromThread(t, prepare, script, args)
		}
		t.Fatalf("%v %s", r.err, r.out)
	}
	return r.out, r.tid
}

// TestGuardForkingThread: a command forked from a thread with the guard
// cannot name that thread as a signal's target in any way (kill, tgkill,
// rt_sigqueueinfo, a pidfd of it, fcntl F_SETOWN of its id or minus it,
// F_SETOWN_EX, ioctl FIOSETOWN and SIOCSPGRP), nor send a signal through
// any pidfd; it can still signal itself and own its files' signals. The same probe from a
// thread without the guard reaches the thread (the probe can fail).
func TestGuardForkingThread(t *testing.T) {
	refused := []string{"kill=EPERM", "tgkill=EPERM", "rt_sigqueueinfo=EPERM", "pidfd_open=EPERM", "pidfd_send_signal=EPERM", "setown_ex=EPERM", "setown=EPERM", "setown_group=EPERM", "fiosetown=EPERM", "siocspgrp=EPERM"}
	out, tid := probeFromThread(t, func() error {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return err
		}
		return guardForkingThread()
	})
	for _, want := range append(refused, "self=ok", "setown_self=ok") {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("guarded thread %d: the probe's report lacks %s:\n%s", tid, want, out)
		}
	}
	out, tid = probeFromThread(t, nil)
	for _, want := range []string{"kill=ok", "tgkill=ok", "self=ok", "setown=ok"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("unguarded thread %d: the probe's report lacks %s (it cannot tell the guard works):\n%s", tid, want, out)
		}
	}
}

// TestThreadSandboxGuardsForkingThread: a command forked from a thread
// with the whole thread sandbox of the default plan applied (Landlock,
// whose signal scope lets a process signal its own domain, which the
// thread is of) cannot signal that thread.
func TestThreadSandboxGuardsForkingThread(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the thread sandbox needs root in the program's user namespace (an ordinary user's server runs in one of its own); TestGuardForkingThread tests the filter as any user")
	}
	if err := ThreadAvailable(); err != nil {
		if testreq.Required() && os.Geteuid() == 0 {
			t.Fatalf("thread sandbox required but unavailable: %v", err)
		}
		t.Skipf("no thread sandbox here (an ordinary user has one inside the program's user namespace only): %v", err)
	}
	plan, err := Compile(policy.DefaultSandbox(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	payload, err := plan.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	out, tid := probeFromThread(t, func() error { return ApplyThread(payload, "") })
	for _, want := range []string{"kill=EPERM", "tgkill=EPERM", "pidfd_open=EPERM", "setown=EPERM", "setown_ex=EPERM", "fiosetown=EPERM", "self=ok", "setown_self=ok"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("sandboxed thread %d: the probe's report lacks %s:\n%s", tid, want, out)
		}
	}
}

// traceProbe is a perl script that reports, one word each, whether it may
// read the environment and the memory of the thread TID of process PID,
// and open or read the link of its descriptor 2 (stderr): what the
// kernel's ptrace check guards in /proc.
const traceProbe = `
my ($pid, $tid) = @ARGV;
sub r { my ($name, $ok) = @_; print $name, "=", ($ok ? "ok" : ($!{EACCES} || $!{EPERM} ? "refused" : "err:" . ($!+0))), "\n" }
r("environ", open(my $e, "<", "/proc/$pid/task/$tid/environ"));
r("mem", open(my $m, "<", "/proc/$pid/task/$tid/mem"));
r("fd", open(my $f, ">>", "/proc/$pid/task/$tid/fd/2"));
r("fdlink", defined(readlink("/proc/$pid/task/$tid/fd/2")));
`

// TestThreadSandboxUntraceable: a command forked from a thread with the
// whole thread sandbox of the default plan applied cannot read that
// thread's environment or memory, nor reach its descriptors: the thread
// shares its Landlock domain and has no capabilities left, so only the
// program's being undumpable keeps the command out. Made dumpable again
// after the thread sandbox, the same probe gets in (it can fail).
func TestThreadSandboxUntraceable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the thread sandbox needs root in the program's user namespace (an ordinary user's server runs in one of its own)")
	}
	if err := ThreadAvailable(); err != nil {
		if testreq.Required() {
			t.Fatalf("thread sandbox required but unavailable: %v", err)
		}
		t.Skipf("no thread sandbox here: %v", err)
	}
	plan, err := Compile(policy.DefaultSandbox(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	payload, err := plan.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	args := func(tid int) []string { return []string{fmt.Sprint(os.Getpid()), fmt.Sprint(tid)} }
	out, tid := perlFromThread(t, func() error {
		if err := ApplyThread(payload, ""); err != nil {
			return err
		}
		return unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0)
	}, traceProbe, args)
	for _, want := range []string{"environ=ok", "mem=ok", "fd=ok", "fdlink=ok"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("sandboxed thread %d, the program made dumpable again: the probe's report lacks %s (it cannot tell the guard works):\n%s", tid, want, out)
		}
	}
	out, tid = perlFromThread(t, func() error { return ApplyThread(payload, "") }, traceProbe, args)
	for _, want := range []string{"environ=refused", "mem=refused", "fd=refused", "fdlink=refused"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("sandboxed thread %d: the probe's report lacks %s:\n%s", tid, want, out)
		}
	}
	if d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); err != nil || d != 0 {
		t.Errorf("after a thread sandbox the program is dumpable (%d, %v)", d, err)
	}
}
