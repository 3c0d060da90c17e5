//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"sync"
	"time"

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
// thread's own where everything but the writable roots is read-only, the
// read-only files and protected paths are read-only and the unreadable
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
	if reenterWorkdir() != nil {
		// The program's own directory is out of reach; the command goes
		// into its own (the fork changes to it), or starts at the root.
		unix.Chdir("/")
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	if err := dropCapabilities(unix.RawSyscall6); err != nil {
		return err
	}
	var fd int
	if tty == "" {
		fd, err = rulesets.get(payload, func() (int, error) { return landlockRuleset(plan, "") })
	} else {
		// A terminal's rule is its session's alone: no caching.
		fd, err = landlockRuleset(plan, tty)
		defer unix.Close(fd)
	}
	if err != nil {
		return err
	}
	if err := ll.LandlockRestrictSelf(fd, 0); err != nil {
		return fmt.Errorf("landlock: restricting this thread: %w", err)
	}
	return applySeccompThread(plan)
}

// rulesets keeps the Landlock rulesets of recent plans (for sessions
// without a terminal: a terminal's rule is its session's alone): an agent's
// commands come in bursts under one plan, and building a ruleset (an open,
// a stat and a rule for each grant) costs more than the rest of a spawn.
// A ruleset binds the inodes its paths had when it was built, so one kept
// too long can only grant less (a directory replaced since is not
// granted), never more; it is kept for rulesetTTL at most.
var rulesets = rulesetCache{entries: map[string]cachedRuleset{}}

const (
	rulesetTTL = 5 * time.Second
	rulesetMax = 8
)

type rulesetCache struct {
	mu      sync.Mutex
	entries map[string]cachedRuleset
}

type cachedRuleset struct {
	fd    int
	built time.Time
}

// get returns the ruleset fd for payload, building it with build when
// none fresh is kept. The fd stays owned by the cache.
func (c *rulesetCache) get(payload []byte, build func() (int, error)) (int, error) {
	key := string(payload)
	now := time.Now()
	c.mu.Lock()
	for k, e := range c.entries {
		if now.Sub(e.built) > rulesetTTL {
			unix.Close(e.fd)
			delete(c.entries, k)
		}
	}
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok {
		return e.fd, nil
	}
	fd, err := build()
	if err != nil {
		return -1, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[key]; ok {
		// Built twice at once: keep one.
		unix.Close(fd)
		return old.fd, nil
	}
	if len(c.entries) >= rulesetMax {
		for k, e := range c.entries {
			unix.Close(e.fd)
			delete(c.entries, k)
			break
		}
	}
	c.entries[key] = cachedRuleset{fd: fd, built: now}
	return fd, nil
}

// landlockRuleset builds the ruleset of the rules [Apply] gives the helper
// (writable roots whole: the mounts protect inside them), as a
// close-on-exec fd.
func landlockRuleset(plan Plan, tty string) (int, error) {
	abi := landlockABI()
	cfg := landlockConfig(abi, plan.Network)
	handled := uint64(cfg.HandledAccessFS)
	attr := ll.RulesetAttr{HandledAccessFS: handled, HandledAccessNet: uint64(cfg.HandledAccessNet), Scoped: uint64(cfg.Scoped)}
	fd, err := ll.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return -1, fmt.Errorf("landlock: creating the ruleset (ABI %d): %w", abi, err)
	}
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
			unix.Close(fd)
			return -1, err
		}
	}
	return fd, nil
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
