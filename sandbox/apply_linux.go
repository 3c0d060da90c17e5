//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
// namespace of its own (the helper is PID 1), make everything but the
// writable roots read-only, mount the read-only files and protected paths
// read-only, cover the unreadable paths inside writable roots, and go
// back into the working directory through those mounts; set
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
		if err := reenterWorkdir(); err != nil {
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
	if plan.NotifyFD > 0 {
		return applySeccompReport(plan)
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

// mountLayer builds the command's view of the file system in this
// (private) mount namespace, in this order:
//
//  0. The absent hooks folders and git configuration files of the plan
//     (MakeDirs, MakeFiles) are made, empty, so that they can be covered.
//  1. Every mount read-only, but the writable roots and /dev/shm, which
//     are attached again read-write, nosuid and nodev (readOnlyRoot):
//     Landlock governs writing files, not chmod, chown, utimes or xattrs.
//  2. The folders between a writable root and each read-only file,
//     protected path or covered socket pinned (pin): none of them can be
//     moved or removed, so no pointer to a protected path can be sent to
//     a planted copy, and no socket leaves the path it is known by.
//  3. The read-only files (the policy file in use, the audit log) and the
//     protected paths bound read-only over themselves.
//  4. Each unreadable path inside a writable root, each unreadable
//     folder outside them (but one holding a root), and each socket of
//     an agent or a service, covered.
//
// Landlock then forbids the command to undo any of it. The caller goes
// back into its working directory afterwards (reenterWorkdir): the one
// it holds is the folder under the mounts.
func mountLayer(plan Plan) error {
	makeEmpty(plan.MakeDirs, true)
	makeEmpty(plan.MakeFiles, false)
	if err := readOnlyRoot(plan.WritableRoots); err != nil {
		return err
	}
	kept := dedupe(slices.Concat(plan.ReadOnlyFiles, plan.Protected))
	if err := pin(plan.WritableRoots, pinsOf(plan)); err != nil {
		return err
	}
	for _, p := range kept {
		if err := protect(p, plan.WritableRoots); err != nil {
			return err
		}
	}
	for _, d := range plan.DenyRead {
		if hasRoot(plan.WritableRoots, d) {
			if err := hide(d); err != nil {
				return err
			}
			continue
		}
		// An unreadable folder outside the writable roots too: Landlock
		// governs opening a file, not stat, readlink or a lookup, and a
		// command learnt the size of each key in ~/.ssh, whether a name
		// was there, and where a link there led (red team 45). Not a
		// file (/dev/null over it would read, empty: Landlock grants
		// /dev/null), nor a folder that holds a writable root or what
		// every command needs, which stay as the plan's notes say.
		if st, err := os.Stat(d); err != nil || !st.IsDir() ||
			slices.ContainsFunc(slices.Concat(plan.WritableRoots, []string{"/dev", "/proc"}, plan.ReadOnlyFiles),
				func(r string) bool { return r == d || within(r, d) }) {
			continue
		}
		if err := hide(d); err != nil {
			return err
		}
	}
	for _, s := range plan.Sockets {
		if err := hide(s); err != nil {
			return err
		}
	}
	return nil
}

// threadMountinfoPath is the calling thread's mount table (tests point it
// at none).
var threadMountinfoPath = "/proc/thread-self/mountinfo"

// readOnlyRoot makes every mount of this namespace read-only (as
// bubblewrap's --ro-bind / / does) and nodev but /dev and /dev/pts, then
// attaches the writable roots and /dev/shm again read-write, nosuid and
// nodev: nothing outside them can change, metadata included, no set-id
// file inside them works, and no device node outside /dev opens.
//
// The writable trees are cloned as they are (open_tree) before everything
// turns read-only, and attached over themselves after (move_mount).
// mount_setattr only ever adds flags, so flags the kernel locks in a user
// namespace are kept, and a tree that was read-only stays so.
func readOnlyRoot(roots []string) error {
	writable := slices.Clone(roots)
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() && !hasRoot(writable, "/dev/shm") {
		writable = append(writable, "/dev/shm")
	}
	// This thread's mounts (its own namespace: /proc/self is the
	// process's first thread's).
	// Unread, a bind of an outside folder below a writable root would
	// stay writable (fresh-eyes review, session 20): no command starts.
	b, err := os.ReadFile(threadMountinfoPath)
	if err != nil {
		return fmt.Errorf("sandbox: reading this thread's mount table, to make what a writable root shows from elsewhere read-only: %w", err)
	}
	mounts := parseMountinfo(string(b))
	trees := make([]int, len(writable))
	for i := range trees {
		trees[i] = -1
	}
	defer func() {
		for _, fd := range trees {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	}()
	// Each root is reached without following a symbolic link (see
	// openGrant): one made a link since the plan was made (a command
	// swapping a folder for a link to the home) is left read-only, and
	// the clone goes back where it came from, not where a link leads.
	places := make([]int, len(writable))
	for i := range places {
		places[i] = -1
	}
	defer func() {
		for _, fd := range places {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	}()
	for i, w := range writable {
		place, err := openGrant(w)
		if err != nil {
			if errors.Is(err, errSkipGrant) {
				continue // gone, or a link, since the plan was made
			}
			return fmt.Errorf("mount: opening writable root %q: %w", w, err)
		}
		places[i] = place
		fd, err := unix.OpenTree(place, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
		if err != nil {
			return fmt.Errorf("mount: cloning writable root %q: %w", w, err)
		}
		trees[i] = fd
	}
	// Read-only, and no device node opens but in /dev: a chroot's or a
	// container image's /dev/sda elsewhere, readable by root, would be
	// the whole disk.
	ro := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NODEV}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &ro); err != nil {
		return fmt.Errorf("mount: making the file system read-only: %w", err)
	}
	for _, d := range []string{"/dev", "/dev/pts"} {
		dev := unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_NODEV}
		if err := unix.MountSetattr(unix.AT_FDCWD, d, 0, &dev); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("mount: devices in %s: %w", d, err)
		}
	}
	for i, fd := range trees {
		if fd < 0 {
			continue
		}
		w := writable[i]
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
		if w == "/dev" || within("/dev", w) {
			attr.Attr_set = unix.MOUNT_ATTR_NOSUID // the devices live there
		}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
			return fmt.Errorf("mount: writable root %q nosuid, nodev: %w", w, err)
		}
		if err := unix.MoveMount(fd, "", places[i], "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
			return fmt.Errorf("mount: attaching writable root %q: %w", w, err)
		}
	}
	return readOnlyForeignMounts(mounts, writable)
}

// readOnlyForeignMounts makes read-only each mount below a writable root
// (attached again with the root, writable) but storage of its own: a
// bind of /, of the home or of /etc into /tmp or the workspace made every
// file of it writable to commands (red team 47), and so did a proc,
// binfmt_misc or tracefs mounted there (a chroot's /proc: red team 48
// wrote the host's core_pattern through one), or an overlay whose upper
// folder is elsewhere. What stays writable is a local file system
// (tmpfs, ext4, xfs, btrfs, ...) mounted nowhere outside the writable
// roots. A bind of the root's own folder is made read-only too. The
// table is read again until every such mount in sight is read-only (a
// command moving one between the look and the change), and the command
// does not start otherwise.
func readOnlyForeignMounts(mounts []mountEntry, writable []string) error {
	var last error
	for try := 0; try < 4; try++ {
		if try > 0 {
			b, err := os.ReadFile(threadMountinfoPath)
			if err != nil {
				return fmt.Errorf("mount: reading the mount table: %w", err)
			}
			mounts = parseMountinfo(string(b))
		}
		offenders := foreignMounts(mounts, writable)
		if len(offenders) == 0 {
			return nil
		}
		if try == 3 {
			break
		}
		last = nil
		for _, p := range offenders {
			ro := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
			if err := unix.MountSetattr(unix.AT_FDCWD, p, unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW, &ro); err != nil {
				last = fmt.Errorf("mount: making %s, a mount below a writable root of what is not its own, read-only: %w", p, err)
			}
		}
	}
	if last == nil {
		last = errors.New("mount: a mount below a writable root of what is not its own stayed writable")
	}
	return last
}

// foreignMounts are the mount points, in sight, below a writable root
// (not one itself), writable, that are not storage of its own (see
// readOnlyForeignMounts).
func foreignMounts(mounts []mountEntry, writable []string) []string {
	var out []string
	for i, s := range mounts {
		if s.readOnly || !hasRoot(writable, s.point) || slices.Contains(writable, s.point) {
			continue
		}
		// Out of sight: a later mount on its point, or above it.
		if slices.ContainsFunc(mounts[i+1:], func(n mountEntry) bool { return n.point == s.point || within(s.point, n.point) }) {
			continue
		}
		own := storageTypes[s.fstype] && !slices.ContainsFunc(mounts, func(e mountEntry) bool {
			return e.dev == s.dev && !hasRoot(writable, e.point)
		})
		if !own {
			out = append(out, s.point)
		}
	}
	return out
}

// storageTypes are the file systems that hold files of their own (not a
// view of another, nor the kernel's controls).
var storageTypes = map[string]bool{
	"tmpfs": true, "ramfs": true, "ext2": true, "ext3": true, "ext4": true, "xfs": true, "btrfs": true,
	"f2fs": true, "vfat": true, "exfat": true, "ntfs": true, "ntfs3": true, "zfs": true, "bcachefs": true,
}

// makeEmpty makes each absent directory (or file), empty, with its
// parent's owner (as root, for another user's repository). The parent is
// reached without following symbolic links: a command cannot have one
// made elsewhere by swapping a folder for a link.
func makeEmpty(paths []string, dirs bool) {
	for _, d := range paths {
		parent, err := unix.Openat2(unix.AT_FDCWD, filepath.Dir(d), &unix.OpenHow{
			Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS,
		})
		if err != nil {
			continue // gone, or a link since the plan was made: bindReadOnly skips it
		}
		name := filepath.Base(d)
		if dirs {
			err = unix.Mkdirat(parent, name, 0o755)
		} else {
			var fd int
			fd, err = unix.Openat(parent, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
			if err == nil {
				unix.Close(fd)
			}
		}
		if err == nil {
			var st unix.Stat_t
			if unix.Fstat(parent, &st) == nil && int(st.Uid) != os.Geteuid() {
				unix.Fchownat(parent, name, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW)
			}
		}
		unix.Close(parent)
	}
}

// pinsOf is what mountLayer pins the folders above: the read-only files
// and protected paths; a covered socket's folders too, and an unreadable
// path's (moved, they would take it out of the path the next command's
// plan finds it by, and nothing would cover it there); and a writable
// root inside another, pinned itself (pin makes the folders above a kept
// path mount points: one below it stands for it).
func pinsOf(plan Plan) []string {
	var nested []string
	for _, n := range plan.NestedRoots {
		nested = append(nested, filepath.Join(n, "pinned"))
	}
	return dedupe(slices.Concat(plan.ReadOnlyFiles, plan.Protected, plan.Sockets, plan.DenyRead, nested))
}

// pinned lists, for each writable root, the folders pin makes mount
// points for kept, parents first.
func pinned(roots, kept []string) map[string][]string {
	pins := map[string][]string{}
	for _, k := range kept {
		root := ""
		for _, r := range roots {
			if within(k, r) {
				root = r
			}
		}
		if root == "" {
			continue
		}
		for d := filepath.Dir(k); d != root && within(d, root); d = filepath.Dir(d) {
			if !slices.Contains(pins[root], d) {
				pins[root] = append(pins[root], d)
			}
		}
	}
	for _, dirs := range pins {
		slices.Sort(dirs) // parents first
	}
	return pins
}

// pin makes the folders between each writable root and each kept path
// mount points, which can be neither renamed nor removed (EBUSY), so
// that no folder on the way to a protected path can be moved away and
// made again with a planted copy inside. The pins are then buried: the
// root's tree as it was before them is attached over it, so lookups never
// cross them and renames and links across those folders work as before;
// a mount point anywhere in the namespace is still one for rename(2) and
// rmdir(2). Kept paths outside the writable roots are read-only already.
func pin(roots, kept []string) error {
	pins := pinned(roots, kept)
	for _, root := range roots {
		dirs := pins[root]
		if len(dirs) == 0 {
			continue
		}
		view, err := unix.OpenTree(unix.AT_FDCWD, root, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			return fmt.Errorf("mount: cloning writable root %q: %w", root, err)
		}
		for _, d := range dirs {
			if err := unix.Mount(d, d, "", unix.MS_BIND|unix.MS_REC, ""); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) {
				unix.Close(view)
				return fmt.Errorf("mount: pinning %q: %w", d, err)
			}
		}
		err = unix.MoveMount(view, "", unix.AT_FDCWD, root, unix.MOVE_MOUNT_F_EMPTY_PATH)
		unix.Close(view)
		if err != nil {
			return fmt.Errorf("mount: attaching writable root %q over its pins: %w", root, err)
		}
	}
	return nil
}

// reenterWorkdir goes into the working directory again by its path,
// through the mounts just made: the directory a process holds stays the
// one it was, and inside a protected or unreadable folder that is the real
// folder, writable and readable.
func reenterWorkdir() error {
	wd, err := unix.Getwd()
	if err != nil {
		return fmt.Errorf("mount: the working directory: %w", err)
	}
	if err := unix.Chdir(wd); err != nil {
		return fmt.Errorf("mount: the working directory %q is out of reach in the sandbox: %w", wd, err)
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

// bindReadOnly mounts src on dst read-only and nosuid, with every mount
// below src: the tree is cloned (open_tree), made read-only (mount_setattr
// only adds flags: those the kernel locks in a user namespace stay), then
// attached (move_mount).
func bindReadOnly(src, dst string) error {
	// The destination is looked up once, following links as the source's
	// clone does (a .git/hooks that is a link to ../.husky: a mount onto
	// the link's path itself is refused, and failed every command in the
	// workspace, red team 43), and the mount goes onto what was looked
	// up: a link repointed in between cannot move it.
	// Never through a process's own link (config -> /proc/self/cwd
	// would have made the workspace read-only; -> /dev/stdin is a pipe
	// no mount takes, and failed every later command, red team 42):
	// nothing a mount can keep, the command can repoint the link anyway,
	// and the repository search tells it as not checked.
	to, err := unix.Openat2(unix.AT_FDCWD, dst, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		// A reader's own link is skipped only where dst is protected
		// over itself: a path to hide (src /dev/null) fails closed.
		if errors.Is(err, unix.ENOENT) || src == dst && errors.Is(err, unix.ELOOP) && readerDependent(dst) {
			return nil // gone since the plan was made, or a reader's own: nothing to protect
		}
		return fmt.Errorf("mount: protecting %q (look-up): %w", dst, err)
	}
	defer unix.Close(to)
	var fd int
	if src == dst {
		fd, err = unix.OpenTree(to, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
	} else {
		fd, err = unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	}
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil // gone since the plan was made: nothing to protect
		}
		return fmt.Errorf("mount: protecting %q (bind): %w", dst, err)
	}
	defer unix.Close(fd)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("mount: protecting %q (read-only): %w", dst, err)
	}
	if err := unix.MoveMount(fd, "", to, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("mount: protecting %q (attach): %w", dst, err)
	}
	return nil
}

// protect binds p read-only over itself where it leads into a writable
// root. A protected path may be a link (a .git/hooks linked to
// ../.husky), and the mount goes where it leads; but not onto a folder
// outside every writable root (read-only already), nor onto a writable
// root or a folder above one: a command that linked a repository's hooks
// to the workspace, /tmp or / made those read-only for every later
// command (and, from /tmp, every user's), and each link to / doubled the
// mounts until commands failed (red team 44); nor onto a folder that holds
// the link itself, which could then never be removed. What such a link leads to
// is told by the repository search, not held.
func protect(p string, roots []string) error {
	to, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return bindReadOnly(p, p) // its own reasons (absent, a reader's own link)
	}
	real, err := os.Readlink("/proc/thread-self/fd/" + strconv.Itoa(to))
	unix.Close(to)
	if err != nil {
		return fmt.Errorf("mount: protecting %q (where it leads): %w", p, err)
	}
	switch {
	case !hasRoot(roots, real), slices.ContainsFunc(roots, func(r string) bool { return r == real || within(r, real) }):
		return nil
	case real != p && within(p, real):
		// A link to a folder that holds it (hooks -> ../.., the
		// workspace): read-only, it could never be removed again.
		return nil
	}
	return bindReadOnly(p, p)
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
//
// Each path is opened here (see openGrant: no link followed) and handed
// to go-landlock as /proc/self/fd/N, which opens exactly that file; the
// descriptors stay open until release is called, after the restriction.
func landlockRules(plan Plan, cfg landlock.Config, mounts bool, terminals []string) (rules []landlock.Rule, release func(), err error) {
	var fds []int
	release = func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	for _, g := range landlockGrants(plan, mounts, terminals) {
		fd, err := openGrant(g.Path)
		if errors.Is(err, errSkipGrant) {
			continue // gone, or a link, since the plan was made
		}
		if err != nil {
			release()
			return nil, nil, fmt.Errorf("landlock: opening %q: %w", g.Path, err)
		}
		fds = append(fds, fd)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			release()
			return nil, nil, fmt.Errorf("landlock: %q: %w", g.Path, err)
		}
		rights := grantRights(g, st.Mode&unix.S_IFMT == unix.S_IFDIR, uint64(cfg.HandledAccessFS))
		if rights == 0 {
			continue
		}
		rules = append(rules, landlock.PathAccess(landlock.AccessFSSet(rights), "/proc/self/fd/"+strconv.Itoa(fd)))
	}
	return rules, release, nil
}

func applyLandlock(plan Plan, abi int, mounts bool) error {
	cfg := landlockConfig(abi, plan.Network || plan.Egress)
	rules, release, err := landlockRules(plan, cfg, mounts, ownTerminals())
	if err != nil {
		return err
	}
	defer release()
	// The second layer, as on the thread path: nothing in /dev but the
	// plan's devices and the terminals (root reads any device otherwise).
	// Made first: the first layer may forbid listing /.
	var devices []landlock.Rule
	err = deviceLayer(plan, func(g Grant) error {
		st, err := os.Stat(g.Path)
		if rights := grantRights(g, err == nil && st.IsDir(), uint64(cfg.HandledAccessFS)); rights != 0 {
			devices = append(devices, landlock.PathAccess(landlock.AccessFSSet(rights), g.Path).IgnoreIfMissing())
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := cfg.Restrict(rules...); err != nil {
		return fmt.Errorf("landlock: restricting (ABI %d, %d rules): %w", abi, len(rules), err)
	}
	if err := cfg.Restrict(devices...); err != nil {
		return fmt.Errorf("landlock: restricting /dev (ABI %d, %d rules): %w", abi, len(devices), err)
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
