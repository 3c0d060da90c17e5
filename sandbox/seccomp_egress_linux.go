//go:build linux && cgo

package sandbox

import (
	"fmt"

	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// egressFamilies are the socket families a command may open in
// allowlist mode: those a network namespace isolates, so that only the
// namespace's loopback (and the egress proxy on it) is reachable —
// AF_UNIX, AF_INET, AF_INET6, and AF_NETLINK for NETLINK_ROUTE (reading
// addresses and routes: getifaddrs, ip addr). Every other family is
// refused (EPERM): packet sockets, vsock (which reaches the hypervisor's
// host whatever the namespace), Bluetooth, CAN, the crypto API and the
// other netlink protocols (audit, uevents, xfrm...), which a network
// namespace does not contain or the sandbox has no use for.
//
// socket's family is an int: a value with upper bits set is at least 17
// as a 64-bit argument, so the rule "≥ AF_NETLINK+1" refuses it too.
func addEgressSockets(f *seccomp.ScmpFilter, eperm seccomp.ScmpAction) error {
	sc, err := seccomp.GetSyscallFromName("socket")
	if err != nil {
		return fmt.Errorf("seccomp: socket: %w", err)
	}
	rule := func(conds ...seccomp.ScmpCondition) error {
		if err := f.AddRuleConditional(sc, eperm, conds); err != nil {
			return fmt.Errorf("seccomp: refusing socket families outside the egress namespace's: %w", err)
		}
		return nil
	}
	cond := func(arg uint, op seccomp.ScmpCompareOp, v uint64) seccomp.ScmpCondition {
		c, err := seccomp.MakeCondition(arg, op, v)
		if err != nil {
			panic(err) // constant arguments: cannot fail
		}
		return c
	}
	for fam := uint64(0); fam < unix.AF_NETLINK; fam++ {
		if fam == unix.AF_UNIX || fam == unix.AF_INET || fam == unix.AF_INET6 {
			continue
		}
		if err := rule(cond(0, seccomp.CompareEqual, fam)); err != nil {
			return err
		}
	}
	if err := rule(cond(0, seccomp.CompareGreater, unix.AF_NETLINK)); err != nil {
		return err
	}
	if err := rule(cond(0, seccomp.CompareEqual, unix.AF_NETLINK), cond(2, seccomp.CompareNotEqual, unix.NETLINK_ROUTE)); err != nil {
		return err
	}
	// socketpair: AF_UNIX alone makes pairs.
	sp, err := seccomp.GetSyscallFromName("socketpair")
	if err != nil {
		return fmt.Errorf("seccomp: socketpair: %w", err)
	}
	if err := f.AddRuleConditional(sp, eperm, []seccomp.ScmpCondition{cond(0, seccomp.CompareNotEqual, unix.AF_UNIX)}); err != nil {
		return fmt.Errorf("seccomp: refusing socketpair of families other than AF_UNIX: %w", err)
	}
	return nil
}
