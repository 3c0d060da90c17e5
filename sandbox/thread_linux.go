//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"github.com/unified-exec/unified-exec/policy"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/unified-exec/unified-exec/internal/tracepoint"
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
// paths inside writable roots covered, a terminal instance of its own on
// /dev/pts (a session's terminal is to be opened after, on this thread,
// from /dev/ptmx), no_new_privs, Landlock (restrict without TSYNC), and
// the seccomp filter (without TSYNC). tty is unused: the session's own
// terminals are all in its instance.
//
// The caller must hold the thread (runtime.LockOSThread) and never give
// it back: the goroutine must end locked, so the runtime retires the
// thread instead of running other code under the sandbox. Unlike [Apply]
// it costs no exec: it is the fast path when the program runs in a PID
// namespace of its own. It makes the whole process undumpable (see
// undumpable): the command could otherwise trace the thread.
func ApplyThread(payload []byte, tty string) error {
	return applyThread(payload, tty, nil)
}

// applyThread is ApplyThread; with listen set and the network off, the
// refused socket calls go to a listener instead, handed to listen (see
// [NetWatch]).
func applyThread(payload []byte, tty string, listen func(fd int)) error {
	if b := takeBuilt(); b != nil {
		return b.use(payload, listen)
	}
	return applyPlan(payload, listen, false)
}

// applyThreadAhead is applyThread for [BuildThread]: the thread sandbox
// built ahead of the call, which counts as no warmed thread used (the
// call that takes it does).
func applyThreadAhead(payload []byte, listen func(fd int)) error {
	return applyPlan(payload, listen, true)
}

// applyPlan builds the thread sandbox of payload on the calling thread,
// taking over what WarmThread prepared there.
func applyPlan(payload []byte, listen func(fd int), ahead bool) error {
	plan, err := decoded.get(payload)
	if err != nil {
		return err
	}
	// What WarmThread prepared on this thread, if anything: used when
	// nothing it copied has changed since, else given back.
	w := takeWarmed()
	if w != nil && plan.Enforced() && !w.current() {
		warmStale.Add(1)
		if err := w.restore(); err != nil {
			return err
		}
		w = nil
	}
	if w != nil && !plan.Enforced() {
		if err := w.restore(); err != nil {
			return err
		}
		w = nil
	}
	if w != nil && !ahead {
		warmUsed.Add(1)
	}
	if !plan.Enforced() {
		return nil
	}
	if err := ThreadAvailable(); err != nil {
		if w != nil {
			w.restore()
		}
		return err
	}
	tracepoint.Mark("thread sandbox: start")
	if w == nil {
		if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_FS); err != nil {
			return fmt.Errorf("mount: a mount namespace for the command: %w", err)
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return fmt.Errorf("mount: making mounts private: %w", err)
		}
	} else {
		defer w.close()
	}
	tracepoint.Mark("thread sandbox: mount namespace")
	if err := mountLayer(plan); err != nil {
		return err
	}
	tracepoint.Mark("thread sandbox: mount layer")
	if w == nil {
		if err := mountOwnTerminals(); err != nil {
			return err
		}
	} else {
		// The instance mounted ahead was made read-only with the rest.
		rw := unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}
		if err := unix.MountSetattr(unix.AT_FDCWD, "/dev/pts", 0, &rw); err != nil {
			return fmt.Errorf("mount: the session's terminal instance read-write: %w", err)
		}
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
	// Two layers: the plan's (kept for a burst of commands), which grants
	// /dev whole, and this session's, which lets nothing else through but
	// its own devices and terminals (see mountOwnTerminals). A command may
	// do what both allow.
	tracepoint.Mark("thread sandbox: terminals, no_new_privs, capabilities")
	fd, err := rulesets.get(payload, plan, func() (int, error) { return landlockRuleset(plan) })
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	tracepoint.Mark("thread sandbox: the plan's Landlock layer")
	lastDevices.Store(&Plan{Devices: plan.Devices, Network: plan.Network, Egress: plan.Egress})
	devices := w.devicesFor(deviceKeyOf(plan))
	if devices < 0 {
		devices, err = devicesRuleset(plan)
		if err != nil {
			return err
		}
	}
	defer unix.Close(devices)
	tracepoint.Mark("thread sandbox: the device layer built")
	for _, layer := range []int{fd, devices} {
		if err := ll.LandlockRestrictSelf(layer, 0); err != nil {
			return fmt.Errorf("landlock: restricting this thread: %w", err)
		}
	}
	tracepoint.Mark("thread sandbox: Landlock applied")
	defer tracepoint.Mark("thread sandbox: seccomp applied")
	if err := undumpable(); err != nil {
		return err
	}
	if err := guardForkingThread(); err != nil {
		return err
	}
	if listen != nil && listenable(plan) {
		fd, err := applySeccompThreadListen(plan)
		if err != nil {
			return err
		}
		listen(fd)
		return nil
	}
	return applySeccompThread(plan)
}

// undumpable makes the process not dumpable. The thread a command is
// forked from shares the command's Landlock domain and has dropped its
// capabilities, so to the kernel's ptrace check (same user, no fewer
// capabilities, a Landlock domain the command's own) the command could
// trace it: read the program's memory through /proc/1/task/<tid>/mem,
// open its descriptors through .../fd (write to the host's end of the
// MCP pipe, read its requests), until the thread retires. A process that
// is not dumpable is traced only by one with CAP_SYS_PTRACE over it, which
// a command never has. It is per process, not per thread: once is enough,
// and it is set again on every thread sandbox, as a change of the
// process's credentials would make it dumpable again. The cost: the
// program's core dumps, and a debugger of the same user without that
// capability. The command's exec makes the command dumpable again.
func undumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("making the program undumpable, so that the command cannot trace the thread it is forked from: %w", err)
	}
	return nil
}

// decoded keeps the last plan decoded (an agent's commands come in bursts
// under one plan): decoding it is a tenth of the thread sandbox. A plan is
// only read once decoded, so one copy serves every thread.
var decoded lastPlan

type lastPlan struct {
	mu      sync.Mutex
	payload string
	plan    Plan
}

// get is Unmarshal(payload), from the last call's result when payload
// is the same.
func (c *lastPlan) get(payload []byte) (Plan, error) {
	c.mu.Lock()
	if c.payload != "" && c.payload == string(payload) {
		plan := c.plan
		c.mu.Unlock()
		return plan, nil
	}
	c.mu.Unlock()
	plan, err := Unmarshal(payload)
	if err != nil {
		return Plan{}, err
	}
	c.mu.Lock()
	c.payload, c.plan = string(payload), plan
	c.mu.Unlock()
	return plan, nil
}

// rulesets keeps the Landlock rulesets of recent plans (for sessions
// without a terminal: a terminal's rule is its session's alone): an agent's
// commands come in bursts under one plan, and building a ruleset (an open,
// a stat and a rule for each grant) costs more than the rest of a spawn.
// A ruleset binds the inodes its paths had when it was built: one is kept
// only while no entry was made, removed or renamed in the folders it was
// carved from (see carvedDirs: a folder moved into ~/.ssh and another made
// in its place would be granted there by the kept one), and for
// rulesetTTL at most.
var rulesets rulesetCache

const (
	rulesetTTL = 5 * time.Second
	rulesetMax = 8
)

// rulesetCache keeps ruleset fds by plan. It never hands out an fd it
// may close: a caller gets a copy of its own, so an expiry or eviction
// in another call cannot close it before landlock_restrict_self, nor
// let the number be reused by another plan's ruleset. Its zero value
// is ready for use.
type rulesetCache struct {
	ttl time.Duration // 0: rulesetTTL
	max int           // 0: rulesetMax

	// mu guards the fields below.
	mu      sync.Mutex
	entries map[string]cachedRuleset
	// expiry closes what expired once no call came for a TTL (a server
	// left idle keeps no ruleset open); pending while entries are kept.
	expiry *time.Timer
}

type cachedRuleset struct {
	fd    int
	built time.Time
	dirs  []identity // the folders it was carved from, as they were
}

// get returns a ruleset fd for payload (plan decoded), building it with
// build when none fresh is kept. The fd is the caller's, to close;
// build's result is handed over and a copy kept.
func (c *rulesetCache) get(payload []byte, plan Plan, build func() (int, error)) (int, error) {
	key := string(payload)
	c.mu.Lock()
	c.expireLocked(time.Now())
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && unchanged(e.dirs, true) {
		c.mu.Lock()
		if e2, ok := c.entries[key]; ok && e2.fd == e.fd {
			// Copied under the lock: no one can close e.fd meanwhile.
			fd, err := dupCloexec(e.fd)
			c.mu.Unlock()
			return fd, err
		}
		c.mu.Unlock()
	}
	// Before the build: a change made during it is seen next time.
	dirs := carvedDirs(plan)
	fd, err := build()
	if err != nil {
		return -1, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[key]; ok {
		// Built twice at once (the one kept stays), or the kept one
		// went stale (replaced).
		if slices.Equal(old.dirs, dirs) {
			return fd, nil
		}
		unix.Close(old.fd)
		delete(c.entries, key)
	}
	kept, err := dupCloexec(fd)
	if err != nil {
		return fd, nil // not cached, still usable
	}
	limit := c.max
	if limit <= 0 {
		limit = rulesetMax
	}
	for len(c.entries) >= limit {
		c.evictOldestLocked()
	}
	if c.entries == nil {
		c.entries = map[string]cachedRuleset{}
	}
	c.entries[key] = cachedRuleset{fd: kept, built: time.Now(), dirs: dirs}
	c.scheduleLocked()
	return fd, nil
}

// scheduleLocked arms the expiry while rulesets are kept: it fires a TTL
// later, closes what expired, and arms itself again for the rest.
func (c *rulesetCache) scheduleLocked() {
	if c.expiry != nil || len(c.entries) == 0 {
		return
	}
	c.expiry = time.AfterFunc(c.lifetime(), func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.expiry = nil
		c.expireLocked(time.Now())
		c.scheduleLocked()
	})
}

func (c *rulesetCache) lifetime() time.Duration {
	if c.ttl <= 0 {
		return rulesetTTL
	}
	return c.ttl
}

// expireLocked closes the rulesets older than the TTL.
func (c *rulesetCache) expireLocked(now time.Time) {
	ttl := c.lifetime()
	for k, e := range c.entries {
		if now.Sub(e.built) > ttl {
			unix.Close(e.fd)
			delete(c.entries, k)
		}
	}
}

func (c *rulesetCache) evictOldestLocked() {
	var oldest string
	var at time.Time
	for k, e := range c.entries {
		if at.IsZero() || e.built.Before(at) {
			oldest, at = k, e.built
		}
	}
	unix.Close(c.entries[oldest].fd)
	delete(c.entries, oldest)
}

// KeptRulesets is how many Landlock rulesets the sandbox keeps open for
// the plans of recent commands (see the ruleset cache): for leak checks.
func KeptRulesets() int {
	rulesets.mu.Lock()
	defer rulesets.mu.Unlock()
	return len(rulesets.entries)
}

// dupCloexec copies fd, close-on-exec from the start.
func dupCloexec(fd int) (int, error) {
	n, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("landlock: copying the ruleset fd: %w", err)
	}
	return n, nil
}

// landlockRuleset builds the ruleset of the rules [Apply] gives the helper
// in a mount namespace (writable roots whole: the mounts protect inside
// them), but with /dev granted whole as terminals are, as a close-on-exec
// fd. Nothing in it belongs to one session, so it can be kept; it is
// meant to be stacked with [devicesRuleset].
func landlockRuleset(plan Plan) (int, error) {
	return buildRuleset(plan, func(add func(Grant) error) error {
		for _, g := range landlockGrants(plan, true, nil) {
			if g.Path == "/dev" || within(g.Path, "/dev") {
				continue
			}
			if err := add(g); err != nil {
				return err
			}
		}
		if err := add(Grant{Path: "/dev", Dir: true, Access: AccessTerminal}); err != nil {
			return err
		}
		// /dev/shm is a writable root of its own.
		for _, g := range plan.Devices {
			if g.Path == "/dev/shm" {
				return add(g)
			}
		}
		return nil
	})
}

// devicesRuleset builds the session's layer: everything outside /dev
// whole (the plan's layer governs there), and in /dev only the plan's
// devices and the terminals — /dev/pts being the session's own instance
// by now (mountOwnTerminals), with the terminals it makes for nested
// PTYs. Entries of / made after it is built are not granted.
func devicesRuleset(plan Plan) (int, error) {
	return buildRuleset(plan, func(add func(Grant) error) error { return deviceLayer(plan, add) })
}

// deviceLayer passes the grants of the layer that confines /dev to add:
// everything outside /dev whole, / listed, and in /dev the plan's devices
// and the terminals (/dev/pts being the session's own instance where it
// has one).
func deviceLayer(plan Plan, add func(Grant) error) error {
	names, err := readDirNames("/")
	if err != nil {
		return fmt.Errorf("landlock: reading /: %w", err)
	}
	if err := add(Grant{Path: "/", Dir: true, Access: accessList}); err != nil {
		return err
	}
	for _, n := range names {
		if n == "dev" {
			continue
		}
		if err := add(Grant{Path: "/" + n, Dir: true, Access: accessAll}); err != nil {
			return err
		}
	}
	for _, g := range plan.Devices {
		if err := add(g); err != nil {
			return err
		}
	}
	for _, t := range terminals {
		st, err := os.Stat(t)
		if err := add(Grant{Path: t, Dir: err == nil && st.IsDir(), Access: AccessTerminal}); err != nil {
			return err
		}
	}
	return nil
}

// buildRuleset makes a ruleset (close-on-exec fd) of the grants each
// passes to add, under this ABI's handled rights for plan.
func buildRuleset(plan Plan, each func(add func(Grant) error) error) (int, error) {
	abi := landlockABI()
	cfg := landlockConfig(abi, plan.Network || plan.Egress)
	handled := uint64(cfg.HandledAccessFS)
	attr := ll.RulesetAttr{HandledAccessFS: handled, HandledAccessNet: uint64(cfg.HandledAccessNet), Scoped: uint64(cfg.Scoped)}
	fd, err := ll.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return -1, fmt.Errorf("landlock: creating the ruleset (ABI %d): %w", abi, err)
	}
	err = each(func(g Grant) error {
		return threadRule(g, handled, func(path string, parent int, rights uint64) error {
			attr := ll.PathBeneathAttr{AllowedAccess: rights, ParentFd: parent}
			if err := ll.LandlockAddPathBeneathRule(fd, &attr, 0); err != nil {
				return fmt.Errorf("landlock: rule for %q: %w", path, err)
			}
			return nil
		})
	})
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// mountOwnTerminals gives the thread's mount namespace a terminal instance
// of its own on /dev/pts (/dev/ptmx opens the instance beside it): the
// program's instance, where every other session's terminal is, is out of
// sight. Without it a command could open another session's terminal — a
// nested PTY needs /dev/pts — and read what the agent types there, write
// into its output, or change its settings.
func mountOwnTerminals() error {
	if err := unix.Mount("devpts", "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return fmt.Errorf("mount: a terminal instance of the session's own on /dev/pts: %w", err)
	}
	return nil
}

// threadRules opens each path of [landlockGrants] in turn (skipping the
// ones gone, or made links, since the plan was made: see openGrant) and calls add with an O_PATH fd on
// it and its [grantRights] there, when not 0.
func threadRules(plan Plan, tty string, handled uint64, add func(path string, fd int, rights uint64) error) error {
	var terminals []string
	if tty != "" {
		terminals = []string{tty}
	}
	for _, g := range landlockGrants(plan, true, terminals) {
		if err := threadRule(g, handled, add); err != nil {
			return err
		}
	}
	return nil
}

func threadRule(g Grant, handled uint64, add func(path string, fd int, rights uint64) error) error {
	fd, err := openGrant(g.Path)
	if err != nil {
		if errors.Is(err, errSkipGrant) {
			return nil // gone, or a link, since the plan was made
		}
		return fmt.Errorf("landlock: opening %q: %w", g.Path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("landlock: %q: %w", g.Path, err)
	}
	rights := grantRights(g, st.Mode&unix.S_IFMT == unix.S_IFDIR, handled)
	if rights == 0 {
		return nil
	}
	return add(g.Path, fd, rights)
}

// A warmedThread is what [WarmThread] prepared on one thread ahead of a
// sandboxed command: the part of [ApplyThread]'s work that is the same
// for every command. Owner: the thread (warmed, by its id) until
// ApplyThread takes it over or undo gives it back.
type warmedThread struct {
	// home is the thread's mount namespace before (to go back to), root
	// its root (a chroot's, where the program runs in one), and cwd its
	// working directory.
	home, root, cwd int
	// mounts is the mount table of the namespace the thread's was copied
	// from, opened before the copy: it polls as changed once a mount is
	// made or removed there, and the copy is then stale.
	mounts int
	// devices is the device layer built for devKey, with top the entries
	// of / it grants (-1: none built).
	devices int
	devKey  deviceKey
	top     []string
}

// deviceKey is what a device layer depends on besides the file system.
type deviceKey struct {
	devices string // the plan's device grants
	network bool   // handled rights differ with the network on
}

func deviceKeyOf(plan Plan) deviceKey {
	return deviceKey{devices: fmt.Sprint(plan.Devices), network: plan.Network || plan.Egress}
}

// SeedDevices gives [WarmThread] a device layer to build before any
// command has run (it builds the last command's): the devices every plan
// grants, under a [network] mode (policy.NetworkOff, NetworkAllowlist or
// NetworkOn). A plan they do not match builds its own, as before.
func SeedDevices(network string) {
	lastDevices.CompareAndSwap(nil, &Plan{Devices: planDevices(), Network: network == policy.NetworkOn, Egress: network == policy.NetworkAllowlist})
}

// lastDevices is the part of the last thread sandbox's plan its device
// layer was built from: the layer WarmThread builds ahead.
var lastDevices atomic.Pointer[Plan]

// warmed holds each warmed thread's preparation by thread id.
var warmed sync.Map

// warmUsed and warmStale count the thread sandboxes that took over a
// warmed thread, and those that found it stale (see WarmedThreads).
var warmUsed, warmStale atomic.Uint64

// WarmedThreads says how many thread sandboxes took over what
// [WarmThread] prepared, and how many found it stale (the program's
// mounts changed since) and started afresh: for traces and tests.
func WarmedThreads() (used, stale uint64) { return warmUsed.Load(), warmStale.Load() }

// WarmThread prepares the calling thread (held, and never given back:
// see [ApplyThread]) for the next command's thread sandbox, ahead of the
// call: a mount namespace of its own, copied from the program's as it is
// now, with a terminal instance of its own on /dev/pts, and the device
// layer of the last plan's devices. ApplyThread on the same thread takes
// it over when the program's mounts have not changed since (else it
// starts from a fresh copy, as without WarmThread), and builds the rest:
// everything that depends on the plan, from the mounts that make the
// file system read-only to seccomp. No restriction is in place until
// then. undo gives the thread back its mount namespace and releases what
// was prepared, unless ApplyThread took it over.
func WarmThread() (undo func() error, err error) {
	if err := ThreadAvailable(); err != nil {
		return nil, err
	}
	tid := unix.Gettid()
	w := &warmedThread{home: -1, root: -1, cwd: -1, mounts: -1, devices: -1}
	moved := false // the thread's namespace, root or directory changed
	fail := func(err error) (func() error, error) {
		if !moved {
			w.close()
			return nil, err
		}
		if rerr := w.restore(); rerr != nil {
			// Not as it was, and cannot be put back: the thread must
			// fork nothing (see Warmer).
			return func() error { return rerr }, errors.Join(err, rerr)
		}
		return nil, err
	}
	if w.home, err = unix.Open("/proc/thread-self/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
		return fail(fmt.Errorf("warming a thread: its mount namespace: %w", err))
	}
	if w.mounts, err = unix.Open("/proc/thread-self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
		return fail(fmt.Errorf("warming a thread: the mount table: %w", err))
	}
	if w.cwd, err = unix.Open(".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		return fail(fmt.Errorf("warming a thread: its working directory: %w", err))
	}
	if w.root, err = unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		return fail(fmt.Errorf("warming a thread: its root: %w", err))
	}
	// Going back must be possible (CAP_SYS_CHROOT too) before leaving:
	// a thread stuck in a stale copy would fork from it. (Going to a
	// mount namespace takes a thread that shares no root and working
	// directory with the others, and puts it at the namespace's root —
	// out of a chroot the program runs in, which goHome puts back: red
	// team 11.)
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		return fail(fmt.Errorf("warming a thread: %w", err))
	}
	moved = true
	if err := w.goHome(); err != nil {
		return fail(fmt.Errorf("warming a thread: it could not go back to its mount namespace: %w", err))
	}
	if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_FS); err != nil {
		return fail(fmt.Errorf("warming a thread: a mount namespace: %w", err))
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fail(fmt.Errorf("warming a thread: making mounts private: %w", err))
	}
	if err := mountOwnTerminals(); err != nil {
		return fail(err)
	}
	if last := lastDevices.Load(); last != nil {
		if top, err := rootNames(); err == nil {
			if fd, err := devicesRuleset(*last); err == nil {
				w.devices, w.devKey, w.top = fd, deviceKeyOf(*last), top
			}
		}
	}
	warmed.Store(tid, w)
	return func() error {
		if warmed.CompareAndDelete(tid, w) {
			return w.restore()
		}
		return nil
	}, nil
}

// takeWarmed takes over what WarmThread prepared on the calling thread;
// nil when nothing.
func takeWarmed() *warmedThread {
	v, ok := warmed.LoadAndDelete(unix.Gettid())
	if !ok {
		return nil
	}
	return v.(*warmedThread)
}

// current reports whether the namespace the thread's was copied from has
// had no mount made or removed since the copy (the copy is then what a
// copy made now would be).
func (w *warmedThread) current() bool {
	fds := []unix.PollFd{{Fd: int32(w.mounts), Events: unix.POLLPRI}}
	n, err := unix.Poll(fds, 0)
	return err == nil && (n == 0 || fds[0].Revents&(unix.POLLPRI|unix.POLLERR) == 0)
}

// devicesFor hands over the device layer built ahead when it was built
// for key and / has the same entries now (one made since would not be
// granted); -1 otherwise. A nil w has none.
func (w *warmedThread) devicesFor(key deviceKey) int {
	if w == nil || w.devices < 0 || w.devKey != key {
		return -1
	}
	top, err := rootNames()
	if err != nil || !slices.Equal(top, w.top) {
		return -1
	}
	fd := w.devices
	w.devices = -1
	return fd
}

// rootNames is / listed afresh, sorted. Not from the listings dirNames
// keeps: a warmed thread's copy of the mounts has mount ids of its own, so
// its reading would miss the program's kept listing of / and replace it
// (and the program's next plan would read / again).
func rootNames() ([]string, error) {
	names, err := readDirNames("/")
	slices.Sort(names)
	return names, err
}

// restore gives the thread back the mount namespace it had before
// WarmThread, and releases the rest. It fails when the thread cannot go
// back (it must then fork nothing: its view would be the stale copy).
func (w *warmedThread) restore() error {
	defer w.close()
	if w.home >= 0 {
		if err := w.goHome(); err != nil {
			return fmt.Errorf("mount: back to the program's mount namespace from a thread prepared ahead: %w", err)
		}
	}
	return nil
}

// goHome puts the thread in the mount namespace, root and working
// directory it had before WarmThread.
func (w *warmedThread) goHome() error {
	if err := unix.Setns(w.home, unix.CLONE_NEWNS); err != nil {
		return err
	}
	if err := unix.Fchdir(w.root); err != nil {
		return err
	}
	if err := unix.Chroot("."); err != nil {
		return err
	}
	return unix.Fchdir(w.cwd)
}

// close releases what w holds.
func (w *warmedThread) close() {
	for _, fd := range []*int{&w.home, &w.root, &w.cwd, &w.mounts, &w.devices} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}
