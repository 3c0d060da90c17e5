//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A builtThread is a thread sandbox [BuildThread] applied ahead of the
// call, for the plan the next command was expected to have, with what it
// was built from. Owner: the thread (built, by its id) until
// [ApplyThread] takes it for its command or release frees it.
type builtThread struct {
	payload string
	// mounts is the program's mount table, opened before the thread's
	// copy was checked: it polls as changed once a mount is made or
	// removed there.
	mounts int
	// listen is the listener of the seccomp filter (network off, for a
	// [NetWatch]); -1: none.
	listen int
	// kept are the paths the mount layer works on, as they were when it
	// did; dirs are the folders whose entries the Landlock layers were
	// carved from, as they were (see identities).
	kept, dirs []identity
	// views are the kept paths as the built thread sees them (its
	// mounts), and root its root (an O_PATH descriptor: paths looked up
	// from it cross the built thread's mounts, whichever thread looks).
	views []identity
	root  int
	// held are descriptors of the kept paths' files, held while the
	// thread is: a file system may give a removed file's inode number
	// to the next one made (ext4 does, at once), but not while a
	// descriptor keeps the removed one.
	held []int
}

// An identity is what a path named when a thread was built: the file
// (device, inode, type, and for a file not a folder its number of
// names), or the error looking it up gave; for a folder whose entries
// count, also its change times.
type identity struct {
	path       string
	dev, ino   uint64
	mode       uint16
	nlink      uint32
	btime      unix.StatxTimestamp // its birth, where the file system keeps it
	mnt        uint64              // the mount it is on (views only)
	mtime      unix.StatxTimestamp
	ctime      unix.StatxTimestamp
	err        error
	withStamps bool
}

// built holds each built thread's sandbox by thread id.
var built sync.Map

// builtUsed and builtUnfit count the built threads a command was forked
// from, and those found not to fit the call's plan (see BuiltThreads).
var builtUsed, builtUnfit atomic.Uint64

// BuiltThreads says how many commands were forked from a thread built
// ahead by [BuildThread], and how many built threads were found not to
// fit the plan of the call that came: for traces and tests.
func BuiltThreads() (used, unfit uint64) { return builtUsed.Load(), builtUnfit.Load() }

// BuildThread completes, ahead of the call, the thread sandbox
// [ApplyThread] would give a command of payload, on the calling thread
// (held, never given back, and prepared by [WarmThread]): the mounts,
// no_new_privs, the capabilities, Landlock and seccomp are all in place
// when it returns. fits, asked from another thread of the program when
// the call comes, says whether that sandbox is still the one ApplyThread
// would build now for the call's payload: the same plan, the program's
// mounts unchanged, every path the mount layer works on still the same
// file (or still absent), and no entry made, removed or renamed in the
// folders the Landlock layers were carved from (/, and those on the way
// to each unreadable path). A thread that fits is then taken by
// ApplyThread with nothing more to do; one that does not must fork
// nothing, and release frees what it holds when it retires.
//
// Nothing is built (fits is nil, and the thread is as WarmThread left
// it) when the thread was not warmed, the payload does not decode, it
// enforces nothing, or it runs in the egress network namespace (which
// the thread enters before its sandbox, at the call). An error means the thread is half-restricted: it
// must fork nothing.
func BuildThread(payload []byte) (fits func([]byte) bool, release func(), err error) {
	tid := unix.Gettid()
	if _, ok := warmed.Load(tid); !ok {
		return nil, nil, nil
	}
	plan, err := decoded.get(payload)
	if err != nil || !plan.Enforced() || plan.Egress || ThreadAvailable() != nil {
		// (An egress command's thread enters the egress network
		// namespace first, which a sandboxed thread can no longer do.)
		return nil, nil, nil
	}
	b := &builtThread{payload: string(payload), mounts: -1, listen: -1, root: -1}
	// The program's mount table (the main thread never leaves its
	// namespace), opened before the warmed copy is checked by the build:
	// a mount made after that check polls as a change here.
	if b.mounts, err = unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
		return nil, nil, nil
	}
	// What the mount layer makes, made first, so that it is part of
	// what the thread was built from (made again, it is left as it is).
	makeEmpty(plan.MakeDirs, true)
	makeEmpty(plan.MakeFiles, false)
	b.kept, b.dirs, b.held = identities(plan)
	var listen func(int)
	if plan.NotifyFD != 0 {
		listen = func(fd int) { b.listen = fd }
	}
	if err := applyThreadAhead(payload, listen); err != nil {
		b.close()
		return nil, nil, fmt.Errorf("building a thread sandbox ahead: %w", err)
	}
	// Each kept path as this thread sees it now, mount and all: a mount
	// made by the build goes when the name it is on is removed or moved
	// elsewhere (red team 33: a protected file moved aside, linked back,
	// and the other name removed — the same file, one name, and no
	// mount over it any more).
	if b.root, err = unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		// Sandboxed, and with nothing to check it by: it forks nothing.
		b.close()
		return nil, nil, fmt.Errorf("building a thread sandbox ahead: its root: %w", err)
	}
	for _, id := range b.kept {
		b.views = append(b.views, view(b.root, id.path))
	}
	built.Store(tid, b)
	release = func() {
		if built.CompareAndDelete(tid, b) {
			b.close()
		}
	}
	return b.fits, release, nil
}

// takeBuilt takes over the sandbox BuildThread built on the calling
// thread; nil when none.
func takeBuilt() *builtThread {
	v, ok := built.LoadAndDelete(unix.Gettid())
	if !ok {
		return nil
	}
	return v.(*builtThread)
}

// use is ApplyThread on a built thread: the sandbox is in place; the
// seccomp listener goes to listen. The caller asked fits first.
func (b *builtThread) use(payload []byte, listen func(int)) error {
	defer b.close()
	if string(payload) != b.payload {
		// Never taken for another plan (the Forker asks fits); the
		// thread is restricted and must fork nothing.
		return errors.New("thread sandbox: this thread was built ahead for another plan")
	}
	// Set when it was built; again, as for every thread sandbox.
	if err := undumpable(); err != nil {
		return err
	}
	if listen != nil && b.listen >= 0 {
		listen(b.listen)
		b.listen = -1
	}
	builtUsed.Add(1)
	warmUsed.Add(1)
	return nil
}

// fits reports whether the sandbox built is the one a thread sandbox for
// payload would be if built now (see BuildThread). It is asked once,
// from a thread in the program's mount namespace.
func (b *builtThread) fits(payload []byte) bool {
	ok := string(payload) == b.payload && b.mountsUnchanged() && unchanged(b.kept, false) && unchanged(b.dirs, true) && b.viewsUnchanged()
	if !ok {
		builtUnfit.Add(1)
	}
	return ok
}

// mountsUnchanged reports whether the program's mount table has had no
// mount made or removed since b.mounts was opened.
func (b *builtThread) mountsUnchanged() bool {
	fds := []unix.PollFd{{Fd: int32(b.mounts), Events: unix.POLLPRI}}
	n, err := unix.Poll(fds, 0)
	return err == nil && (n == 0 || fds[0].Revents&(unix.POLLPRI|unix.POLLERR) == 0)
}

func (b *builtThread) close() {
	for _, fd := range []*int{&b.mounts, &b.listen, &b.root} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
	for _, fd := range b.held {
		unix.Close(fd)
	}
	b.held = nil
}

// identities are what a thread sandbox built for plan depends on besides
// the plan: kept, the paths the mount layer works on (writable roots and
// /dev/shm, read-only files, protected paths, unreadable paths, covered
// sockets, nested roots, gitdirs, what it makes empty, the folders it
// pins); dirs, those of carvedDirs. held are descriptors of the kept
// files, each the one its identity was taken from: the caller closes
// them.
func identities(plan Plan) (kept, dirs []identity, held []int) {
	paths := slices.Concat(plan.WritableRoots, []string{"/dev/shm"}, plan.ReadOnlyFiles, plan.Protected,
		plan.DenyRead, plan.Sockets, plan.NestedRoots, plan.GitDirs, plan.MakeDirs, plan.MakeFiles)
	// And the folders it pins (red team 34: a folder above the
	// workspace swapped for another, the workspace moved into it — the
	// old one kept its pin, the new one had none).
	for _, ds := range pinned(plan.WritableRoots, pinsOf(plan)) {
		paths = append(paths, ds...)
	}
	paths = dedupe(paths)
	for _, p := range paths {
		// A folder the build pins, removed and made again in place,
		// has lost its pin and may get the old inode number back
		// (red team 35, on ext4), where its birth time is not kept:
		// held, the old number is nobody else's.
		fd, err := unix.Open(p, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			kept = append(kept, identify(p, false))
			continue
		}
		held = append(held, fd)
		id := identifyAt(fd, "", unix.AT_EMPTY_PATH, false)
		id.path = p
		kept = append(kept, id)
	}
	return kept, carvedDirs(plan), held
}

// carvedDirs are / (whose entries the device layer grants one by one)
// and the folders on the way to each unreadable path (whose other
// entries the plan's layer grants one by one), with their change times:
// a Landlock rule binds the file its path named when the layer was
// built, so an entry moved from one of them into an unreadable folder,
// and another made in its place, would be granted there by a layer built
// before — as one built now would not.
func carvedDirs(plan Plan) []identity {
	folders := []string{"/"}
	for _, d := range plan.DenyRead {
		for p := parentDir(d); p != "/"; p = parentDir(p) {
			folders = append(folders, p)
		}
	}
	var dirs []identity
	for _, p := range dedupe(folders) {
		dirs = append(dirs, identify(p, true))
	}
	return dirs
}

// parentDir is path's folder ("/" for a name in /).
func parentDir(path string) string {
	i := len(path) - 1
	for i > 0 && path[i] != '/' {
		i--
	}
	if i <= 0 {
		return "/"
	}
	return path[:i]
}

// identify looks path up without following a link it ends in.
func identify(path string, stamps bool) identity {
	return identifyAt(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, stamps)
}

// identifyAt is identify of name looked up from dirfd with flags.
func identifyAt(dirfd int, path string, flags int, stamps bool) identity {
	id := identity{path: path, withStamps: stamps}
	var st unix.Statx_t
	mask := unix.STATX_TYPE | unix.STATX_INO | unix.STATX_NLINK | unix.STATX_BTIME
	if stamps {
		mask |= unix.STATX_MTIME | unix.STATX_CTIME
	}
	if err := unix.Statx(dirfd, path, flags|unix.AT_STATX_SYNC_AS_STAT, mask, &st); err != nil {
		id.err = err
		return id
	}
	id.dev = unix.Mkdev(st.Dev_major, st.Dev_minor)
	id.ino, id.mode = st.Ino, st.Mode&unix.S_IFMT
	if st.Mask&unix.STATX_BTIME != 0 {
		// A folder removed and made again may get the same inode
		// number at once (ext4), not the same birth (red team 35: a
		// pinned folder remade in place had lost its pin).
		id.btime = st.Btime
	}
	if id.mode != unix.S_IFDIR {
		// A protected file moved aside and linked back under its name
		// is the same file, but its mount went with the other name
		// (red team 33): it has two names now.
		id.nlink = st.Nlink
	}
	if stamps {
		id.mtime, id.ctime = st.Mtime, st.Ctime
	}
	return id
}

// view looks path (absolute) up from root, a descriptor of a thread's
// root, with the mount it is on.
func view(root int, path string) identity {
	id := identity{path: path}
	var st unix.Statx_t
	rel := strings.TrimLeft(path, "/")
	if rel == "" {
		rel = "."
	}
	if err := unix.Statx(root, rel, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_SYNC_AS_STAT, unix.STATX_TYPE|unix.STATX_INO|unix.STATX_MNT_ID, &st); err != nil {
		id.err = err
		return id
	}
	id.dev, id.ino, id.mode, id.mnt = unix.Mkdev(st.Dev_major, st.Dev_minor), st.Ino, st.Mode&unix.S_IFMT, st.Mnt_id
	return id
}

// viewsUnchanged reports whether the built thread still sees each kept
// path as it did when built: the same file on the same mount.
func (b *builtThread) viewsUnchanged() bool {
	for _, was := range b.views {
		if view(b.root, was.path) != was {
			return false
		}
	}
	return true
}

// unchanged reports whether each path names what it named.
func unchanged(ids []identity, stamps bool) bool {
	for _, was := range ids {
		if identify(was.path, stamps) != was {
			return false
		}
	}
	return true
}
