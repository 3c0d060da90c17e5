//go:build linux

// Package userns starts children in new PID and mount namespaces, the
// way this process is allowed to: directly where it holds CAP_SYS_ADMIN
// (root, or a program already inside a user namespace of its own), else
// through a new unprivileged user namespace that maps only the caller's
// own uid and gid, as bubblewrap does.
//
// Inside such a user namespace the child is still the user (id, file
// ownership, /proc/self/uid_map "UID UID 1"); the capabilities it holds
// there (kept across exec as ambient capabilities, so the re-executed
// helper can mount) act only on namespaces the user namespace owns, never
// on the host: files, other users' processes and the host's mounts stay
// out of reach. The helper drops them before a command runs.
package userns

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/psx"
)

// Kind is how this process can give a child new PID and mount namespaces.
type Kind int

const (
	// None: it cannot (user namespaces refused and no CAP_SYS_ADMIN).
	None Kind = iota
	// Direct: clone flags alone (CAP_SYS_ADMIN in the current user namespace).
	Direct
	// User: through a new user namespace mapping the caller's uid and gid.
	User
)

func (k Kind) String() string {
	switch k {
	case Direct:
		return "direct"
	case User:
		return "user namespace"
	}
	return "none"
}

// ambientCaps are what a child started in a new user namespace keeps
// across its exec: mounting (/proc, devpts, the sandbox's read-only
// layer), making namespaces and going back to one (setns to a mount
// namespace needs CAP_SYS_CHROOT too), and bringing up the loopback of the network
// namespace it makes for allowlist mode (CAP_NET_ADMIN acts only on
// network namespaces that user namespace owns, never the host's). They
// are the user namespace's, not the host's.
var ambientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP, unix.CAP_NET_ADMIN, unix.CAP_SYS_CHROOT}

// Attr returns the process attributes that start a child in new PID and
// mount namespaces (plus extra clone flags) under kind; nil for None.
func Attr(kind Kind, extra uintptr) *syscall.SysProcAttr {
	flags := uintptr(syscall.CLONE_NEWPID|syscall.CLONE_NEWNS) | extra
	switch kind {
	case Direct:
		attr := &syscall.SysProcAttr{Cloneflags: flags}
		if os.Getuid() != 0 {
			// Inside a user namespace of our own: the capabilities we
			// hold there are kept across the child's exec only as
			// ambient ones.
			attr.AmbientCaps = ambientCaps
		}
		return attr
	case User:
		uid, gid := os.Getuid(), os.Getgid()
		return &syscall.SysProcAttr{
			Cloneflags:                 flags | syscall.CLONE_NEWUSER,
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
			GidMappingsEnableSetgroups: false,
			AmbientCaps:                ambientCaps,
		}
	}
	return nil
}

var probe struct {
	once sync.Once
	kind Kind
	err  error
}

// Probe reports, once per process, how this process can make namespaces
// for a child (trying a child that runs /bin/true), and when it cannot,
// an error that names the reason (the refusing sysctl where one is set).
func Probe() (Kind, error) {
	probe.once.Do(func() {
		probe.kind, probe.err = probeNow()
	})
	return probe.kind, probe.err
}

func probeNow() (Kind, error) {
	// A child that execs nothing: the clone either fails (the namespaces
	// are refused) or succeeds and the exec of a missing file fails
	// (ENOENT), and ForkExec reaps the child either way. No program runs.
	try := func(k Kind) error {
		_, err := syscall.ForkExec("/nonexistent/unified-exec-namespace-probe", []string{"probe"}, &syscall.ProcAttr{Sys: Attr(k, 0)})
		if errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if err == nil {
			return errors.New("the probe ran")
		}
		return err
	}
	direct := try(Direct)
	if direct == nil {
		return Direct, nil
	}
	user := try(User)
	if user == nil {
		return User, nil
	}
	if why := refusedBy(); why != "" {
		return None, errors.New("user namespaces are refused by sysctl " + why)
	}
	return None, fmt.Errorf("no PID and mount namespaces for a child (directly: %v; through a user namespace: %v)", direct, user)
}

// Known records how this process makes namespaces when it knows without
// a probe: a program inside a namespace of its own holds CAP_SYS_ADMIN
// there (Direct). It must be called before the first [Probe].
func Known(k Kind) {
	probe.once.Do(func() { probe.kind = k })
}

// refusedBy names the sysctl that refuses unprivileged user namespaces
// here, if one does.
func refusedBy() string {
	var why []string
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	if read("/proc/sys/user/max_user_namespaces") == "0" {
		why = append(why, "user.max_user_namespaces = 0")
	}
	if read("/proc/sys/kernel/unprivileged_userns_clone") == "0" {
		why = append(why, "kernel.unprivileged_userns_clone = 0")
	}
	if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1" {
		why = append(why, "kernel.apparmor_restrict_unprivileged_userns = 1")
	}
	return strings.Join(why, ", ")
}

// ClearAmbient empties the calling thread's ambient and inheritable
// capabilities, so that a command it executes next gets none of a user
// namespace's capabilities (an inheritable one would still pass to a
// program with file capabilities). The permitted and effective sets stay:
// the thread itself may still mount.
func ClearAmbient() error { return clearInherited(unix.RawSyscall6) }

// ClearAmbientAllThreads does what [ClearAmbient] does on every thread of
// the process.
func ClearAmbientAllThreads() error { return clearInherited(psx.Syscall6) }

func clearInherited(sys func(trap, a1, a2, a3, a4, a5, a6 uintptr) (uintptr, uintptr, syscall.Errno)) error {
	if _, _, e := sys(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0, 0); e != 0 && e != unix.EINVAL {
		return fmt.Errorf("clearing ambient capabilities: %w", e)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("reading capabilities: %w", err)
	}
	if data[0].Inheritable == 0 && data[1].Inheritable == 0 {
		return nil
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if _, _, e := sys(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0, 0, 0, 0); e != 0 {
		return fmt.Errorf("clearing inheritable capabilities: %w", e)
	}
	return nil
}

// HasAmbient reports whether the calling thread holds ambient capabilities.
func HasAmbient() bool {
	for _, c := range ambientCaps {
		if r, err := unix.PrctlRetInt(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_IS_SET, c, 0, 0); err == nil && r == 1 {
			return true
		}
	}
	return false
}
