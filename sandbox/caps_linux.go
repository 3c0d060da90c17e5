//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// keptCaps are the capabilities a sandboxed command keeps when it runs as
// root: those root needs in a checkout that belongs to another user
// (reading, writing, chowning and chmodding its files, extracting archives
// with their owners), changing its own uid and gid (su, runuser), signals
// (which Landlock scopes anyway), binding ports below 1024, chroot and
// writing audit records. Everything else acts on the machine, not on files
// — its clock and name, reboot, swap, kernel modules, raw I/O, device
// nodes, mounts, the kernel log, file capabilities, open_by_handle_at —
// and is dropped from every set, the bounding set included; no_new_privs
// keeps an exec (by root, or of a setuid or file-capability binary) from
// getting any of it back.
var keptCaps = []uint{
	unix.CAP_CHOWN, unix.CAP_DAC_OVERRIDE, unix.CAP_FOWNER, unix.CAP_FSETID,
	unix.CAP_KILL, unix.CAP_SETGID, unix.CAP_SETUID, unix.CAP_NET_BIND_SERVICE,
	unix.CAP_SYS_CHROOT, unix.CAP_AUDIT_WRITE,
}

func keptMask() uint64 {
	var m uint64
	for _, c := range keptCaps {
		m |= 1 << c
	}
	return m
}

// rawSyscall6 is how dropCapabilities reaches the kernel: on the calling
// thread alone (unix.RawSyscall6), or on every thread of the process
// (psx.Syscall6).
type rawSyscall6 func(trap, a1, a2, a3, a4, a5, a6 uintptr) (uintptr, uintptr, syscall.Errno)

// dropCapabilities leaves only keptCaps in the permitted and effective
// sets and the bounding set, and empties the inheritable and ambient
// sets. Without privileges (not root) there is nothing to drop and it
// changes nothing. no_new_privs must be set before the command runs.
func dropCapabilities(sys rawSyscall6) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capabilities: reading them: %w", err)
	}
	effective := uint64(data[1].Effective)<<32 | uint64(data[0].Effective)
	permitted := uint64(data[1].Permitted)<<32 | uint64(data[0].Permitted)
	kept := keptMask()
	if os.Getuid() != 0 {
		// An ordinary user (in a user namespace of its own, or not)
		// keeps nothing: the capabilities a user namespace gave are
		// that namespace's, and a command needs none of them.
		kept = 0
	}
	if effective&(1<<unix.CAP_SETPCAP) != 0 {
		for c := uintptr(0); c < 64; c++ {
			if kept&(1<<c) != 0 {
				continue
			}
			if _, _, e := sys(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, c, 0, 0, 0, 0); e == unix.EINVAL {
				break // past the last capability this kernel knows
			} else if e != 0 {
				return fmt.Errorf("capabilities: dropping %d from the bounding set: %w", c, e)
			}
		}
	}
	if _, _, e := sys(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0, 0); e != 0 && e != unix.EINVAL {
		return fmt.Errorf("capabilities: clearing the ambient set: %w", e)
	}
	p := permitted & kept
	e := effective & kept
	data[0] = unix.CapUserData{Effective: uint32(e), Permitted: uint32(p)}
	data[1] = unix.CapUserData{Effective: uint32(e >> 32), Permitted: uint32(p >> 32)}
	hdr = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	if _, _, e := sys(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0, 0, 0, 0); e != 0 {
		return fmt.Errorf("capabilities: dropping them: %w", e)
	}
	return nil
}
