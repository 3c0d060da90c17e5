//go:build linux && cgo

package sandbox

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"sync"
	"unsafe"

	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// SeccompEnabled reports whether this build can load seccomp filters:
// true on Linux with cgo (libseccomp).
const SeccompEnabled = true

func seccompMissing() string { return "" }

// alwaysBlocked are refused with EPERM whatever the network setting:
// they reach into other processes' memory or around seccomp itself, or
// into the kernel's keyrings, which no namespace separates (a user's
// keyring holds Kerberos tickets and keyutils-backed credentials for every
// process of that user).
var alwaysBlocked = []string{"ptrace", "process_vm_readv", "process_vm_writev", "io_uring_setup", "io_uring_enter", "io_uring_register",
	"keyctl", "add_key", "request_key"}

// newFilter builds the filter for a plan: allow by default; EPERM for
// alwaysBlocked and, with the network off, for socket and socketpair of
// any family but AF_UNIX. sendto, sendmsg and setsockopt stay open, so
// AF_UNIX sockets work fully (asyncio, Chromium). A syscall of another
// architecture (32-bit x86 on x86_64) hits the bad-arch action and kills
// the thread. NewFilter sets TSYNC: Load covers every thread.
func newFilter(net netFilter) (*seccomp.ScmpFilter, error) {
	f, err := seccomp.NewFilter(seccomp.ActAllow)
	if err != nil {
		return nil, fmt.Errorf("seccomp: new filter: %w", err)
	}
	eperm := seccomp.ActErrno.SetReturnCode(int16(unix.EPERM))
	for _, name := range alwaysBlocked {
		sc, err := seccomp.GetSyscallFromName(name)
		if err != nil {
			continue // not on this architecture
		}
		if err := f.AddRule(sc, eperm); err != nil {
			f.Release()
			return nil, fmt.Errorf("seccomp: refusing %s: %w", name, err)
		}
	}
	if err := addSelfOnly(f, eperm); err != nil {
		f.Release()
		return nil, err
	}
	if err := addTerminalInput(f, eperm); err != nil {
		f.Release()
		return nil, err
	}
	if net == netEgress {
		if err := addEgressSockets(f, eperm); err != nil {
			f.Release()
			return nil, err
		}
	}
	if net == netOff {
		notUnix, err := seccomp.MakeCondition(0, seccomp.CompareNotEqual, unix.AF_UNIX)
		if err != nil {
			f.Release()
			return nil, fmt.Errorf("seccomp: condition family != AF_UNIX: %w", err)
		}
		for _, name := range []string{"socket", "socketpair"} {
			sc, err := seccomp.GetSyscallFromName(name)
			if err != nil {
				f.Release()
				return nil, fmt.Errorf("seccomp: %s: %w", name, err)
			}
			if err := f.AddRuleConditional(sc, eperm, []seccomp.ScmpCondition{notUnix}); err != nil {
				f.Release()
				return nil, fmt.Errorf("seccomp: refusing %s of families other than AF_UNIX: %w", name, err)
			}
		}
	}
	return f, nil
}

// selfOnly are the calls that change another process's priority,
// scheduling or resource limits by pid, with the argument that names it.
// Neither Landlock nor the uid stops a command from lowering the server's
// priority (SCHED_IDLE, nice 19) or limits (RLIMIT_CPU of a second, which
// kills it): they are refused (EPERM) unless that argument is 0, the
// caller itself. `nice cmd`, `ulimit` and setrlimit work as before.
var selfOnly = []struct {
	name string
	arg  uint
}{
	{"setpriority", 1}, {"ioprio_set", 1},
	{"sched_setscheduler", 0}, {"sched_setparam", 0}, {"sched_setattr", 0},
}

// Who-is-a-user values of setpriority and ioprio_set: with who 0 they
// mean every process of the caller's user, the server's too.
const (
	prioUser      = 2 // PRIO_USER
	ioprioWhoUser = 3 // IOPRIO_WHO_USER
)

func addSelfOnly(f *seccomp.ScmpFilter, eperm seccomp.ScmpAction) error {
	type cond struct {
		arg uint
		op  seccomp.ScmpCompareOp
		v   uint64
	}
	add := func(name string, cs ...cond) error {
		sc, err := seccomp.GetSyscallFromName(name)
		if err != nil {
			return nil // not on this architecture
		}
		var conds []seccomp.ScmpCondition
		for _, c := range cs {
			mc, err := seccomp.MakeCondition(c.arg, c.op, c.v)
			if err != nil {
				return fmt.Errorf("seccomp: condition on %s: %w", name, err)
			}
			conds = append(conds, mc)
		}
		if err := f.AddRuleConditional(sc, eperm, conds); err != nil {
			return fmt.Errorf("seccomp: refusing %s on other processes: %w", name, err)
		}
		return nil
	}
	for _, c := range selfOnly {
		if err := add(c.name, cond{c.arg, seccomp.CompareNotEqual, 0}); err != nil {
			return err
		}
	}
	if err := add("setpriority", cond{0, seccomp.CompareEqual, prioUser}); err != nil {
		return err
	}
	if err := add("ioprio_set", cond{0, seccomp.CompareEqual, ioprioWhoUser}); err != nil {
		return err
	}
	// prlimit64(pid, resource, new, old): reading another's limits is
	// harmless; setting them is not.
	return add("prlimit64", cond{0, seccomp.CompareNotEqual, 0}, cond{2, seccomp.CompareNotEqual, 0})
}

// typingIoctls put bytes into a terminal's input as if typed: TIOCSTI,
// and TIOCLINUX (its selection paste, on virtual consoles). A command may
// open any terminal of its user (nested PTYs need /dev/pts), so with them
// it could type a command line into the user's shell, which runs it
// outside the sandbox once the command ends. They are refused (EPERM) on
// every terminal, the session's own too.
var typingIoctls = []uint64{unix.TIOCSTI, unix.TIOCLINUX}

// addTerminalInput refuses typingIoctls. The kernel reads ioctl's request
// as 32 bits, so the filter compares the low 32 only: a request with
// upper bits set is the same ioctl.
func addTerminalInput(f *seccomp.ScmpFilter, eperm seccomp.ScmpAction) error {
	sc, err := seccomp.GetSyscallFromName("ioctl")
	if err != nil {
		return fmt.Errorf("seccomp: ioctl: %w", err)
	}
	for _, req := range typingIoctls {
		c, err := seccomp.MakeCondition(1, seccomp.CompareMaskedEqual, 0xffffffff, req)
		if err != nil {
			return fmt.Errorf("seccomp: condition on ioctl %#x: %w", req, err)
		}
		if err := f.AddRuleConditional(sc, eperm, []seccomp.ScmpCondition{c}); err != nil {
			return fmt.Errorf("seccomp: refusing ioctl %#x (typing into a terminal): %w", req, err)
		}
	}
	return nil
}

// applySeccomp loads the plan's filter on every thread of the process.
func applySeccomp(plan Plan) error {
	f, err := newFilter(netFilterOf(plan))
	if err != nil {
		return err
	}
	defer f.Release()
	if err := f.Load(); err != nil {
		return fmt.Errorf("seccomp: loading the filter: %w", err)
	}
	return nil
}

// filterPrograms caches the compiled filter (one per network setting)
// for [ApplyThread]: compiled once, loaded by a single syscall.
var filterPrograms [netFilters]struct {
	once sync.Once
	prog []unix.SockFilter
	err  error
}

// seccompProgram is the BPF program of the plan's filter.
func seccompProgram(net netFilter) ([]unix.SockFilter, error) {
	c := &filterPrograms[net]
	c.once.Do(func() {
		f, err := newFilter(net)
		if err != nil {
			c.err = err
			return
		}
		defer f.Release()
		raw, err := exportBPF(f)
		if err != nil {
			c.err = fmt.Errorf("seccomp: exporting the filter: %w", err)
			return
		}
		if len(raw) == 0 || len(raw)%8 != 0 {
			c.err = fmt.Errorf("seccomp: exported filter has %d bytes, not whole instructions", len(raw))
			return
		}
		c.prog = make([]unix.SockFilter, len(raw)/8)
		for j := range c.prog {
			b := raw[j*8:]
			c.prog[j] = unix.SockFilter{
				Code: binary.NativeEndian.Uint16(b[0:]),
				Jt:   b[2],
				Jf:   b[3],
				K:    binary.NativeEndian.Uint32(b[4:]),
			}
		}
	})
	return c.prog, c.err
}

// applySeccompThread loads the plan's filter on the calling thread only
// (no TSYNC); what it forks inherits it. no_new_privs must be set.
func applySeccompThread(plan Plan) error {
	prog, err := seccompProgram(netFilterOf(plan))
	if err != nil {
		return err
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return fmt.Errorf("seccomp: loading the filter on this thread: %w", e)
	}
	return nil
}

// exportBPF gets the filter's BPF program through a memfd (libseccomp
// before 2.6 exports only to a file descriptor).
func exportBPF(f *seccomp.ScmpFilter) ([]byte, error) {
	fd, err := unix.MemfdCreate("seccomp-bpf", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	file := os.NewFile(uintptr(fd), "seccomp-bpf")
	defer file.Close()
	if err := f.ExportBPF(file); err != nil {
		return nil, err
	}
	return os.ReadFile("/proc/self/fd/" + strconv.Itoa(fd))
}
