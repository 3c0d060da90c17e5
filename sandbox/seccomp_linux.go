//go:build linux && cgo

package sandbox

import (
	"fmt"

	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// SeccompEnabled reports whether this build can load seccomp filters:
// true on Linux with cgo (libseccomp).
const SeccompEnabled = true

func seccompMissing() string { return "" }

// alwaysBlocked are refused with EPERM whatever the network setting:
// they reach into other processes' memory or around seccomp itself.
var alwaysBlocked = []string{"ptrace", "process_vm_readv", "process_vm_writev", "io_uring_setup", "io_uring_enter", "io_uring_register"}

// newFilter builds the filter for a plan: allow by default; EPERM for
// alwaysBlocked and, with the network off, for socket and socketpair of
// any family but AF_UNIX. sendto, sendmsg and setsockopt stay open, so
// AF_UNIX sockets work fully (asyncio, Chromium). A syscall of another
// architecture (32-bit x86 on x86_64) hits the bad-arch action and kills
// the thread. NewFilter sets TSYNC: Load covers every thread.
func newFilter(network bool) (*seccomp.ScmpFilter, error) {
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
	if !network {
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

// applySeccomp loads the plan's filter on every thread of the process.
func applySeccomp(plan Plan) error {
	f, err := newFilter(plan.Network)
	if err != nil {
		return err
	}
	defer f.Release()
	if err := f.Load(); err != nil {
		return fmt.Errorf("seccomp: loading the filter: %w", err)
	}
	return nil
}
