package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// The search for repositories below the writable roots runs for every
// command (twice: the plan, and the check after it), so it is bounded and
// cached.

const (
	// GitScanDepth is how deep below the workspace (and each configured
	// writable root) repositories are looked for: as deep as a path goes,
	// in effect — the search is bounded by the directories it reads, and
	// says when it reaches that bound. (A bound of 4 was reached without
	// a word: red team 23 made a repository five folders down, which the
	// host's git add -A then recorded, and git status entered.)
	GitScanDepth = 256
	// GitScanDirs is how many directories are read below one such root,
	// at most, breadth first: the shallow ones first.
	GitScanDirs = 1024
	// GitScanTmpDepth and GitScanTmpDirs bound the search of the shared
	// temporary directories (/tmp, $TMPDIR), where everything on the
	// machine leaves folders: /tmp/x/.git and /tmp/x.git are found.
	GitScanTmpDepth = 1
	GitScanTmpDirs  = 256
)

// gitScanWide is how many subdirectories of one folder the search reads
// in its turn; the rest wait until everything else was read.
const gitScanWide = 64

// gitSkip are the directory names the search does not enter: dependency
// trees nobody runs git in.
var gitSkip = map[string]bool{"node_modules": true}

// dirMark says what a directory holds that makes it matter to git.
type dirMark uint8

const (
	markDotGitDir   dirMark = 1 << iota // a .git directory
	markDotGitFile                      // a .git file (a worktree's or submodule's pointer)
	markDotGitLink                      // a .git symbolic link
	markGitdir                          // HEAD, objects/ and refs/: a gitdir itself (bare)
	markMaybeGitdir                     // HEAD, and objects (of any kind) or commondir: see looksLikeGitdir
)

// dirListing is what the search needs of one directory.
type dirListing struct {
	subdirs []string // names of the subdirectories (not symbolic links)
	links   []string // names of the symbolic links (but .git)
	// subIno are their inode numbers, as the directory lists them (0
	// where unknown): a kept listing of a subdirectory is used while it
	// is of the folder this names (see listDir).
	subIno []uint64
	dev    uint64 // the directory's device
	mark   dirMark
}

// listDir reads dir (through the cache, see dirCache). via is the
// folder the path led to as the parent's listing, kept and current,
// names it: its device and the inode number it lists (a zero inode when
// no such listing is at hand). A watched listing of that very folder is
// used without looking the path up; otherwise the path is looked up.
func listDir(dir string, via fileKey) (dirListing, error) {
	if via.ino != 0 {
		if l, ok := dirs.getWatched(dir, via); ok {
			return l, nil
		}
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return dirListing{}, err
	}
	key, cacheable := statKey(fi)
	if cacheable {
		if l, ok := dirs.get(dir, key); ok {
			return l, nil
		}
	}
	f, err := openDir(dir)
	if err != nil {
		return dirListing{}, err
	}
	defer f.Close()
	// Only a folder whose listing holds what lookups find, on a file
	// system whose changes the kernel reports and stamps, is kept.
	cacheable = cacheable && sameDir(f, key) && keepableDir(f)
	// Watched before it is read: a change after the watch is an event, one
	// before it is in what is read.
	wd := -1
	if cacheable {
		wd = dirs.watch(dir)
	}
	readAt := time.Now()
	entries, err := readEntries(f)
	if err != nil {
		return dirListing{}, err
	}
	l := dirListing{dev: key.dev}
	var head, objects, refs, commondir bool
	for _, e := range entries {
		t := e.typ
		// A case-insensitive folder finds .GIT as .git, and git does:
		// the names are matched without regard to case.
		switch name := e.name; {
		case strings.EqualFold(name, ".git"):
			switch {
			case t.IsDir():
				l.mark |= markDotGitDir
			case t&fs.ModeSymlink != 0:
				l.mark |= markDotGitLink
			default:
				l.mark |= markDotGitFile
			}
			continue
		case strings.EqualFold(name, "HEAD"):
			head = t.IsRegular() || t&fs.ModeSymlink != 0
		case strings.EqualFold(name, "objects"):
			// Any kind: git asks only that it be searchable (access
			// X_OK), which an executable file is (red team 26).
			objects = true
		case strings.EqualFold(name, "refs"):
			refs = true
		case strings.EqualFold(name, "commondir"):
			commondir = !t.IsDir() // a file, or a link git follows to one
		}
		switch {
		case t.IsDir():
			l.subdirs = append(l.subdirs, e.name)
			l.subIno = append(l.subIno, e.ino)
		case t&fs.ModeSymlink != 0:
			l.links = append(l.links, e.name)
		}
	}
	// A gitdir as git tells one: HEAD, and objects/ and refs/ here or in
	// the folder its commondir file names (red team 18 split one in two,
	// HEAD and commondir in src, the rest in .cfg, and git run in src
	// took .cfg/config).
	if head && (objects && refs || commondir) {
		l.mark |= markGitdir
	}
	if head && (objects || commondir) {
		l.mark |= markMaybeGitdir
	}
	if cacheable {
		dirs.put(dir, key, readAt, wd, l)
	}
	return l, nil
}

// dirEntry is a directory entry's name, type and inode number (0 where
// unknown).
type dirEntry struct {
	name string
	typ  fs.FileMode
	ino  uint64
}

// fileKey identifies a directory's inode, as of its last change.
type fileKey struct {
	dev, ino uint64
	ctime    time.Time
}

// dirCache keeps the listings of directories by path. A listing stands
// only while the path leads to the same folder (device and inode): a
// folder above it renamed, and another put in its place, is no event of
// the folder read. Where the kernel reports changes (inotify, see
// dirWatcher), it stands until an entry of the folder is made, removed
// or renamed, or the folder itself goes: the event drops it, and
// findRepos takes in every event queued before it starts. There the
// path need not be looked up again: a root is, and every folder below
// it is reached through its parent's listing, itself current, which
// names the folder's inode (a mount, which makes no event of the folder
// above, drops every listing: see mountWatch). Elsewhere a
// listing stands while the folder has the same change time, which
// changes with every such change (and, unlike the modification time,
// cannot be set back); as a time can lag behind a change made within the
// same clock tick (file times are coarse), a listing read within
// racyWindow of the folder's last change is never trusted there (git's
// "racily clean" rule). Only folders whose listing is exact are kept
// (see keepableDir). Its zero value is ready for use.
type dirCache struct {
	// mu guards the fields below.
	mu sync.Mutex
	m  map[string]cachedDir
	// w reports changes; paths names each watch's directory.
	w     dirWatcher
	paths map[int]string
	// noWatch: listings are checked by time only (see WatchDirectories).
	noWatch bool
	// mounts reports mounts made and removed.
	mounts mountWatch
}

type cachedDir struct {
	key     fileKey
	trusted bool
	wd      int // the directory's watch, -1 for none
	l       dirListing
}

const (
	racyWindow = 2 * time.Second
	// dirCacheMax bounds the cache; past it, it starts again empty.
	dirCacheMax = 16 * GitScanDirs
)

var dirs dirCache

// WatchDirectories says whether the repository search may ask the kernel
// to report changes to the directories it read (inotify; on by default).
// A program that runs one command and exits turns it off: the listings
// are then checked by time, and the exit does not wait for the kernel
// to tear the watches down (milliseconds, a grace period).
func WatchDirectories(on bool) {
	dirs.mu.Lock()
	dirs.noWatch = !on
	dirs.mu.Unlock()
}

// watch asks the kernel to report changes to dir; -1 when it cannot.
func (c *dirCache) watch(dir string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.noWatch || len(c.paths) >= dirCacheMax {
		return -1
	}
	wd := c.w.add(dir)
	if wd >= 0 {
		if c.paths == nil {
			c.paths = map[int]string{}
		}
		// The kernel gives a folder one watch, whatever path it was
		// added by: a folder read under another path before (its parent
		// renamed since) is kept under one path at a time, so that its
		// events drop the listing they are about (red team 18: renamed
		// away, read there, renamed back, a .git made, and the listing
		// kept under the first path was used).
		if old, ok := c.paths[wd]; ok && old != dir {
			delete(c.m, old)
		}
		c.paths[wd] = dir
	}
	return wd
}

// drain takes in the changes reported so far: each drops the listing of
// the directory it happened in; an overflowed queue, or a mount made or
// removed since the last drain, drops them all.
func (c *dirCache) drain() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mounts.changed() {
		clear(c.m)
	}
	c.w.read(func(wd int, gone, overflow bool) {
		if overflow {
			clear(c.m)
			return
		}
		p, ok := c.paths[wd]
		if !ok {
			return
		}
		delete(c.m, p)
		if gone {
			// The directory went, or moved: its watch no longer tells
			// about the path.
			c.w.remove(wd)
			delete(c.paths, wd)
		}
	})
}

func (c *dirCache) get(dir string, key fileKey) (dirListing, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[dir]
	switch {
	case !ok || e.key.dev != key.dev || e.key.ino != key.ino:
		return dirListing{}, false
	case e.wd >= 0:
		return e.l, true // watched: an event drops it (drain)
	case !e.trusted || !e.key.ctime.Equal(key.ctime):
		return dirListing{}, false
	}
	return e.l, true
}

// getWatched is the watched listing of dir when it is of the folder via
// names (its device and inode): dir's parent's listing, kept and current,
// names that inode, so the path still leads to the folder read.
func (c *dirCache) getWatched(dir string, via fileKey) (dirListing, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[dir]
	if !ok || e.wd < 0 || e.key.dev != via.dev || e.key.ino != via.ino {
		return dirListing{}, false
	}
	return e.l, true
}

func (c *dirCache) put(dir string, key fileKey, readAt time.Time, wd int, l dirListing) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= dirCacheMax {
		c.m = map[string]cachedDir{}
	}
	c.m[dir] = cachedDir{key: key, trusted: readAt.Sub(key.ctime) > racyWindow, wd: wd, l: l}
}

// gitFound is what the search of the writable roots found.
type gitFound struct {
	// dotGitDirs are .git directories (gitdir, work tree).
	dotGitDirs [][2]string
	// bare are directories that are gitdirs themselves.
	bare []string
	// pointers are .git files and links are .git symbolic links.
	pointers, links []string
	// truncated are the roots whose search reached GitScanDirs.
	truncated []string
	// unlisted are the folders the search could enter but not list.
	unlisted []string
	// unreadIndexes are the work trees whose index could not be read as
	// git reads it: the submodules it records are unknown.
	unreadIndexes []string
	// tooDeep: the search of the last root left folders below its depth
	// bound.
	tooDeep bool
}

// findRepos searches each root breadth first, at most GitScanDepth
// directories down and GitScanDirs directories read (GitScanTmpDepth and
// GitScanTmpDirs for the roots in tmp), for repositories:
// .git directories, .git files and links, and bare repositories. It
// follows no symbolic link, does not enter a repository's gitdir (its
// submodules and worktrees are found from there), nor a directory named
// in gitSkip or skip (unreadable paths: nothing can be made in them).
func findRepos(roots, tmp, skip []string, fc *fence) gitFound {
	var f gitFound
	dirs.drain()
	for _, root := range roots {
		maxDepth, maxDirs := GitScanDepth, GitScanDirs
		if slices.Contains(tmp, root) {
			maxDepth, maxDirs = GitScanTmpDepth, GitScanTmpDirs
		}
		f.tooDeep = false
		// A workspace's depth bound is told as its folder bound is (red
		// team 43 made a repository 257 folders down, untold); /tmp's
		// (one folder) is the plan's choice, not a bound a command
		// reaches.
		if !f.search(fc, root, maxDepth, maxDirs, skip, true) || maxDepth == GitScanDepth && f.tooDeep {
			f.truncated = append(f.truncated, root)
		}
	}
	f.above(roots)
	f.followGitlinks(fc)
	return f
}

// search adds to f the repositories below root, breadth first, at most
// maxDepth directories down and maxDirs directories read, not entering
// the directories skip names (nor, with skipNames, those named in
// gitSkip); false when it stopped at maxDirs.
func (f *gitFound) search(fc *fence, root string, maxDepth, maxDirs int, skip []string, skipNames bool) bool {
	type item struct {
		path  string
		depth int
		via   fileKey // see listDir
	}
	queue := []item{{root, 0, fileKey{}}}
	// later are the subdirectories of wide folders past their first
	// gitScanWide, read once everything else is: a folder of thousands (a
	// virtualenv's lib/, a build's output) does not spend the bound the
	// sources need (red team 22 planted a repository in src/, past a
	// .venv/lib/ that had spent it).
	var later []item
	read := 0
	for len(queue) > 0 || len(later) > 0 {
		if len(queue) == 0 {
			queue, later = later, nil
		}
		it := queue[0]
		queue = queue[1:]
		if read == maxDirs {
			return false
		}
		read++
		l, err := listDir(it.path, it.via)
		if err != nil {
			// A folder this user may enter but not list (mode 0311):
			// git finds a repository there by its name, the search
			// cannot.
			if errors.Is(err, fs.ErrPermission) && hiddenByMode(it.path) {
				f.unlisted = append(f.unlisted, it.path)
			}
			continue
		}
		// A folder laid out like a gitdir is searched on: to git's walk
		// of a work tree it is a folder like any other (only a .git makes
		// a repository), and what lies below it a repository git add -A
		// records (red team 24 hid one so).
		f.take(it.path, l)
		if it.depth == maxDepth {
			f.tooDeep = f.tooDeep || len(l.subdirs) > 0
			continue
		}
		for i, name := range l.subdirs {
			p := joinName(it.path, name)
			if skipNames && gitSkip[name] || containsPath(skip, p) || fc.childBlocked(p) {
				continue
			}
			next := item{p, it.depth + 1, fileKey{dev: l.dev, ino: l.subIno[i]}}
			if i < gitScanWide {
				queue = append(queue, next)
			} else {
				later = append(later, next)
			}
		}
	}
	return true
}

// take adds what the listing l of dir says it holds: a .git (folder,
// file or link), or dir itself a gitdir.
func (f *gitFound) take(dir string, l dirListing) {
	if l.mark&markGitdir != 0 {
		f.bare = append(f.bare, dir)
	}
	dotgit := joinName(dir, ".git")
	switch {
	case l.mark&markDotGitDir != 0:
		f.dotGitDirs = append(f.dotGitDirs, [2]string{dotgit, dir})
	case l.mark&markDotGitFile != 0:
		f.pointers = append(f.pointers, dotgit)
	case l.mark&markDotGitLink != 0:
		f.links = append(f.links, dotgit)
	}
}

// above looks at the folders above each root that lie inside another
// root (a workspace at /tmp/a/b: /tmp/a/b's parents /tmp/a, not /tmp,
// which its own search reads): git run in the root, finding no .git
// there, takes the repository of the nearest folder above that holds
// one, or is one (red team 26 made one in a workspace's parent in /tmp).
func (f *gitFound) above(roots []string) {
	inside := func(d string) bool {
		return slices.ContainsFunc(roots, func(t string) bool { return within(d, t) })
	}
	seen := map[string]bool{}
	for _, r := range roots {
		for d := filepath.Dir(r); d != r && inside(d) && !seen[d]; r, d = d, filepath.Dir(d) {
			seen[d] = true
			already := slices.Contains(f.bare, d) || slices.ContainsFunc(f.dotGitDirs, func(g [2]string) bool { return g[1] == d }) ||
				slices.Contains(f.pointers, joinName(d, ".git")) || slices.Contains(f.links, joinName(d, ".git"))
			if l, err := listDir(d, fileKey{}); err == nil && !already {
				f.take(d, l)
			}
		}
	}
}

// joinName is filepath.Join(dir, name) for a clean dir and a name read
// from it (no slash, not . or ..), without Join's cleaning: most of the
// search's time went to it.
func joinName(dir, name string) string {
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}

func containsPath(list []string, p string) bool {
	for _, x := range list {
		if x == p {
			return true
		}
	}
	return false
}
