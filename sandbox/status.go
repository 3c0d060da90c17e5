package sandbox

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/unified-exec/unified-exec/policy"
	"github.com/unified-exec/unified-exec/ptyrun"
)

// minLandlockABI is the oldest Landlock this sandbox accepts: ABI 2 brings
// the refer right, without which renames and links across directories of
// a writable root would fail.
const minLandlockABI = 2

// Status is what this host can enforce.
type Status struct {
	Platform    string
	LandlockABI int
	Seccomp     bool
	// Namespaces: each session gets its own PID and mount namespace
	// (its own /proc, exact whole-tree kill, protected bind mounts).
	Namespaces   bool
	NamespaceErr string
}

// HostStatus probes this host (cached after the first call).
func HostStatus() Status {
	ns, err := ptyrun.IsolationAvailable()
	st := Status{
		Platform:    runtime.GOOS + "/" + runtime.GOARCH,
		LandlockABI: LandlockABI(),
		Seccomp:     SeccompEnabled && runtime.GOOS == "linux",
		Namespaces:  ns,
	}
	if err != nil {
		st.NamespaceErr = err.Error()
	}
	return st
}

// Missing lists what the plan needs that this host cannot give; empty
// means the plan can be enforced in full.
func (s Status) Missing(p Plan) []string {
	if !p.Enforced() {
		return nil
	}
	var m []string
	if s.LandlockABI < minLandlockABI {
		m = append(m, fmt.Sprintf("Landlock ABI ≥ %d (this kernel: %d)", minLandlockABI, s.LandlockABI))
	}
	if !s.Seccomp {
		m = append(m, "seccomp (this build has no libseccomp, or the OS has no seccomp)")
	}
	if len(p.Protected) > 0 && !s.Namespaces {
		m = append(m, "mount namespaces, to keep protected paths read-only ("+s.NamespaceErr+")")
	}
	if len(p.Hide) > 0 && !s.Namespaces {
		m = append(m, "mount namespaces, to hide unreadable paths inside writable roots ("+s.NamespaceErr+")")
	}
	return m
}

// String describes the host and, for a mode, what it gets.
func (s Status) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "platform: %s\n", s.Platform)
	if s.LandlockABI > 0 {
		fmt.Fprintf(&b, "landlock: ABI %d", s.LandlockABI)
		if s.LandlockABI < 6 {
			b.WriteString(" (no signal/abstract-socket scoping: needs ABI 6)")
		}
		b.WriteString("\n")
	} else {
		b.WriteString("landlock: unavailable\n")
	}
	fmt.Fprintf(&b, "seccomp: %v\n", yesNo(s.Seccomp))
	if s.Namespaces {
		b.WriteString("namespaces: yes (own PID namespace and /proc per session)\n")
	} else {
		fmt.Fprintf(&b, "namespaces: no (%s): sessions can see other processes in /proc; protected paths cannot be enforced\n", s.NamespaceErr)
	}
	return b.String()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// Describe says what a policy's sandbox gets on this host, for `sandbox
// status` and the server's start-up log.
func Describe(s Status, p policy.Sandbox, plan Plan) string {
	var b strings.Builder
	b.WriteString(s.String())
	fmt.Fprintf(&b, "mode in force: %s, network %s, required %v\n", p.Mode, map[bool]string{true: "on", false: "off"}[p.Network], p.Required)
	if missing := s.Missing(plan); len(missing) > 0 {
		if p.Required {
			fmt.Fprintf(&b, "ENFORCEMENT: refused — missing %s; commands will not run (set required = false to run unsandboxed)\n", strings.Join(missing, ", "))
		} else {
			fmt.Fprintf(&b, "ENFORCEMENT: partial — missing %s; commands run anyway (required = false)\n", strings.Join(missing, ", "))
		}
	} else if plan.Enforced() {
		b.WriteString("ENFORCEMENT: full\n")
	} else {
		b.WriteString("ENFORCEMENT: none (danger-full-access)\n")
	}
	return b.String()
}
