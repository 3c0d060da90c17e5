//go:build linux && cgo

package sandbox

import (
	"fmt"
	"syscall"

	seccomp "github.com/seccomp/libseccomp-golang"
)

// SeccompEnabled reports whether this build can load seccomp filters.
const SeccompEnabled = true

// applySeccomp loads the filter: allow by default; EPERM for sockets of
// any family but AF_UNIX (unless the network is on), ptrace,
// process_vm_readv/writev and io_uring. Syscalls of another architecture
// (32-bit x86 on x86_64) hit the filter's bad-arch action and kill the
// caller. The filter covers every thread (TSYNC).
func applySeccomp(plan Plan) error {
	f, err := seccomp.NewFilter(seccomp.ActAllow)
	if err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	defer f.Release()
	eperm := seccomp.ActErrno.SetReturnCode(int16(syscall.EPERM))
	block := []string{"ptrace", "process_vm_readv", "process_vm_writev", "io_uring_setup", "io_uring_enter", "io_uring_register"}
	for _, name := range block {
		sc, err := seccomp.GetSyscallFromName(name)
		if err != nil {
			continue // not on this architecture
		}
		if err := f.AddRule(sc, eperm); err != nil {
			return fmt.Errorf("seccomp: rule for %s: %w", name, err)
		}
	}
	if !plan.Network {
		notUnix, err := seccomp.MakeCondition(0, seccomp.CompareNotEqual, syscall.AF_UNIX)
		if err != nil {
			return fmt.Errorf("seccomp: %w", err)
		}
		for _, name := range []string{"socket", "socketpair"} {
			sc, err := seccomp.GetSyscallFromName(name)
			if err != nil {
				return fmt.Errorf("seccomp: %s: %w", name, err)
			}
			if err := f.AddRuleConditional(sc, eperm, []seccomp.ScmpCondition{notUnix}); err != nil {
				return fmt.Errorf("seccomp: rule for %s: %w", name, err)
			}
		}
	}
	if err := f.Load(); err != nil {
		return fmt.Errorf("seccomp: loading the filter: %w", err)
	}
	return nil
}
