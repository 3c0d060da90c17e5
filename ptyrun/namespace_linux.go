package ptyrun

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/unified-exec/unified-exec/internal/tracepoint"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/unified-exec/unified-exec/internal/userns"
	"golang.org/x/sys/unix"
)

// nsEnv marks the program that EnterNamespace re-ran inside the
// namespace; its value is the relay's pid (the program's own is 1 there).
const nsEnv = "UNIFIED_EXEC_NAMESPACE"

var insideOwn bool

// EnterNamespace runs the whole program inside a PID and mount namespace
// of its own, once, so that nothing it starts can outlive it: this
// process starts itself again (same arguments, environment and stdio) as
// PID 1 there, passes signals on to it, and exits with its status — it
// never returns. In the re-run program it returns true. Where namespaces
// are unavailable it returns false at once and the program goes on as it
// is. A program whose relay made the namespaces before the runtime
// started (see [Relayed]: the binary then starts once) only becomes their
// init here.
//
// Inside, sessions need no namespace of their own to die with the
// program: when it ends (even by SIGKILL) the kernel ends every process
// in the namespace. As PID 1 the program also reaps the orphans there
// (see startReaper). Call it at the start of main, after
// [MaybeRunHelper]. A child the program starts itself, outside the
// sessions, must then be started and waited for with [RunOwned]: the
// reaper would take any other child's exit (its Wait fails with ECHILD).
func EnterNamespace() bool {
	relay := relayedBy // made before the runtime started (see [Relayed])
	if v := os.Getenv(nsEnv); v != "" {
		os.Unsetenv(nsEnv)
		pid, bg, _ := strings.Cut(v, ",")
		if _, err := strconv.Atoi(pid); err == nil && relay == "" {
			relay = pid // re-run by runInNamespace
			relayedBackground = bg == "background"
		}
	}
	if relay != "" && os.Getpid() == 1 {
		// Named after the relay: every program is PID 1 of its own
		// namespace, so its own pid names none of them apart.
		cgroupOwner = relay
		if err := becomeInit(); err != nil {
			fmt.Fprintf(os.Stderr, "unified-exec: namespace: %v\n", err)
			os.Exit(125)
		}
		insideOwn = true
		return true
	}
	// Not PID 1: the variable was set by hand, not by us; enter one as
	// usual.
	if !helperInstalled {
		return false
	}
	code, ok := runInNamespace()
	if !ok {
		return false
	}
	os.Exit(code)
	return false
}

var (
	relayedBy         string
	relayedBackground bool
)

// Relayed says that this process was started, before the Go runtime, as
// PID 1 of new PID and mount namespaces (and a user namespace where the
// user is not root) by relay, a process of the program's binary that
// waits for it and passes signals on as runInNamespace does: C code that
// runs before main, so that the binary starts once. [EnterNamespace] then
// only makes the program the init of those namespaces. background: the
// relay started in the background of its terminal's session (see
// [StartedInBackground]).
func Relayed(relay int, background bool) {
	relayedBy, relayedBackground = strconv.Itoa(relay), background
}

// StartedInBackground reports whether the program was started in the
// background of the session of the terminal on its stdin (`unified-exec
// -- make test &` in an interactive shell): the terminal is then another
// job's, to read from and to set. Inside its own namespace the program
// cannot see the terminal's process groups: the relay looked for it.
func StartedInBackground() bool {
	if relayedBy != "" || insideOwn {
		return relayedBackground
	}
	return inBackground()
}

// inBackground reports whether this process is in the background of the
// session of the terminal on stdin (false when stdin is no terminal, or
// not its session's).
func inBackground() bool {
	fg, err := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	return err == nil && fg != syscall.Getpgrp()
}

// RelayEnded removes the process-limit cgroups the program started by
// this process's relay (see [Relayed]) left when it was killed: its
// sessions died with its namespace.
func RelayEnded() { removeOwnCgroups() }

// becomeInit makes the program re-run by runInNamespace the init of its
// namespace: the host's environment hidden (commands share the
// namespace), /proc, a devpts instance and /dev/shm of its own, the
// capabilities of a user namespace kept for itself only, orphans reaped.
func becomeInit() error {
	if err := hideEnviron(); err != nil {
		return fmt.Errorf("hiding the environment: %w", err)
	}
	if err := mountProc(); err != nil {
		return err
	}
	if err := mountOwnDevices(); err != nil {
		return err
	}
	// Root, or the user namespace's capabilities: sessions' namespaces
	// are made directly, no probe needed.
	userns.Known(userns.Direct)
	if userns.HasAmbient() {
		// In a user namespace of its own, the program keeps its
		// capabilities there (to mount and make namespaces for its
		// sessions) but passes none on: commands executed without a
		// helper start with no capabilities at all.
		if err := userns.ClearAmbientAllThreads(); err != nil {
			return err
		}
	}
	startReaper()
	return nil
}

// InOwnNamespace reports whether [EnterNamespace] put this program in a
// namespace of its own.
func InOwnNamespace() bool { return insideOwn }

// runInNamespace starts this program again as PID 1 of new PID and mount
// namespaces — directly where this process may, else through a user
// namespace of its own — and relays: signals go to it, its exit status
// comes back. ok is false when no namespace could be made (nothing was
// started).
func runInNamespace() (code int, ok bool) {
	saved, _ := unix.IoctlGetTermios(0, unix.TCGETS) // nil unless stdin is a terminal
	// Signals for the program go to it; registered before it starts, so
	// none is lost between.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	defer signal.Stop(sigs)
	// The start is the probe: the first way the kernel accepts.
	var cmd *exec.Cmd
	for _, kind := range []userns.Kind{userns.Direct, userns.User} {
		if kind == userns.Direct && os.Geteuid() != 0 {
			continue
		}
		c := exec.Command("/proc/self/exe")
		c.Args = os.Args
		mark := strconv.Itoa(os.Getpid())
		if inBackground() {
			mark += ",background" // see StartedInBackground
		}
		c.Env = append(os.Environ(), nsEnv+"="+mark)
		c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
		c.SysProcAttr = userns.Attr(kind, 0)
		c.SysProcAttr.Pdeathsig = syscall.SIGKILL
		if c.Start() == nil {
			cmd = c
			break
		}
	}
	if cmd == nil {
		return 0, false
	}
	tracepoint.Mark("relay started program")
	done := make(chan struct{})
	forwarded := make(chan struct{})
	go func() {
		defer close(forwarded)
		for {
			select {
			case s := <-sigs:
				cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	<-forwarded
	tracepoint.Mark("relay: program exited")
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		// Killed (the OOM killer picks the biggest process): its
		// sessions died with its namespace, their cgroups are left.
		removeOwnCgroups()
	}
	if saved != nil && ownsTerminal() {
		// The program puts the terminal in raw mode while a command has
		// one of its own; killed or crashed, it could not put it back.
		unix.IoctlSetTermios(0, unix.TCSETS, saved)
	}
	return statusFrom(cmd.ProcessState, err).Code, true
}

// ownsTerminal reports whether the terminal on stdin is this process's to
// set: it is in the terminal's foreground, or the terminal is not its
// session's (started in a session of its own with it as stdin). From the
// background of the terminal's session it is another job's (and setting
// it would stop this process), as in the relay in C.
func ownsTerminal() bool {
	fg, err := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	return err == unix.ENOTTY || (err == nil && fg == syscall.Getpgrp())
}

// hideEnviron blanks /proc/self/environ (the kernel's view of the
// environment this process started with) after moving the environment
// into fresh memory. Sandboxed commands share the program's PID
// namespace and, on kernels where Landlock does not guard
// /proc/<pid>/environ (seen on 6.18), could otherwise read the secrets
// of the host's environment there.
func hideEnviron() error {
	env := os.Environ()
	syscall.Clearenv()
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			os.Setenv(strings.Clone(k), strings.Clone(v))
		}
	}
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return err
	}
	// Fields after "(comm)" start with the state, field 3; env_start
	// and env_end are fields 50 and 51.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return errors.New("unreadable /proc/self/stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 51-2 {
		return errors.New("no env_start in /proc/self/stat")
	}
	start, err1 := strconv.ParseInt(f[50-3], 10, 64)
	end, err2 := strconv.ParseInt(f[51-3], 10, 64)
	if err1 != nil || err2 != nil || end < start || end-start > 1<<24 {
		return fmt.Errorf("bad environment bounds %q-%q in /proc/self/stat", f[50-3], f[51-3])
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer mem.Close()
	_, err = mem.WriteAt(make([]byte, end-start), start)
	return err
}
