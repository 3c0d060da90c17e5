package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// dirNames is the sorted names in dir, from the last listing of it while
// the directory provably has the same entries: every plan lists /tmp (for
// the multiplexers' and agents' sockets) and looks up ~40 unreadable paths
// that are mostly absent, and on ext4 a listing of a busy /tmp costs more
// than the rest of the plan together.
//
// A listing is reused only while the directory's status (mount, device,
// inode, change time) is what it was when it was read. Adding, removing
// or renaming an entry through the mount sets the directory's change time
// to the clock's present, and no call sets it to a chosen value
// (utimensat sets the change time to the present too). The clock file
// systems stamp with advances in ticks, and some stamp whole seconds, so
// a change in the tick (or second) of the listing could leave it as it
// was: a listing is kept only when the directory had not changed for a
// margin before it was read (see stood), so that whatever changes it
// later moves its change time on. A file system changed while it was not
// mounted (an image edited offline, then mounted again on the same
// device) keeps its change times as they were: the mount's unique number,
// never reused while the machine runs, tells that mount from the one the
// listing was read on; a kernel without it (before 6.8) keeps no
// listing. Only exact listings are kept (see listing.exact).
func dirNames(dir string) ([]string, error) {
	l, err := cachedListing(dir)
	return l.names, err
}

// listEntries is os.ReadDir(dir) (sorted by name), from the listing
// dirNames keeps, and whether the listing is exact (see listing.exact).
func listEntries(dir string) ([]string, []os.FileMode, bool, error) {
	l, err := cachedListing(dir)
	return l.names, l.types, l.exact, err
}

func cachedListing(dir string) (listing, error) {
	if l, ok, _ := keptListing(dir); ok {
		return l, nil
	}
	l, err := readListing(dir)
	if err != nil {
		return listing{}, err
	}
	if l.trusted {
		listings.mu.Lock()
		if len(listings.m) >= maxListings {
			clear(listings.m)
		}
		listings.m[dir] = l
		listings.mu.Unlock()
	}
	return l, nil
}

// keptListing is the listing of dir kept while it stands (see dirNames),
// if any; settled says dir has stood unchanged long enough (see stood: a
// listing read now would be kept).
func keptListing(dir string) (l listing, ok, settled bool) {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, dir, 0, statxWanted, &st); err != nil {
		return listing{}, false, false
	}
	listings.mu.Lock()
	l, ok = listings.m[dir]
	listings.mu.Unlock()
	if ok && l.same(&st) {
		return l, true, true
	}
	return listing{}, false, st.Mask&unix.STATX_MNT_ID_UNIQUE != 0 && stood(st.Ctime, time.Now())
}

// statxWanted is what a listing's status check asks of statx: its mount's
// unique number besides the basic status.
const statxWanted = unix.STATX_BASIC_STATS | unix.STATX_MNT_ID_UNIQUE

// listingMargin is how long a directory must have stood unchanged before a
// listing of it is kept: far above a clock tick (1–10 ms).
const listingMargin = 100 * time.Millisecond

// coarseMargin is listingMargin where the file system stamps whole
// seconds (ext4 with 128-byte inodes, as mke2fs makes one under 512 MiB,
// and an overlay on one): two changes in one second leave the change time
// as it was.
const coarseMargin = 2 * time.Second

// stood: a directory whose change time is ctime has stood unchanged long
// enough before now for a later change to move its change time on. A
// change time of no nanoseconds is taken for a file system of whole
// seconds (on one of nanoseconds that is one in a billion, and only makes
// the wait longer).
func stood(ctime unix.StatxTimestamp, now time.Time) bool {
	margin := listingMargin
	if ctime.Nsec == 0 {
		margin = coarseMargin
	}
	return time.Unix(ctime.Sec, int64(ctime.Nsec)).Before(now.Add(-margin))
}

// maxListings bounds the directories kept (a plan reads a few dozen).
const maxListings = 256

var listings = struct {
	mu sync.Mutex
	m  map[string]listing
}{m: map[string]listing{}}

type listing struct {
	mnt   uint64 // the mount's unique number (STATX_MNT_ID_UNIQUE)
	dev   [2]uint32
	ino   uint64
	ctime unix.StatxTimestamp
	names []string      // sorted; never changed once kept
	types []os.FileMode // each name's type (as os.DirEntry.Type)
	// exact: a lookup in the directory finds exactly the names listed,
	// spelled as listed, and the kernel sets its times as it changes: a
	// local file system of a known kind (not NFS, whose attributes are
	// cached, nor FUSE, nor autofs, whose entries appear when looked up,
	// nor XFS, whose ascii-ci file systems fold case, nor an overlay,
	// whose merged folders list what their layers held when first read
	// and take their times from the upper layer alone), no case-folding
	// directory, and no encrypted one (listed without its key, its names
	// are ciphertext, and a key added later changes every name and not
	// the change time). Only an exact listing may say a name is absent.
	exact bool
	// trusted: exact, read on a mount with a unique number, and the
	// directory had stood unchanged for listingMargin (coarseMargin on a
	// file system of whole seconds) when it was read: the listing may be
	// kept.
	trusted bool
}

func (l listing) same(st *unix.Statx_t) bool {
	return st.Mask&unix.STATX_MNT_ID_UNIQUE != 0 && l.mnt == st.Mnt_id &&
		l.dev == [2]uint32{st.Dev_major, st.Dev_minor} && l.ino == st.Ino && l.ctime == st.Ctime
}

// readListing lists dir and says whether the listing may be kept.
func readListing(dir string) (listing, error) {
	before := time.Now()
	// A folder only: a FIFO put at its name would be waited on for ever.
	f, err := os.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return listing{}, err
	}
	defer f.Close()
	fd := int(f.Fd())
	var st unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, statxWanted, &st); err != nil {
		return listing{}, err
	}
	entries, err := f.ReadDir(-1)
	if err != nil {
		return listing{}, err
	}
	slices.SortFunc(entries, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	l := listing{mnt: st.Mnt_id, dev: [2]uint32{st.Dev_major, st.Dev_minor}, ino: st.Ino, ctime: st.Ctime, names: make([]string, len(entries)), types: make([]os.FileMode, len(entries))}
	for i, e := range entries {
		l.names[i], l.types[i] = e.Name(), e.Type()
	}
	l.exact = st.Mode&unix.S_IFMT == unix.S_IFDIR && stampedLocally(fd) && plainNames(fd, &st)
	l.trusted = l.exact && st.Mask&unix.STATX_MNT_ID_UNIQUE != 0 && stood(st.Ctime, before)
	return l, nil
}

// openDir opens the folder dir itself (no symbolic link followed).
func openDir(dir string) (*os.File, error) {
	// Through no link at all, not the last name only: a folder on the
	// way swapped for a link to the home, between the search's look and
	// this open, would list the home (red team 45).
	fd, err := unix.Openat2(unix.AT_FDCWD, dir, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return os.NewFile(uintptr(fd), dir), nil
}

// sameDir: f is the folder key names (its device and inode).
func sameDir(f *os.File, key fileKey) bool {
	var st unix.Stat_t
	return unix.Fstat(int(f.Fd()), &st) == nil && st.Dev == key.dev && st.Ino == key.ino
}

// keepableDir: the folder f lists exactly what lookups find in it, on a
// file system that stamps and reports its changes (see listing.exact).
func keepableDir(f *os.File) bool {
	fd := int(f.Fd())
	var st unix.Statx_t
	if unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_BASIC_STATS, &st) != nil {
		return false
	}
	return stampedLocally(fd) && plainNames(fd, &st)
}

// openDirFollowing opens the folder path names, following links, and
// nothing else (a FIFO at its name is not waited on).
func openDirFollowing(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|unix.O_DIRECTORY, 0)
}

// noWaitFlags open a file without waiting (a FIFO) and without making it
// the program's terminal (see openRegular).
const noWaitFlags = unix.O_NONBLOCK | unix.O_NOCTTY

// kernelFile: f is on a file system whose files the kernel makes as it
// reads them (proc, sysfs), where /proc/self is the reader's own: not
// what git reads there.
func kernelFile(f *os.File) bool {
	var fs unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &fs); err != nil {
		return true
	}
	switch fs.Type {
	case unix.PROC_SUPER_MAGIC, unix.SYSFS_MAGIC, unix.DEBUGFS_MAGIC, unix.TRACEFS_MAGIC, unix.SECURITYFS_MAGIC, unix.BPF_FS_MAGIC, unix.CGROUP_SUPER_MAGIC, unix.CGROUP2_SUPER_MAGIC:
		return true
	}
	return false
}

// readerDependent: the way to path takes a link that each process reads
// as its own — a process's cwd, root or descriptor in /proc (a magic link:
// /proc/self/cwd, /dev/fd/3, /dev/stdin) — so git, run in another folder
// (the repository's top), reads another file there than this program
// does (red team 42 linked a new repository's config and hooks to
// /proc/self/cwd/...: the program read its own working directory, git
// the repository, and ran what a command had put there, untold).
func readerDependent(path string) bool {
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_MAGICLINKS})
	if err == nil {
		unix.Close(fd)
		return false
	}
	if err != unix.ELOOP {
		return false
	}
	// ELOOP is also too many links: a path whose plain lookup ends
	// otherwise (found, or not: the reader's own folder may not hold it,
	// git's does) took a magic link.
	fd, err = unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err == nil {
		unix.Close(fd)
	}
	return err != unix.ELOOP
}

// openNoMagicLinks opens path (following links, as git does) with flags,
// through no magic link (see readerDependent): ELOOP where one is on the
// way.
func openNoMagicLinks(path string, flags int) (*os.File, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// stampedLocally: the file system of fd is one whose times the kernel sets
// as it changes the directory, on this machine.
func stampedLocally(fd int) bool {
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		return false
	}
	switch fs.Type {
	case unix.TMPFS_MAGIC, unix.EXT4_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC:
		return true
	}
	return false
}

// plainNames: the directory fd (whose status is st) lists its names as
// lookups match them — not encrypted (by its status, or by its flags, for
// a kernel whose statx does not say), and not case-folding — and its
// flags say so (no answer counts as no).
func plainNames(fd int, st *unix.Statx_t) bool {
	if st.Attributes&unix.STATX_ATTR_ENCRYPTED != 0 {
		return false
	}
	flags, err := unix.IoctlGetInt(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		// tmpfs before 6.13 and others answer ENOTTY: they neither
		// fold case nor encrypt (ext4 and btrfs answer).
		return err == unix.ENOTTY || err == unix.EINVAL || err == unix.EOPNOTSUPP
	}
	return flags&(fsCasefoldFL|fsEncryptFL) == 0
}

// fsCasefoldFL and fsEncryptFL are FS_CASEFOLD_FL and FS_ENCRYPT_FL of
// linux/fs.h (not in x/sys/unix).
const (
	fsCasefoldFL = 0x40000000
	fsEncryptFL  = 0x00000800
)

// absence holds the listings one plan reads, and says from them which
// paths are provably absent: one status check a folder however many paths
// it holds (the unreadable paths are mostly in the home, and mostly
// absent), and no listing read only to say so (a busy /tmp costs more to
// list than its few paths to look up).
type absence struct {
	listed map[string]planListing
	gone   map[string]bool
}

// planListing is a folder's listing as this plan has it.
type planListing struct {
	names []string
	exact bool // see listing.exact
	err   error
}

func newAbsence() *absence {
	return &absence{listed: map[string]planListing{}, gone: map[string]bool{}}
}

// read is dir's sorted names for this plan: the plan's listing, else one
// kept (see dirNames), else read now (and kept if it may be).
func (a *absence) read(dir string) ([]string, error) {
	if l, ok := a.listed[dir]; ok && l.err != errNotListed {
		return l.names, l.err
	}
	l, err := cachedListing(dir)
	a.listed[dir] = planListing{l.names, l.exact && err == nil, err}
	return l.names, err
}

// list is dir's names when an exact listing of it is at hand: this plan's
// or one kept, or one read now that will be kept (the folder has settled).
// A folder that changed lately is not read: the caller looks the path up.
func (a *absence) list(dir string) ([]string, bool) {
	if l, ok := a.listed[dir]; ok {
		return l.names, l.exact
	}
	l, ok, settled := keptListing(dir)
	if !ok && settled {
		var err error
		if l, err = cachedListing(dir); err == nil {
			ok = true
		}
	}
	if !ok {
		a.listed[dir] = planListing{err: errNotListed}
		return nil, false
	}
	a.listed[dir] = planListing{l.names, l.exact, nil}
	return l.names, l.exact
}

// forget drops what the plan has of dir (the plan changed it), and every
// answer given.
func (a *absence) forget(dir string) {
	delete(a.listed, dir)
	clear(a.gone)
}

// errNotListed: a folder this plan did not list.
var errNotListed = errors.New("not listed")

// absent: path's folder, or a folder above it, has no entry of the name
// on the way; false when that cannot be said (no exact listing at hand
// of a folder on the way). Folders are looked at from the root down; a
// path with ".." is never said absent (".." after a link is the link's
// target's folder).
func (a *absence) absent(path string) bool {
	if !filepath.IsAbs(path) || hasDotDot(path) {
		return false
	}
	return a.absentClean(filepath.Clean(path))
}

func (a *absence) absentClean(path string) bool {
	if path == "/" {
		return false
	}
	if gone, ok := a.gone[path]; ok {
		return gone
	}
	dir := filepath.Dir(path)
	gone := a.absentClean(dir)
	if !gone {
		if names, ok := a.list(dir); ok {
			_, found := slices.BinarySearch(names, filepath.Base(path))
			gone = !found
		}
	}
	a.gone[path] = gone
	return gone
}

// present: path's folder has an entry of its name (from a listing at
// hand, as absent).
func (a *absence) present(path string) bool {
	if !filepath.IsAbs(path) || hasDotDot(path) {
		return false
	}
	path = filepath.Clean(path)
	if path == "/" || a.absentClean(path) {
		return false
	}
	names, ok := a.list(filepath.Dir(path))
	if !ok {
		return false
	}
	_, found := slices.BinarySearch(names, filepath.Base(path))
	return found
}

// oDirectory opens a folder only.
const oDirectory = unix.O_DIRECTORY

// fdPath is where the open file f lies, as the kernel names it.
func fdPath(f *os.File) (string, error) {
	c, err := f.SyscallConn()
	if err != nil {
		return "", err
	}
	var p string
	var rerr error
	if err := c.Control(func(fd uintptr) {
		p, rerr = os.Readlink("/proc/thread-self/fd/" + strconv.Itoa(int(fd)))
	}); err != nil {
		return "", err
	}
	return p, rerr
}

// openNoLinks opens path with flags through no symbolic link at all
// (RESOLVE_NO_SYMLINKS): ELOOP where one is on the way, the last name
// included. Where it opens, the path is where it leads.
func openNoLinks(path string, flags int) (*os.File, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: unix.RESOLVE_NO_SYMLINKS})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// oPath opens a name only (no reading).
const oPath = unix.O_PATH

// linkOnWay: err (from openNoLinks) says a link is on the way, or says
// nothing either way: the way must be walked.
func linkOnWay(err error) bool {
	return !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR)
}

// statNoLinks is os.Stat of a path that holds no link: ELOOP where one
// is on the way (one swapped in since the path was looked up).
func statNoLinks(path string) (os.FileInfo, error) {
	f, err := openNoLinks(path, unix.O_PATH)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Stat()
}
