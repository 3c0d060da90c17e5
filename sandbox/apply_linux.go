//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/psx"
)

// Apply enforces a plan encoded by [Plan.Marshal] on the calling process
// and everything it will start. It is meant for the re-executed helper,
// just before it executes the command; it cannot be undone.
//
// In order: check that this build and kernel can enforce the plan (else
// nothing is applied and the error says what is missing); in a mount
// namespace of its own (the helper is PID 1), mount the protected paths
// read-only and cover the unreadable paths inside writable roots; set
// no_new_privs; apply Landlock at the kernel's ABI (at most what
// go-landlock knows); load the seccomp filter on every thread.
//
// A plan for danger-full-access applies nothing.
func Apply(payload []byte) error {
	plan, err := Unmarshal(payload)
	if err != nil {
		return err
	}
	if !plan.Enforced() {
		return nil
	}
	if !SeccompEnabled {
		return fmt.Errorf("%w: %s", ErrUnavailable, seccompMissing())
	}
	abi := landlockABI()
	if abi < MinLandlockABI {
		return fmt.Errorf("%w: the kernel offers no Landlock (ABI %d, need ≥ %d)", ErrUnavailable, abi, MinLandlockABI)
	}
	mounts := ownMountNamespace()
	if mounts {
		if err := mountLayer(plan); err != nil {
			return err
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	if err := dropCapabilities(psx.Syscall6); err != nil {
		return err
	}
	if err := applyLandlock(plan, abi, mounts); err != nil {
		return err
	}
	return applySeccomp(plan)
}

// landlockABI asks the kernel (landlock_create_ruleset with the version
// flag) which Landlock ABI it offers; 0 means none.
func landlockABI() int {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return abi
}

// ownMountNamespace reports whether mounts made here stay here. The helper
// is PID 1 only when it was started in new PID and mount namespaces; to be
// sure nothing propagates out, every mount is made private first. Outside
// such a helper, Apply never mounts: as root, that would change the
// host's mounts.
//
// It also makes sure /proc is this PID namespace's: go-landlock applies
// Landlock to every thread through psx on ABI < 8, and psx lists
// /proc/<getpid()>/task, which in another namespace's /proc is some other
// process: it would wait forever. ptyrun's helper mounts /proc already.
func ownMountNamespace() bool {
	if os.Getpid() != 1 {
		return false
	}
	if unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "") != nil {
		return false
	}
	if t, err := os.Readlink("/proc/self"); err != nil || t != "1" {
		if unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "") != nil {
			return false
		}
	}
	return true
}

// mountLayer makes each protected path read-only and covers each
// unreadable path that lies inside a writable root, in this (private)
// mount namespace. Landlock then forbids the command to undo it.
func mountLayer(plan Plan) error {
	for _, p := range plan.Protected {
		if err := bindReadOnly(p, p); err != nil {
			return err
		}
	}
	for _, d := range plan.DenyRead {
		if hasRoot(plan.WritableRoots, d) {
			if err := hide(d); err != nil {
				return err
			}
		}
	}
	for _, s := range plan.Sockets {
		if err := hide(s); err != nil {
			return err
		}
	}
	return nil
}

func hasRoot(roots []string, path string) bool {
	for _, r := range roots {
		if path == r || within(path, r) {
			return true
		}
	}
	return false
}

// bindReadOnly mounts src on dst read-only.
func bindReadOnly(src, dst string) error {
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil // gone since the plan was made: nothing to protect
		}
		return fmt.Errorf("mount: protecting %q (bind): %w", dst, err)
	}
	flags := uintptr(unix.MS_REMOUNT | unix.MS_BIND | unix.MS_RDONLY)
	var st unix.Statfs_t
	if unix.Statfs(dst, &st) == nil {
		// A remount must keep the flags the kernel locks on the original
		// mount (in a user namespace); statfs reports them as ST_*.
		for _, f := range [][2]int64{
			{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
			{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
		} {
			if int64(st.Flags)&f[0] != 0 {
				flags |= uintptr(f[1])
			}
		}
	}
	if err := unix.Mount("", dst, "", flags, ""); err != nil {
		return fmt.Errorf("mount: protecting %q (read-only remount): %w", dst, err)
	}
	return nil
}

// hide covers a directory with an empty read-only tmpfs and a file with
// a read-only /dev/null.
func hide(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return nil // gone since the plan was made: nothing to hide
	}
	if st.IsDir() {
		if err := unix.Mount("tmpfs", path, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=000"); err != nil {
			return fmt.Errorf("mount: hiding %q (tmpfs): %w", path, err)
		}
		return nil
	}
	return bindReadOnly("/dev/null", path)
}

// landlockConfig handles every right of this ABI (capped at what
// go-landlock knows) but "resolve unix" (ABI 9: pathname UNIX sockets
// behave alike on every kernel), and network rights only when the
// network is off. From ABI 6 it scopes signals and abstract sockets.
func landlockConfig(abi int, network bool) landlock.Config {
	versions := []landlock.Config{landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6,
		landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11}
	cfg := versions[min(abi, len(versions))-1]
	cfg.HandledAccessFS &^= ll.AccessFSResolveUnix
	if network {
		cfg.HandledAccessNet = 0
	}
	return cfg
}

// landlockRules turns the plan's grants ([landlockGrants], with the
// session's terminals) into go-landlock rules of the rights
// [grantRights] gives, as [ApplyThread] does. With a mount namespace the
// writable roots are granted whole; without, the carved Write grants
// stand in for them.
func landlockRules(plan Plan, cfg landlock.Config, mounts bool, terminals []string) []landlock.Rule {
	var rules []landlock.Rule
	for _, g := range landlockGrants(plan, mounts, terminals) {
		st, err := os.Stat(g.Path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // gone since the plan was made
		}
		// On an error, file rights only: go-landlock then reports it.
		rights := grantRights(g, err == nil && st.IsDir(), uint64(cfg.HandledAccessFS))
		if rights == 0 {
			continue
		}
		rules = append(rules, landlock.PathAccess(landlock.AccessFSSet(rights), g.Path).IgnoreIfMissing())
	}
	return rules
}

func applyLandlock(plan Plan, abi int, mounts bool) error {
	cfg := landlockConfig(abi, plan.Network || plan.Egress)
	rules := landlockRules(plan, cfg, mounts, ownTerminals())
	if err := cfg.Restrict(rules...); err != nil {
		return fmt.Errorf("landlock: restricting (ABI %d, %d rules): %w", abi, len(rules), err)
	}
	return nil
}

// ownTerminals are the session's own terminal devices: /dev/pts/N behind
// fds 0, 1 and 2.
func ownTerminals() []string {
	var out []string
	for _, fd := range []string{"0", "1", "2"} {
		t, err := os.Readlink("/proc/self/fd/" + fd)
		if err == nil && strings.HasPrefix(t, "/dev/pts/") && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}
