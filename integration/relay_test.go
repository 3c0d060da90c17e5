//go:build linux

package integration

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// startWrapped starts the wrapper on script (bash) and waits until it has
// printed "ready" and a process with tag in its command line runs. It
// returns the wrapper's process, its output and a channel that gets
// Wait's outcome.
func startWrapped(t *testing.T, script, tag string) (*exec.Cmd, *lockedBuffer, chan error) {
	t.Helper()
	cmd := exec.Command(binary, "--workspace", t.TempDir(), "--", "bash", "-c", script)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		done <- nil
	})
	waitFor(t, func() bool { return strings.Contains(out.String(), "ready") && len(procsWith(tag)) > 0 })
	return cmd, &out, done
}

// statusField is the value of a field of /proc/PID/status.
func statusField(t *testing.T, pid int, field string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return ""
}

// relayChild is the one child of the wrapper's first process: the program.
func relayChild(t *testing.T, relay int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", relay, relay))
	if err != nil {
		t.Fatal(err)
	}
	kids := strings.Fields(string(b))
	if len(kids) != 1 {
		t.Fatalf("the wrapper's first process has children %q, want the program alone", kids)
	}
	pid, _ := strconv.Atoi(kids[0])
	return pid
}

// TestWrapRelayStartsOnce: the wrapper starts its binary once. The first
// process makes the program's namespaces and waits in C, before the Go
// runtime starts (one thread: a Go process has several); the program, its
// one child, is PID 1 of a new PID namespace, and the binary is executed
// by neither again (the child's program is the same executable image, not
// a new start of it).
func TestWrapRelayStartsOnce(t *testing.T) {
	requireSandbox(t)
	tag := fmt.Sprintf("42%d.%d", rand.IntN(1000), rand.IntN(1000))
	cmd, _, _ := startWrapped(t, "echo ready; sleep "+tag, tag)
	relay := cmd.Process.Pid
	if th := statusField(t, relay, "Threads"); th != "1" {
		t.Errorf("the relay runs %s threads: the Go runtime started in it", th)
	}
	program := relayChild(t, relay)
	if ns := strings.Fields(statusField(t, program, "NSpid")); len(ns) < 2 || ns[len(ns)-1] != "1" {
		t.Errorf("the program is not PID 1 of a namespace of its own: NSpid %q", ns)
	}
	for _, pid := range []int{relay, program} {
		// A process started by exec of the binary has its name in
		// comm; the program is a copy made by clone, named the same.
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(comm)) != filepath.Base(binary)[:min(15, len(filepath.Base(binary)))] {
			t.Errorf("process %d is %q, not the wrapper's binary", pid, comm)
		}
	}
}

// TestWrapRelayProgramKilled: the program killed (SIGKILL, as by the OOM
// killer): the command's tree dies with its namespace, the wrapper exits
// 128+9, and the process-limit cgroups the program made for it are
// removed.
func TestWrapRelayProgramKilled(t *testing.T) {
	requireSandbox(t)
	tag := fmt.Sprintf("43%d.%d", rand.IntN(1000), rand.IntN(1000))
	cmd, out, done := startWrapped(t, "echo ready; sleep "+tag, tag)
	relay := cmd.Process.Pid
	own, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/pids/unified-exec-%d-*", relay))
	if os.Getuid() == 0 && isDir("/sys/fs/cgroup/pids") && len(own) == 0 {
		t.Fatalf("no process-limit cgroup of the wrapper's under /sys/fs/cgroup/pids while its command runs")
	}
	program := relayChild(t, relay)
	if err := syscall.Kill(program, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-done:
		done <- err
	case <-time.After(10 * time.Second):
		t.Fatalf("the wrapper did not end in 10 s after its program was killed: %s", out)
	}
	if cmd.ProcessState.ExitCode() != 128+9 {
		t.Errorf("exit code %d after the program was killed, want 137 (%v): %s", cmd.ProcessState.ExitCode(), err, out)
	}
	if left := procsWith(tag); len(left) > 0 {
		t.Errorf("the command outlived the program: %v", left)
	}
	for _, dir := range own {
		if isDir(dir) {
			t.Errorf("the process-limit cgroup %s is left after the program was killed", dir)
		}
	}
	if len(own) == 0 {
		t.Log("no process-limit cgroup here (cgroup v2 or not root): only the end of the command and the exit code were checked")
	}
}

// subreaperCaller runs argv as a supervisor does that is a child
// subreaper (PR_SET_CHILD_SUBREAPER: systemd, tini, a CI runner): orphans
// of its descendants become its children. It prints the exit code, then
// what else it was left to reap once argv had returned: "none", or the
// pid of a process it adopted.
const subreaperCaller = `import ctypes, os, subprocess, sys
if ctypes.CDLL(None).prctl(36, 1, 0, 0, 0) != 0:
    sys.exit("prctl(PR_SET_CHILD_SUBREAPER) failed")
code = subprocess.run(sys.argv[1:]).returncode
try:
    pid, _ = os.waitpid(-1, os.WNOHANG)
    left = "adopted a process still running" if pid == 0 else "adopted %d" % pid
except ChildProcessError:
    left = "none"
print(code, left)
`

// TestWrapLeavesNoProcessForTheCaller (red team of session 21): when the
// wrapper's caller sees it end, no process of the wrapper's is left for
// the caller to reap, its own program included, and nothing the command
// left in the background either: a supervisor that reaps orphans
// (a subreaper) adopts none, so a container's init that reaps only its
// own children gathers no zombies, and the caller's cgroup is empty. A
// relay that exited on the program's word, before the kernel had ended
// the program, left exactly that. Exit codes as the kernel passes them
// on (the low byte), with both relays.
func TestWrapLeavesNoProcessForTheCaller(t *testing.T) {
	requireSandbox(t)
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 to be the subreaper caller")
	}
	for _, relay := range relays {
		for _, c := range []struct{ code, want int }{{0, 0}, {7, 7}, {300, 44}} {
			t.Run(fmt.Sprintf("relay=%s/exit=%d", relay, c.code), func(t *testing.T) {
				tag := fmt.Sprintf("45%d.%d", rand.IntN(1000), rand.IntN(1000))
				cmd := exec.Command(py, "-c", subreaperCaller, binary, "--workspace", t.TempDir(), "--", "bash", "-c",
					fmt.Sprintf("sleep %s & disown; exit %d", tag, c.code))
				cmd.Env = envWithout(os.Environ(), "UNIFIED_EXEC_NO_RELAY")
				if relay != "" {
					cmd.Env = append(cmd.Env, relay)
				}
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("the caller: %v %s", err, out)
				}
				if got, want := strings.TrimSpace(string(out)), fmt.Sprintf("%d none", c.want); got != want {
					t.Errorf("the caller saw %q, want %q (exit code, then what was left to reap)", got, want)
				}
				if left := procsWith(tag); len(left) > 0 {
					t.Errorf("the command's background process %v ran on after the wrapper ended", left)
				}
			})
		}
	}
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// relays are the environments that pick each relay: the C one, and the Go
// one it replaced (kept as the fallback).
var relays = []string{"", "UNIFIED_EXEC_NO_RELAY=1"}

// hostStarted is argv started the way a host that left some signal state
// behind starts it: python3 runs state (statements of its signal module:
// dispositions, masks, alarms all survive execve), then executes argv,
// with env added to the environment when not empty.
func hostStarted(t *testing.T, state, env string, argv ...string) *exec.Cmd {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 to start the binary with a signal state of the host's")
	}
	script := "import os,signal,sys\n" + state + "\nos.execv(sys.argv[1], sys.argv[1:])"
	cmd := exec.Command(py, append([]string{"-c", script}, argv...)...)
	if env != "" {
		cmd.Env = append(cmd.Environ(), env)
	}
	return cmd
}

// TestWrapRelayIgnoredSIGCHLD (red team 36): started by a host that
// ignores SIGCHLD (inherited SIG_IGN, as python daemons, nohup-like
// launchers do), the wrapper still exits with its command's code. A relay
// that kept the inherited SIG_IGN found no child to wait for (the kernel
// reaps a child at once then) and exited 125, skipping the terminal's
// restore and the removal of a killed program's cgroups. Both relays are
// held to it.
func TestWrapRelayIgnoredSIGCHLD(t *testing.T) {
	requireSandbox(t)
	for _, env := range relays {
		cmd := hostStarted(t, "signal.signal(signal.SIGCHLD, signal.SIG_IGN)", env, binary, "--workspace", t.TempDir(), "--", "sh", "-c", "echo out; exit 7")
		out, _ := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 7 || !strings.Contains(string(out), "out") {
			t.Errorf("%s: SIGCHLD ignored by the host: exit code %d, want the command's 7; output %q", env, code, out)
		}
	}
}

// TestWrapRelayBlockedSIGTERM (red team 36): a host whose signal mask
// blocks SIGTERM when it starts the wrapper (a signalfd-style supervisor
// that forgot to unblock it: the mask survives fork and execve) can still
// stop it with SIGTERM: the wrapper passes it on to its command, whose
// trap runs (exit 5). A relay that restored the inherited mask after
// installing its handlers kept SIGTERM blocked forever.
func TestWrapRelayBlockedSIGTERM(t *testing.T) {
	requireSandbox(t)
	for _, env := range relays {
		cmd := hostStarted(t, "signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])", env, binary, "--workspace", t.TempDir(), "--", "bash", "-c", `trap "echo gotTERM; exit 5" TERM; echo ready; sleep 30 & wait`)
		var out lockedBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		waitFor(t, func() bool { return strings.Contains(out.String(), "ready") })
		time.Sleep(300 * time.Millisecond) // the trap is set before "ready"; the program's handlers long before
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
			if code := cmd.ProcessState.ExitCode(); code != 5 || !strings.Contains(out.String(), "gotTERM") {
				t.Errorf("%s: SIGTERM (blocked by the host): exit %d, want the trap's 5; output %q", env, code, out.String())
			}
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("%s: SIGTERM (blocked in the mask the host gave) never reached the command: still running 5 s later; output %q", env, out.String())
		}
	}
}

// TestWrapRelayPendingAlarm (red team 36): an alarm the host armed
// before executing the wrapper survives execve; SIGALRM (default action:
// terminate) then goes to the relay. It ignores the signals it does not
// pass on, as the Go relay did (Go programs do), and the command runs to
// its end (exit 4): a relay that died of it took the program (its
// parent-death signal) and the command with it, with no cleanup.
func TestWrapRelayPendingAlarm(t *testing.T) {
	requireSandbox(t)
	for _, env := range relays {
		cmd := hostStarted(t, "signal.alarm(1)", env, binary, "--workspace", t.TempDir(), "--", "sh", "-c", "sleep 2; echo done; exit 4")
		out, _ := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 4 || !strings.Contains(string(out), "done") {
			t.Errorf("%s: alarm armed by the host: exit %d (%v), want the command's 4; output %q", env, code, cmd.ProcessState, out)
		}
	}
}

// TestWrapRelayOtherSignalsIgnored: asynchronous signals the relay does
// not pass on, whose default action would end it (SIGVTALRM, SIGXCPU,
// SIGPWR, SIGIO, a realtime signal), are ignored: the command runs on to
// its own end and exit code.
func TestWrapRelayOtherSignalsIgnored(t *testing.T) {
	requireSandbox(t)
	tag := fmt.Sprintf("44%d.%d", rand.IntN(1000), rand.IntN(1000))
	cmd, out, done := startWrapped(t, "echo ready; sleep "+tag+" & wait; exit 6", tag)
	for _, sig := range []syscall.Signal{syscall.SIGVTALRM, syscall.SIGXCPU, syscall.SIGPWR, syscall.SIGIO, syscall.Signal(34 + 5)} {
		if err := syscall.Kill(cmd.Process.Pid, sig); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	select {
	case err := <-done:
		done <- err
		t.Fatalf("the wrapper ended on a signal it does not pass on: %v: %s", err, out)
	default:
	}
	for _, p := range procsWith(tag) {
		// The sleep alone (the wrapper's own command lines hold the tag too).
		if b, _ := os.ReadFile("/proc/" + p + "/cmdline"); strings.HasPrefix(string(b), "sleep\x00") {
			pid, _ := strconv.Atoi(p)
			syscall.Kill(pid, syscall.SIGTERM)
		}
	}
	select {
	case err := <-done:
		done <- err
	case <-time.After(10 * time.Second):
		t.Fatalf("the wrapper did not end after its command's sleep was ended: %s", out)
	}
	if code := cmd.ProcessState.ExitCode(); code != 6 {
		t.Errorf("exit code %d, want the command's 6: %s", code, out)
	}
}

// TestWrapRelayRestoresNonControllingTerminal (red team 37): the wrapper's
// stdin is a terminal, but not its controlling terminal (it was started in
// a session of its own, as a daemon, a supervisor or `setsid` starts it,
// with a terminal handed over as stdin). The program puts that terminal in
// raw mode while the command runs; killed (here with SIGKILL, as the OOM
// killer would), it cannot put it back, and the relay must, both the C
// relay and the Go one (UNIFIED_EXEC_NO_RELAY=1). The C relay restored
// only when it was the terminal's foreground (tcgetpgrp(0) == getpgrp()),
// and tcgetpgrp fails (ENOTTY) on a terminal that is not the caller's
// controlling one: echo and canonical mode were left off.
func TestWrapRelayRestoresNonControllingTerminal(t *testing.T) {
	requireSandbox(t)
	for _, mode := range []struct{ name, noRelay string }{{"c-relay", ""}, {"go-relay", "1"}} {
		t.Run(mode.name, func(t *testing.T) {
			master, slave, err := pty.Open()
			if err != nil {
				t.Fatal(err)
			}
			defer master.Close()
			defer slave.Close()
			go func() { // drain
				buf := make([]byte, 4096)
				for {
					if _, err := master.Read(buf); err != nil {
						return
					}
				}
			}()
			before := termMode(t, slave)
			tag := fmt.Sprintf("37%d.%d", rand.IntN(1000), rand.IntN(1000))
			cmd := exec.Command(binary, "--workspace", t.TempDir(), "--", "sleep", tag)
			cmd.Env = envWithout(os.Environ(), "UNIFIED_EXEC_NO_RELAY")
			if mode.noRelay != "" {
				cmd.Env = append(cmd.Env, "UNIFIED_EXEC_NO_RELAY="+mode.noRelay)
			}
			cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
			// A session of its own, and no controlling terminal.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			defer func() {
				cmd.Process.Kill()
				for _, p := range procsWith(tag) {
					var pid int
					fmt.Sscan(p, &pid)
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}()
			waitFor(t, func() bool { return len(procsWith(tag)) > 0 })
			waitFor(t, func() bool { return termMode(t, slave) != before })
			// The program: the wrapper's child (with the Go relay, its
			// one child too).
			var prog int
			waitFor(t, func() bool {
				f := childrenOf(cmd.Process.Pid)
				if len(f) == 1 {
					prog = f[0]
				}
				return prog != 0
			})
			syscall.Kill(prog, syscall.SIGKILL)
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				t.Fatal("the wrapper did not end after its program was killed")
			}
			if code := cmd.ProcessState.ExitCode(); code != 128+9 {
				t.Errorf("exit code %d, want %d", code, 128+9)
			}
			if after := termMode(t, slave); after != before {
				t.Errorf("terminal (stdin, not the controlling terminal) left changed after the program was killed: lflag %#x, was %#x", after.Lflag, before.Lflag)
			}
		})
	}
}

// envWithout is env without the variable name (set even empty, the C
// relay's getenv sees it and stands aside).
func envWithout(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// childrenOf lists the children of every thread of pid.
func childrenOf(pid int) []int {
	var kids []int
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		for _, f := range strings.Fields(string(b)) {
			var k int
			fmt.Sscan(f, &k)
			kids = append(kids, k)
		}
	}
	return kids
}

// TestWrapRelayEmptyNamespaceVariable (red team 37): an empty
// UNIFIED_EXEC_NAMESPACE in the host's environment (exported blank by a
// careless environment) is no re-run's mark for Go (EnterNamespace
// ignores an empty value), nor for the C relay: it asked only whether the
// variable was set, stood aside, and the program made its namespace the
// slow way, re-executing the binary (a Go relay of several threads).
func TestWrapRelayEmptyNamespaceVariable(t *testing.T) {
	requireSandbox(t)
	tag := fmt.Sprintf("37%d.%d", rand.IntN(1000), rand.IntN(1000))
	cmd := exec.Command(binary, "--workspace", t.TempDir(), "--", "bash", "-c", "echo ready; sleep "+tag)
	cmd.Env = append(envWithout(envWithout(os.Environ(), "UNIFIED_EXEC_NO_RELAY"), "UNIFIED_EXEC_NAMESPACE"), "UNIFIED_EXEC_NAMESPACE=")
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	waitFor(t, func() bool { return strings.Contains(out.String(), "ready") && len(procsWith(tag)) > 0 })
	if th := statusField(t, cmd.Process.Pid, "Threads"); th != "1" {
		t.Errorf("with UNIFIED_EXEC_NAMESPACE= (empty) the relay runs %s threads: the C relay stood aside and the Go relay re-executed the binary", th)
	}
}

// TestWrapBackgroundJob: `unified-exec -- CMD &` in an interactive shell
// runs to its end, as a background job: the terminal is the shell's, so
// the wrapper neither sets it raw (it stopped at once, "Stopped (tty
// output)", before) nor gives the command its input (the command, in a
// session of its own, would read the keys typed to the shell): a read
// gets end of file. Both relays: the C one and the Go one
// (UNIFIED_EXEC_NO_RELAY=1), which must find out before the namespace
// hides the terminal's process groups.
func TestWrapBackgroundJob(t *testing.T) {
	requireSandbox(t)
	for _, relay := range relays {
		t.Run("relay="+relay, func(t *testing.T) {
			ws := t.TempDir()
			cmd := exec.Command("bash", "--norc", "--noprofile", "-i")
			cmd.Env = append(envWithout(os.Environ(), "UNIFIED_EXEC_NO_RELAY"), "PS1=PROMPT$ ", "TERM=dumb")
			if relay != "" {
				cmd.Env = append(cmd.Env, relay)
			}
			p, err := pty.Start(cmd)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			var out lockedBuffer
			go readInto(p, &out)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			defer func() {
				cmd.Process.Kill()
				<-done
			}()
			waitFor(t, func() bool { return strings.Contains(out.String(), "PROMPT$ ") })
			// (Quotes split the words looked for: the terminal echoes the line.)
			line := fmt.Sprintf("%s --workspace %s -- sh -c 'sleep 0.2; echo inner\"\"-done; read x; echo \"re\"\"ad=$?\"; exit 3' & wait $!; echo \"r\"\"c=$?\"; jobs -l\n", binary, ws)
			if _, err := p.Write([]byte(line)); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(15 * time.Second)
			for !strings.Contains(out.String(), "rc=") && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			got := out.String()
			if strings.Contains(got, "Stopped") || !strings.Contains(got, "rc=3") {
				t.Fatalf("the wrapper as a background job: want it to run to the command's exit 3, never stopped:\n%s", got)
			}
			if !strings.Contains(got, "inner-done") || !strings.Contains(got, "read=1") {
				t.Fatalf("want the command's output, and end of file on its input:\n%s", got)
			}
		})
	}
}

// inShell starts bash -i on a fresh terminal of 40×100, types
// `unified-exec --workspace WS -- inner` in it, as line gives it (%s: the
// wrapper and its flags), waits for the line's end ("rc=" printed), and
// returns the terminal's slave side (still open) and what was shown.
func inShell(t *testing.T, line, inner string) (*os.File, string) {
	t.Helper()
	ws := t.TempDir()
	master, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { master.Close(); tty.Close() })
	if err := pty.Setsize(master, &pty.Winsize{Rows: 40, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "--norc", "--noprofile", "-i")
	cmd.Env = append(os.Environ(), "PS1=PROMPT$ ", "TERM=dumb")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out lockedBuffer
	go readInto(master, &out)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		// Output stopped by the command (TCOOFF) would keep bash blocked.
		unix.IoctlSetInt(int(tty.Fd()), unix.TCXONC, unix.TCOON)
		unix.IoctlSetInt(int(tty.Fd()), unix.TIOCNXCL, 0)
		cmd.Process.Kill()
		<-done
	})
	waitFor(t, func() bool { return strings.Contains(out.String(), "PROMPT$ ") })
	wrapper := fmt.Sprintf("%s --workspace %s --", binary, ws)
	if _, err := master.Write([]byte(fmt.Sprintf(line, wrapper+" "+inner) + "; echo \"r\"\"c=$?\"\n")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(out.String(), "rc=") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	got := out.String()
	if !strings.Contains(got, "rc=") {
		t.Fatalf("the line did not end within 15 s (the terminal's output stopped?):\n%s", got)
	}
	return tty, got
}

// TestWrapCommandCannotChangeCallerTerminal (red team 38): a command
// whose stdin is not a terminal (started in the background of an
// interactive shell, or with its input piped) used to get the caller's
// terminal itself as stdout, in a session of its own where job control
// does not apply, and what it set stayed after the wrapper exited: the
// terminal's window size; its exclusive mode (every later open by a
// non-root user fails with EBUSY: less, sudo, ssh's password prompt,
// git's pager); its output stopped (TCOOFF: ^Q does not undo it, the
// shell hung). Its output now reaches the terminal through a pipe.
func TestWrapCommandCannotChangeCallerTerminal(t *testing.T) {
	requireSandbox(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not found")
	}
	for _, start := range []struct{ name, line string }{{"background", "%s & wait $!"}, {"piped-input", "echo | %s"}} {
		t.Run(start.name, func(t *testing.T) {
			t.Run("window-size", func(t *testing.T) {
				tty, got := inShell(t, start.line, "sh -c 'stty rows 7 cols 13 <&1'")
				ws, err := unix.IoctlGetWinsize(int(tty.Fd()), unix.TIOCGWINSZ)
				if err != nil {
					t.Fatal(err)
				}
				if ws.Row != 40 || ws.Col != 100 {
					t.Fatalf("a sandboxed command changed the caller's terminal size to %dx%d (was 40x100):\n%s", ws.Row, ws.Col, got)
				}
			})
			t.Run("exclusive", func(t *testing.T) {
				tty, got := inShell(t, start.line, "python3 -c 'import fcntl, termios; fcntl.ioctl(1, termios.TIOCEXCL)'")
				if excl, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCGEXCL); err != nil || excl != 0 {
					t.Fatalf("a sandboxed command set the caller's terminal exclusive (%v): its opens now fail with EBUSY:\n%s", err, got)
				}
			})
			t.Run("output-stopped", func(t *testing.T) {
				// inShell fails when the line's end never shows.
				inShell(t, start.line, "python3 -c 'import termios; termios.tcflow(1, termios.TCOOFF)'")
			})
		})
	}
}

// readInto copies what f reads into out until f fails (closed: the
// terminal's master with the test's end).
func readInto(f *os.File, out *lockedBuffer) {
	buf := make([]byte, 4096)
	for {
		n, err := f.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			return
		}
	}
}

// TestWrapProgramIgnoresStraySignals: the signals that would end the Go
// program with a stack dump (SIGABRT, SIGTRAP, SIGILL, SIGSYS), which
// nothing legitimate sends it inside its namespace (a command that reached
// the thread it was forked from did: red teams 39 and 40), are dropped:
// the command runs on and the wrapper exits with its status.
func TestWrapProgramIgnoresStraySignals(t *testing.T) {
	requireSandbox(t)
	tag := fmt.Sprint(100000 + rand.IntN(899999))
	cmd, out, done := startWrapped(t, "echo ready; sleep 1."+tag+"; echo done", "1."+tag)
	program := relayChild(t, cmd.Process.Pid)
	for _, sig := range []syscall.Signal{syscall.SIGABRT, syscall.SIGTRAP, syscall.SIGILL, syscall.SIGSYS} {
		if err := syscall.Kill(program, sig); err != nil {
			t.Fatalf("%v: %v", sig, err)
		}
	}
	select {
	case err := <-done:
		done <- err
		if err != nil || !strings.Contains(out.String(), "done") {
			t.Fatalf("the wrapper ended with %v after stray signals to its program; output %q", err, out.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the wrapper did not end; output %q", out.String())
	}
}
