//go:build linux

package sandbox

import (
	"errors"
	"fmt"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// MinThreadLandlockABI is the oldest Landlock ABI [ApplyThread] accepts:
// a command forked from a restricted thread shares the program's PID
// namespace, so it must not be able to signal the program or other
// sessions (signal scoping, ABI 6).
const MinThreadLandlockABI = 6

// ThreadAvailable reports whether [ApplyThread] can enforce plans here,
// and if not, why.
func ThreadAvailable() error {
	if !SeccompEnabled {
		return fmt.Errorf("%w: %s", ErrUnavailable, seccompMissing())
	}
	if abi := landlockABI(); abi < MinThreadLandlockABI {
		return fmt.Errorf("%w: Landlock ABI %d, the thread sandbox needs ≥ %d (signal scoping)", ErrUnavailable, abi, MinThreadLandlockABI)
	}
	return nil
}

// ApplyThread enforces a plan encoded by [Plan.Marshal] on the calling OS
// thread only, for the command it forks next: a mount namespace of the
// thread's own with the protected paths read-only and the unreadable
// paths inside writable roots covered, no_new_privs, Landlock (restrict
// without TSYNC), and the seccomp filter (without TSYNC). tty is the
// session's terminal ("" for none), granted with ioctls.
//
// The caller must hold the thread (runtime.LockOSThread) and never give
// it back: the goroutine must end locked, so the runtime retires the
// thread instead of running other code under the sandbox. Unlike [Apply]
// it costs no exec: it is the fast path when the program runs in a PID
// namespace of its own.
func ApplyThread(payload []byte, tty string) error {
	plan, err := Unmarshal(payload)
	if err != nil {
		return err
	}
	if !plan.Enforced() {
		return nil
	}
	if err := ThreadAvailable(); err != nil {
		return err
	}
	if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_FS); err != nil {
		return fmt.Errorf("mount: a mount namespace for the command: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("mount: making mounts private: %w", err)
	}
	if err := mountLayer(plan); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	if err := landlockThread(plan, tty); err != nil {
		return err
	}
	return applySeccompThread(plan)
}

// landlockThread restricts the calling thread with the same rules [Apply]
// gives the helper (writable roots whole: the mounts protect inside them).
func landlockThread(plan Plan, tty string) error {
	abi := landlockABI()
	cfg := landlockConfig(abi, plan.Network)
	handled := uint64(cfg.HandledAccessFS)
	attr := ll.RulesetAttr{HandledAccessFS: handled, HandledAccessNet: uint64(cfg.HandledAccessNet), Scoped: uint64(cfg.Scoped)}
	fd, err := ll.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return fmt.Errorf("landlock: creating the ruleset (ABI %d): %w", abi, err)
	}
	defer unix.Close(fd)
	grants := append([]Grant(nil), plan.Read...)
	for _, root := range plan.WritableRoots {
		grants = append(grants, Grant{Path: root, Dir: true, Access: AccessReadWrite})
	}
	grants = append(grants, plan.Devices...)
	if tty != "" {
		grants = append(grants, Grant{Path: tty, Access: AccessTerminal})
	}
	for _, g := range grants {
		if err := addGrant(fd, g, handled); err != nil {
			return err
		}
	}
	if err := ll.LandlockRestrictSelf(fd, 0); err != nil {
		return fmt.Errorf("landlock: restricting this thread: %w", err)
	}
	return nil
}

// Access rights as go-landlock's RODirs/RWDirs give them; a rule on a
// file keeps only the rights that apply to files.
const (
	rightsRead     = uint64(ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir)
	rightsWrite    = uint64(ll.AccessFSWriteFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeChar | ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeBlock | ll.AccessFSMakeSym | ll.AccessFSTruncate)
	rightsFileOnly = uint64(ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSReadFile | ll.AccessFSIoctlDev)
)

func addGrant(ruleset int, g Grant, handled uint64) error {
	fd, err := unix.Open(g.Path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil // gone since the plan was made
		}
		return fmt.Errorf("landlock: opening %q: %w", g.Path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("landlock: %q: %w", g.Path, err)
	}
	rights := rightsRead
	switch g.Access {
	case AccessReadWrite:
		rights |= rightsWrite | uint64(ll.AccessFSRefer)
	case AccessTerminal:
		rights |= rightsWrite | uint64(ll.AccessFSIoctlDev)
	}
	if !g.Dir || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		rights &= rightsFileOnly
	}
	rights &= handled
	if rights == 0 {
		return nil
	}
	attr := ll.PathBeneathAttr{AllowedAccess: rights, ParentFd: fd}
	if err := ll.LandlockAddPathBeneathRule(ruleset, &attr, 0); err != nil {
		return fmt.Errorf("landlock: rule for %q: %w", g.Path, err)
	}
	return nil
}
