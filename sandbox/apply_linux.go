package sandbox

import (
	"fmt"
	"os"
	"strings"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Apply enforces a marshalled Plan on the calling process and everything
// it will start. It is called inside the re-exec helper, never in the
// server. Order: read-only bind mounts of protected paths (they need the
// mount namespace, and Landlock forbids mounts afterwards), no_new_privs,
// Landlock, seccomp.
func Apply(payload []byte) error {
	plan, err := Unmarshal(payload)
	if err != nil {
		return err
	}
	if !plan.Enforced() {
		return nil
	}
	for _, p := range plan.Protected {
		if err := bindReadOnly(p); err != nil {
			return err
		}
	}
	for _, p := range plan.Hide {
		if err := hide(p); err != nil {
			return err
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	if err := applyLandlock(plan); err != nil {
		return err
	}
	return applySeccomp(plan)
}

// bindReadOnly makes path read-only in this mount namespace.
func bindReadOnly(path string) error {
	if err := unix.Mount(path, path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("protecting %q (bind mount): %w; protected paths need a mount namespace", path, err)
	}
	var st unix.Statfs_t
	flags := uintptr(unix.MS_REMOUNT | unix.MS_BIND | unix.MS_RDONLY)
	if unix.Statfs(path, &st) == nil {
		// Keep the flags the kernel locks on the original mount.
		flags |= uintptr(st.Flags) & (unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_NOATIME | unix.MS_NODIRATIME | unix.MS_RELATIME)
	}
	if err := unix.Mount("", path, "", flags, ""); err != nil {
		return fmt.Errorf("protecting %q (read-only remount): %w", path, err)
	}
	return nil
}

// hide covers path with an empty read-only tmpfs (a directory) or
// /dev/null (a file) in this mount namespace.
func hide(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return nil // gone since the plan was made: nothing to hide
	}
	if st.IsDir() {
		if err := unix.Mount("tmpfs", path, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=000"); err != nil {
			return fmt.Errorf("hiding %q (tmpfs mount): %w; unreadable paths inside writable roots need a mount namespace", path, err)
		}
		return nil
	}
	if err := unix.Mount("/dev/null", path, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("hiding %q (bind mount): %w", path, err)
	}
	return nil
}

func applyLandlock(plan Plan) error {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < minLandlockABI {
		return fmt.Errorf("landlock: this kernel offers ABI %d (need ≥ %d): %v; the sandbox cannot be enforced", abi, minLandlockABI, err)
	}
	cfg := landlockConfig(abi, plan.Network)

	var rules []landlock.Rule
	if len(plan.ReadDirs) > 0 {
		rules = append(rules, landlock.RODirs(plan.ReadDirs...).IgnoreIfMissing())
	}
	if len(plan.ReadFiles) > 0 {
		rules = append(rules, landlock.ROFiles(plan.ReadFiles...).IgnoreIfMissing())
	}
	if len(plan.WriteDirs) > 0 {
		rules = append(rules, landlock.RWDirs(plan.WriteDirs...).WithRefer())
	}
	if len(plan.Devices) > 0 {
		rules = append(rules, landlock.RWFiles(plan.Devices...).IgnoreIfMissing())
	}
	ttys := append([]string(nil), plan.Terminals...)
	var dirTTYs, fileTTYs []string
	if own := ownTerminal(); own != "" {
		ttys = append(ttys, own)
	}
	for _, t := range ttys {
		st, err := os.Stat(t)
		switch {
		case err != nil:
		case st.IsDir():
			dirTTYs = append(dirTTYs, t)
		default:
			fileTTYs = append(fileTTYs, t)
		}
	}
	if len(dirTTYs) > 0 {
		rules = append(rules, landlock.RWDirs(dirTTYs...).WithIoctlDev())
	}
	if len(fileTTYs) > 0 {
		rules = append(rules, landlock.RWFiles(fileTTYs...).WithIoctlDev())
	}
	if err := cfg.Restrict(rules...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}

// landlockConfig handles every right this kernel knows (up to what
// go-landlock knows), scopes signals and abstract sockets (ABI 6), and
// handles TCP only when the network is off (seccomp is the real network
// block: Landlock does not cover UDP or raw sockets).
func landlockConfig(abi int, network bool) landlock.Config {
	versions := []landlock.Config{landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6, landlock.V7}
	cfg := versions[min(abi, len(versions))-1]
	if network {
		cfg.HandledAccessNet = 0
	}
	return cfg
}

// ownTerminal is the session's terminal device, if stdin is one.
func ownTerminal() string {
	target, err := os.Readlink("/proc/self/fd/0")
	if err != nil || !strings.HasPrefix(target, "/dev/pts/") {
		return ""
	}
	return target
}

// LandlockABI is the Landlock ABI of this kernel, or 0.
func LandlockABI() int {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return abi
}
