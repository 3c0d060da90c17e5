//go:build linux && cgo

package sandbox

import (
	"encoding/binary"
	"fmt"
	"github.com/unified-exec/unified-exec/policy"
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
	if err := addSetID(f, eperm); err != nil {
		f.Release()
		return nil, err
	}
	if err := addNoUserNamespaces(f, eperm); err != nil {
		f.Release()
		return nil, err
	}
	if net == netEgress {
		if err := addEgressSockets(f, eperm); err != nil {
			f.Release()
			return nil, err
		}
	}
	if net == netOff || net == netNotify {
		refuse, what := eperm, "refusing"
		if net == netNotify {
			refuse, what = seccomp.ActNotify, "notifying"
		}
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
			if err := f.AddRuleConditional(sc, refuse, []seccomp.ScmpCondition{notUnix}); err != nil {
				f.Release()
				return nil, fmt.Errorf("seccomp: %s %s of families other than AF_UNIX: %w", what, name, err)
			}
		}
	}
	return f, nil
}

// selfOnly are the calls that change another process's priority,
// scheduling or resource limits by pid, with the argument that names it.
// Neither Landlock nor the uid stops a command from lowering the server's
// priority (SCHED_IDLE, nice 19) or limits (RLIMIT_CPU of a second, which
// kills it) or pinning it and other sessions to one CPU
// (sched_setaffinity): they are refused (EPERM) unless that argument is
// 0, the caller itself. `nice cmd`, `ulimit`, setrlimit and `taskset
// CMD` work as before; a thread's own tid is another pid here
// (pthread_setaffinity_np), refused too.
var selfOnly = []struct {
	name string
	arg  uint
}{
	{"setpriority", 1}, {"ioprio_set", 1},
	{"sched_setscheduler", 0}, {"sched_setparam", 0}, {"sched_setattr", 0},
	{"sched_setaffinity", 0},
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

// setIDCalls are the calls that set a file's mode, with the argument
// holding the mode: the chmod family, and mknod (which makes regular files
// too). Calls that create a file with a mode (open, openat, creat) are in
// addSetID.
var setIDCalls = []struct {
	name string
	arg  uint
}{
	{"chmod", 1}, {"fchmod", 1}, {"fchmodat", 2}, {"fchmodat2", 2}, {"mknod", 1}, {"mknodat", 2},
}

// fchmodat2 (Linux 6.6) has the same number on every architecture Go
// and libseccomp share; libseccomp before 2.5.5 does not know its name.
const sysFchmodat2 = 452

// oTmpfile is O_TMPFILE without O_DIRECTORY: the bit that makes open
// create an unnamed file (which linkat can then name).
const oTmpfile = unix.O_TMPFILE &^ unix.O_DIRECTORY

// addSetID refuses (EPERM) to make a set-user-ID or set-group-ID file: a
// mode with S_ISUID or S_ISGID in the chmod family and mknod, and in open,
// openat and creat when they create (O_CREAT, O_TMPFILE). The host would
// run such a file with its owner's rights — root's, when the sandbox runs
// as root — and nosuid mounts hold only inside the sandbox. openat2 takes
// its mode in a structure a filter cannot read: it answers ENOSYS, and
// libc and Go fall back to openat.
func addSetID(f *seccomp.ScmpFilter, eperm seccomp.ScmpAction) error {
	lookup := func(name string) (seccomp.ScmpSyscall, bool) {
		sc, err := seccomp.GetSyscallFromName(name)
		if err != nil && name == "fchmodat2" {
			return seccomp.ScmpSyscall(sysFchmodat2), true
		}
		return sc, err == nil
	}
	bit := func(arg uint, b uint64) seccomp.ScmpCondition {
		c, _ := seccomp.MakeCondition(arg, seccomp.CompareMaskedEqual, b, b)
		return c
	}
	refuse := func(name string, conds ...seccomp.ScmpCondition) error {
		sc, ok := lookup(name)
		if !ok {
			return nil // not on this architecture
		}
		if err := f.AddRuleConditional(sc, eperm, conds); err != nil {
			return fmt.Errorf("seccomp: refusing set-id modes in %s: %w", name, err)
		}
		return nil
	}
	for _, id := range []uint64{unix.S_ISUID, unix.S_ISGID} {
		for _, c := range setIDCalls {
			if err := refuse(c.name, bit(c.arg, id)); err != nil {
				return err
			}
		}
		if err := refuse("creat", bit(1, id)); err != nil {
			return err
		}
		for _, create := range []uint64{unix.O_CREAT, oTmpfile} {
			if err := refuse("open", bit(1, create), bit(2, id)); err != nil {
				return err
			}
			if err := refuse("openat", bit(2, create), bit(3, id)); err != nil {
				return err
			}
		}
	}
	sc, ok := lookup("openat2")
	if !ok {
		return nil
	}
	if err := f.AddRule(sc, seccomp.ActErrno.SetReturnCode(int16(unix.ENOSYS))); err != nil {
		return fmt.Errorf("seccomp: openat2 as unknown: %w", err)
	}
	return nil
}

// addNoUserNamespaces refuses new user namespaces (unshare and clone with
// CLONE_NEWUSER): in one, a command holds every capability again, over
// namespaces of its own. Landlock still confines it there, but each
// capability opens kernel code an unprivileged process never reaches
// (new mounts of tmpfs, sysfs, cgroup2, binfmt_misc through fsopen: the
// path of several kernel exploits). clone3 passes its flags in a
// structure a filter cannot read: it answers ENOSYS, and libc falls back
// to clone (Go does not use it).
func addNoUserNamespaces(f *seccomp.ScmpFilter, eperm seccomp.ScmpAction) error {
	newUser, err := seccomp.MakeCondition(0, seccomp.CompareMaskedEqual, unix.CLONE_NEWUSER, unix.CLONE_NEWUSER)
	if err != nil {
		return fmt.Errorf("seccomp: condition CLONE_NEWUSER: %w", err)
	}
	for _, name := range []string{"unshare", "clone"} {
		sc, err := seccomp.GetSyscallFromName(name)
		if err != nil {
			continue
		}
		if err := f.AddRuleConditional(sc, eperm, []seccomp.ScmpCondition{newUser}); err != nil {
			return fmt.Errorf("seccomp: refusing user namespaces in %s: %w", name, err)
		}
	}
	if sc, err := seccomp.GetSyscallFromName("clone3"); err == nil {
		if err := f.AddRule(sc, seccomp.ActErrno.SetReturnCode(int16(unix.ENOSYS))); err != nil {
			return fmt.Errorf("seccomp: clone3 as unknown: %w", err)
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

// PrepareSeccomp builds the filters of the plans of a [network] mode
// (policy.NetworkOff, NetworkAllowlist or NetworkOn) beside the caller's
// work, once: built on demand, they are half the first command's thread
// sandbox (libseccomp's tables are read and each program generated). With
// the network off a thread sandbox that reports denied connections loads
// the notifying filter (see applySeccompThreadListen): it is built too.
func PrepareSeccomp(network string) {
	go func() { // ends once built; a second call finds them built
		switch network {
		case policy.NetworkAllowlist:
			seccompProgram(netEgress)
		case policy.NetworkOn:
			seccompProgram(netOn)
		default:
			seccompProgram(netNotify)
			seccompProgram(netOff)
		}
	}()
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
