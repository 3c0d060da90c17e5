package sandbox

import (
	"os"
	"path/filepath"
	"slices"
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
// A listing is reused only while the directory's status (device, inode,
// change time) is what it was when it was read. Adding, removing or
// renaming an entry sets the directory's change time to the clock's
// present, and no call sets it to a chosen value (utimensat sets the
// change time to the present too). The clock file systems stamp with
// advances in ticks, so a change in the tick of the listing could leave
// it as it was: a listing is kept only when the directory had not changed
// for listingMargin before it was read, so that whatever changes it later
// moves its change time on. Only exact listings are kept (see
// listing.exact).
func dirNames(dir string) ([]string, error) {
	l, err := cachedListing(dir)
	return l.names, err
}

// dirEntries is os.ReadDir(dir) (sorted by name), from the listing
// dirNames keeps.
func dirEntries(dir string) ([]string, []os.FileMode, error) {
	l, err := cachedListing(dir)
	return l.names, l.types, err
}

func cachedListing(dir string) (listing, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err == nil {
		listings.mu.Lock()
		l, ok := listings.m[dir]
		listings.mu.Unlock()
		if ok && l.same(&st) {
			return l, nil
		}
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

// listingMargin is how long a directory must have stood unchanged before a
// listing of it is kept: far above a clock tick (1–10 ms).
const listingMargin = 100 * time.Millisecond

// maxListings bounds the directories kept (a plan reads a few dozen).
const maxListings = 256

var listings = struct {
	mu sync.Mutex
	m  map[string]listing
}{m: map[string]listing{}}

type listing struct {
	dev, ino uint64
	ctime    unix.Timespec
	names    []string      // sorted; never changed once kept
	types    []os.FileMode // each name's type (as os.DirEntry.Type)
	// exact: a lookup in the directory finds exactly the names listed,
	// spelled as listed, and the kernel sets its times as it changes: a
	// local file system of a known kind (not NFS, whose attributes are
	// cached, nor FUSE, nor autofs, whose entries appear when looked up,
	// nor XFS, whose ascii-ci file systems fold case), and no case-folding
	// directory. Only an exact listing may say a name is absent.
	exact bool
	// trusted: exact, and the directory had stood unchanged for
	// listingMargin when it was read: the listing may be kept.
	trusted bool
}

func (l listing) same(st *unix.Stat_t) bool {
	return l.dev == st.Dev && l.ino == st.Ino && l.ctime == st.Ctim
}

// readListing lists dir and says whether the listing may be kept.
func readListing(dir string) (listing, error) {
	before := time.Now()
	f, err := os.Open(dir)
	if err != nil {
		return listing{}, err
	}
	defer f.Close()
	fd := int(f.Fd())
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return listing{}, err
	}
	entries, err := f.ReadDir(-1)
	if err != nil {
		return listing{}, err
	}
	slices.SortFunc(entries, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	l := listing{dev: st.Dev, ino: st.Ino, ctime: st.Ctim, names: make([]string, len(entries)), types: make([]os.FileMode, len(entries))}
	for i, e := range entries {
		l.names[i], l.types[i] = e.Name(), e.Type()
	}
	changed := time.Unix(st.Ctim.Unix())
	l.exact = st.Mode&unix.S_IFMT == unix.S_IFDIR && stampedLocally(fd) && !caseFolding(fd)
	l.trusted = l.exact && changed.Before(before.Add(-listingMargin))
	return l, nil
}

// stampedLocally: the file system of fd is one whose times the kernel sets
// as it changes the directory, on this machine.
func stampedLocally(fd int) bool {
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		return false
	}
	switch fs.Type {
	case unix.TMPFS_MAGIC, unix.EXT4_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.OVERLAYFS_SUPER_MAGIC:
		return true
	}
	return false
}

// caseFolding: the directory fd looks names up without regard to case
// (or says nothing, which counts as yes).
func caseFolding(fd int) bool {
	flags, err := unix.IoctlGetInt(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		// tmpfs before 6.13 and others answer ENOTTY: they do not fold.
		return err != unix.ENOTTY && err != unix.EINVAL && err != unix.EOPNOTSUPP
	}
	return flags&fsCasefoldFL != 0
}

// fsCasefoldFL is FS_CASEFOLD_FL of linux/fs.h (not in x/sys/unix).
const fsCasefoldFL = 0x40000000

// absence says which paths are provably absent, from listings of their
// folders: one status check a folder however many paths it holds (the
// unreadable paths are mostly in the home, and mostly absent). One serves
// one plan.
type absence struct {
	listed map[string][]string
	failed map[string]bool
	gone   map[string]bool
}

func newAbsence() *absence {
	return &absence{listed: map[string][]string{}, failed: map[string]bool{}, gone: map[string]bool{}}
}

// absent: path's folder, or a folder above it, has no entry of the name
// on the way; false when that cannot be said (a folder that cannot be
// read). Folders are looked at from the root down.
func (a *absence) absent(path string) bool {
	if !filepath.IsAbs(path) || slices.Contains(strings.Split(path, "/"), "..") {
		return false // ".." after a link is the link's target's folder
	}
	path = filepath.Clean(path)
	if path == "/" {
		return false
	}
	if gone, ok := a.gone[path]; ok {
		return gone
	}
	dir := filepath.Dir(path)
	gone := a.absent(dir)
	if !gone {
		if names, ok := a.list(dir); ok {
			_, found := slices.BinarySearch(names, filepath.Base(path))
			gone = !found
		}
	}
	a.gone[path] = gone
	return gone
}

// present: path's folder has an entry of its name.
func (a *absence) present(path string) bool {
	if !filepath.IsAbs(path) || slices.Contains(strings.Split(path, "/"), "..") {
		return false
	}
	path = filepath.Clean(path)
	if path == "/" || a.absent(path) {
		return false
	}
	names, ok := a.list(filepath.Dir(path))
	if !ok {
		return false
	}
	_, found := slices.BinarySearch(names, filepath.Base(path))
	return found
}

// list is dir's names when its listing is exact (see listing.exact).
func (a *absence) list(dir string) ([]string, bool) {
	if names, ok := a.listed[dir]; ok {
		return names, true
	}
	if a.failed[dir] {
		return nil, false
	}
	l, err := cachedListing(dir)
	if err != nil || !l.exact {
		a.failed[dir] = true
		return nil, false
	}
	a.listed[dir] = l.names
	return l.names, true
}
