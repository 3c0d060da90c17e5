package sandbox

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"

	"github.com/unified-exec/unified-exec/internal/userns"
	"github.com/unified-exec/unified-exec/policy"
)

// MinLandlockABI is the oldest Landlock ABI [Apply] accepts. ABI 1
// already confines reads and writes; what later ABIs add is downgraded
// and listed by [Status.Degraded]: renames and links across directories
// (2; before it they fail with EXDEV), truncate (3), TCP (4), device
// ioctls (5), signal and abstract-socket scoping (6).
const MinLandlockABI = 1

// Status is what this host and this build can enforce.
type Status struct {
	// Platform is GOOS/GOARCH.
	Platform string
	// LandlockABI is the kernel's Landlock ABI version, 0 without Landlock.
	LandlockABI int
	// Seccomp is true when this build can load seccomp filters here
	// (Linux, built with cgo and libseccomp).
	Seccomp bool
	// Namespaces is true when a session can get its own PID and mount
	// namespace: its own /proc, exact whole-tree kill, and protected
	// paths enforced by mounts rather than by carving.
	Namespaces bool
	// NamespaceErr says why not, when Namespaces is false: the error,
	// and the sysctl that refuses user namespaces where one does.
	NamespaceErr string
	// UserNamespace is true when the namespaces come from an
	// unprivileged user namespace (an ordinary user), false as root.
	UserNamespace bool
	// Root is true when this process runs as root (uid 0).
	Root bool
	// ProcessLimit is true when each session can get a pids cgroup, so
	// [limits] max_processes contains a fork bomb. [HostStatus] does not
	// know (plans know nothing of spawning): the orchestrator fills it in
	// with ProcessLimitKnown.
	ProcessLimitKnown bool
	// ProcessLimit: see ProcessLimitKnown; true when each session can get
	// a pids cgroup, so
	// [limits] max_processes contains a fork bomb.
	ProcessLimit bool
	// ProcessLimitErr says why not, when ProcessLimit is false.
	ProcessLimitErr string
	// ThreadSandbox is true when [ApplyThread] can enforce plans here:
	// inside a program namespace (ptyrun.EnterNamespace), sessions then
	// start without re-executing a helper.
	ThreadSandbox bool
	// NetWatch is true when the socket calls the sandbox refuses can be
	// counted ([NetWatch]: seccomp user notifications), so that a network
	// denial is known, not guessed.
	NetWatch bool
}

var host struct {
	once sync.Once
	st   Status
}

// HostStatus probes this host once (Landlock ABI, seccomp, whether a
// child can be started in new PID and mount namespaces) and returns the
// cached result afterwards.
func HostStatus() Status {
	host.once.Do(func() {
		host.st = Status{
			Platform:    runtime.GOOS + "/" + runtime.GOARCH,
			LandlockABI: landlockABI(),
			Seccomp:     SeccompEnabled,
		}
		host.st.Root = os.Getuid() == 0
		if kind, err := userns.Probe(); err != nil {
			host.st.NamespaceErr = err.Error()
		} else {
			host.st.Namespaces = true
			// Inside the program's own user namespace the probe finds
			// CAP_SYS_ADMIN: it is still an ordinary user's namespace.
			host.st.UserNamespace = kind == userns.User || !host.st.Root
		}
		host.st.ThreadSandbox = ThreadAvailable() == nil
		host.st.NetWatch = NetWatchAvailable() == nil
	})
	return host.st
}

// Missing lists what the plan needs that this host or build lacks; empty
// means [Apply] can enforce it. A caller whose policy says required =
// true refuses to run and names these.
func (s Status) Missing(p Plan) []string {
	if !p.Enforced() {
		return nil
	}
	var m []string
	if s.LandlockABI < MinLandlockABI {
		m = append(m, "Landlock (the kernel offers none: it needs Linux ≥ 5.13 with landlock in the lsm= boot list)")
	}
	if !s.Seccomp {
		m = append(m, "seccomp ("+seccompMissing()+")")
	}
	return m
}

// Degraded lists what the plan gets in a weaker form on this host: rights
// the kernel's Landlock ABI cannot enforce, and what a missing mount
// namespace changes.
func (s Status) Degraded(p Plan) []string {
	if !p.Enforced() || s.LandlockABI < MinLandlockABI {
		return nil
	}
	var d []string
	if s.LandlockABI < 2 {
		d = append(d, "Landlock ABI < 2: renames and hard links across directories fail (EXDEV), even inside writable roots")
	}
	if s.LandlockABI < 3 {
		d = append(d, "Landlock ABI < 3: truncate(2) is not restricted")
	}
	if s.LandlockABI < 5 {
		d = append(d, "Landlock ABI < 5: device ioctls are not restricted")
	}
	if s.LandlockABI < 6 {
		d = append(d, "Landlock ABI < 6: commands can signal, and connect to abstract UNIX sockets of, processes outside the sandbox")
	}
	if !s.Namespaces && (len(p.Protected) > 0 || hasDenyInside(p)) {
		d = append(d, "no mount namespace: writable roots are carved around protected and unreadable paths, so no new entry can be created directly in a directory that holds one (the workspace, for .git)")
	}
	if !s.Namespaces && p.Git == policy.GitCommit && len(p.WritableRoots) > 0 {
		d = append(d, "no mount namespace: git = \"commit\" falls back to \"read-only\": each repository in the workspace and writable_roots is carved whole (commits fail there; the folders on the way to one take no new entries), and a linked worktree's gitdir outside them stays read-only; repositories in /tmp and $TMPDIR are not carved (/tmp would take no new entries), so what a command writes there that runs programs is only reported after it")
	}
	return d
}

// Unenforced lists the guarantees of the plan that Landlock and seccomp
// alone cannot give, on a host where no PID and mount namespace can be
// made (user namespaces refused to an ordinary user). A policy with
// required = true refuses to run there; with required = false commands
// run under Landlock and seccomp, with these as a note.
func (s Status) Unenforced(p Plan) []string {
	if !p.Enforced() || s.Namespaces {
		return nil
	}
	return []string{
		"a PID namespace (a command could read the environment and command line of the user's other processes, the agent host's secrets included, and leave processes behind)",
		"a mount namespace (the host's terminals under /dev/pts and its /dev/shm would be shared with commands)",
	}
}

// NamespaceFix says what would give this host namespaces, for messages.
func (s Status) NamespaceFix() string {
	return "allow unprivileged user namespaces (user.max_user_namespaces > 0, kernel.unprivileged_userns_clone = 1, or on Ubuntu kernel.apparmor_restrict_unprivileged_userns = 0) or run as root"
}

func hasDenyInside(p Plan) bool {
	for _, d := range p.DenyRead {
		for _, r := range p.WritableRoots {
			if within(d, r) {
				return true
			}
		}
	}
	return false
}

// String lists what this host enforces and what it lacks.
func (s Status) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "platform: %s\n", s.Platform)
	if s.LandlockABI > 0 {
		fmt.Fprintf(&b, "landlock: ABI %d (files", s.LandlockABI)
		if s.LandlockABI >= 4 {
			b.WriteString(", TCP")
		}
		if s.LandlockABI >= 5 {
			b.WriteString(", device ioctls")
		}
		if s.LandlockABI >= 6 {
			b.WriteString(", signal and abstract-socket scoping")
		}
		b.WriteString(")\n")
	} else {
		b.WriteString("landlock: MISSING (no file-system confinement)\n")
	}
	if s.Seccomp {
		b.WriteString("seccomp: yes (network off = only AF_UNIX sockets; ptrace, process_vm_*, io_uring_*, keyrings, TIOCSTI refused)\n")
		if s.NetWatch {
			b.WriteString("network denials: counted (each refused socket call goes to the server, which answers EPERM and counts it)\n")
		} else {
			b.WriteString("network denials: not counted here (no seccomp user notifications): a refused socket call is not reported\n")
		}
	} else {
		b.WriteString("seccomp: MISSING (" + seccompMissing() + "): network, ptrace and io_uring cannot be blocked\n")
	}
	switch {
	case s.Root:
		b.WriteString("user: root (commands keep only the capabilities of file ownership; no user namespace)\n")
	case s.UserNamespace:
		fmt.Fprintf(&b, "user: uid %d, an ordinary user (namespaces from an unprivileged user namespace mapping only uid %d and gid %d; commands run as the user, with no capabilities)\n", os.Getuid(), os.Getuid(), os.Getgid())
	default:
		fmt.Fprintf(&b, "user: uid %d, an ordinary user\n", os.Getuid())
	}
	if s.Namespaces {
		b.WriteString("namespaces: yes (serve and wrap run in a PID namespace of their own, so nothing outlives them; each session gets a mount namespace: protected paths by read-only mounts)\n")
	} else {
		fmt.Fprintf(&b, "namespaces: no (%s): other processes visible in /proc; protected paths enforced by carving; to get them, %s\n", s.NamespaceErr, s.NamespaceFix())
	}
	if !s.ProcessLimitKnown {
		// Said by the caller that knows how sessions start.
	} else if s.ProcessLimit {
		b.WriteString("process limit: yes (a pids cgroup per session: [limits] max_processes contains a fork bomb)\n")
	} else {
		fmt.Fprintf(&b, "process limit: no (%s): a fork bomb is not contained\n", s.ProcessLimitErr)
	}
	return b.String()
}

// Describe says what a policy's sandbox gets on this host, for `sandbox
// status` and the server's start-up log.
func Describe(s Status, p policy.Sandbox, plan Plan) string {
	var b strings.Builder
	b.WriteString(s.String())
	net := "off"
	if p.Network {
		net = "on"
	} else if plan.Egress {
		net = "allowlist"
	}
	git := ""
	if p.Mode == policy.ModeWorkspaceWrite {
		git = ", git " + plan.Git
	}
	fmt.Fprintf(&b, "mode in force: %s, network %s%s, required %v\n", p.Mode, net, git, p.Required)
	missing := s.Missing(plan)
	switch {
	case !plan.Enforced():
		b.WriteString("ENFORCEMENT: none (danger-full-access)\n")
	case len(missing) > 0 && p.Required:
		fmt.Fprintf(&b, "ENFORCEMENT: refused: missing %s; commands will not run (set required = false to run them unsandboxed)\n", strings.Join(missing, "; "))
	case len(missing) > 0:
		fmt.Fprintf(&b, "ENFORCEMENT: NONE: missing %s; commands run unsandboxed (required = false)\n", strings.Join(missing, "; "))
	case len(s.Unenforced(plan)) > 0 && p.Required:
		fmt.Fprintf(&b, "ENFORCEMENT: refused: Landlock and seccomp alone cannot give %s; commands will not run (required = true). To fix: %s, or set required = false to run them under Landlock and seccomp alone\n", strings.Join(s.Unenforced(plan), ", nor "), s.NamespaceFix())
	case len(s.Unenforced(plan)) > 0:
		b.WriteString("ENFORCEMENT: partial (Landlock and seccomp only, required = false)\n")
		for _, u := range s.Unenforced(plan) {
			b.WriteString("not enforced: " + u + "\n")
		}
		for _, d := range s.Degraded(plan) {
			b.WriteString("degraded: " + d + "\n")
		}
	default:
		b.WriteString("ENFORCEMENT: full\n")
		for _, d := range s.Degraded(plan) {
			b.WriteString("degraded: " + d + "\n")
		}
	}
	return b.String()
}
