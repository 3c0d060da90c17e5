package ptyrun

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/unified-exec/unified-exec/internal/userns"
	"golang.org/x/sys/unix"
)

// nsEnv marks the program that EnterNamespace re-ran inside the namespace.
const nsEnv = "UNIFIED_EXEC_NAMESPACE"

var insideOwn bool

// EnterNamespace runs the whole program inside a PID and mount namespace
// of its own, once, so that nothing it starts can outlive it: this
// process re-runs itself (same arguments, environment and stdio) under
// a small init that is PID 1 there, forwards signals to it, and exits
// with its status — it never returns. In the re-run program it returns
// true. Where namespaces are unavailable it returns false at once and
// the program goes on as it is.
//
// Inside, sessions need no namespace of their own to die with the
// program: killing it (even with SIGKILL) ends its init and with it every
// process in the namespace. Call it at the start of main, after
// [MaybeRunHelper].
func EnterNamespace() bool {
	if os.Getenv(nsEnv) == "1" {
		os.Unsetenv(nsEnv)
		// Commands forked from restricted threads share this namespace:
		// the program's environment must not be readable there.
		insideOwn = os.Getppid() == 1 && hideEnviron() == nil
		if insideOwn {
			// Root, or the user namespace's capabilities: sessions'
			// namespaces are made directly, no probe needed.
			userns.Known(userns.Direct)
		}
		if insideOwn && userns.HasAmbient() {
			// In a user namespace of its own, the program keeps its
			// capabilities there (to mount and make namespaces for its
			// sessions) but passes none on: commands executed without a
			// helper start with no capabilities at all.
			if err := userns.ClearAmbientAllThreads(); err != nil {
				fmt.Fprintf(os.Stderr, "unified-exec: namespace: %v\n", err)
				os.Exit(125)
			}
		}
		return insideOwn
	}
	if ok, _ := IsolationAvailable(); !ok || !helperInstalled {
		return false
	}
	self, err := os.Executable()
	if err != nil {
		return false
	}
	os.Exit(runInNamespace(self))
	return false
}

// InOwnNamespace reports whether [EnterNamespace] put this program in a
// namespace of its own.
func InOwnNamespace() bool { return insideOwn }

func runInNamespace(self string) int {
	pr, pw, err := os.Pipe()
	if err != nil {
		fmt.Fprintf(os.Stderr, "unified-exec: namespace: %v\n", err)
		return 125
	}
	sr, sw, err := os.Pipe()
	if err != nil {
		fmt.Fprintf(os.Stderr, "unified-exec: namespace: %v\n", err)
		return 125
	}
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{helperArg0}
	cmd.Env = append(os.Environ(), nsEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{pr, sw}
	kind, _ := userns.Probe()
	cmd.SysProcAttr = userns.Attr(kind, 0)
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	saved, _ := unix.IoctlGetTermios(0, unix.TCGETS) // nil unless stdin is a terminal
	// Signals for the program go to the init, which passes them on.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "unified-exec: namespace: %v\n", err)
		return 125
	}
	pr.Close()
	sw.Close()
	hdr := helperHeader{Argv: append([]string{self}, os.Args[1:]...), Isolate: true, Program: true}
	err = writeHeader(pw, hdr)
	pw.Close()
	if err != nil {
		cmd.Process.Kill()
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err = cmd.Wait()
	close(done)
	if saved != nil {
		// The program puts the terminal in raw mode while a command has
		// one of its own; killed or crashed, it could not put it back.
		unix.IoctlSetTermios(0, unix.TCSETS, saved)
	}
	st, ok := readHelperStatus(sr)
	sr.Close()
	if !ok {
		st = statusFrom(cmd.ProcessState, err)
	}
	return st.Code
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
