package sandbox

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/maphash"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// gitlinks are the paths of the submodules (mode 160000 entries) the
// index of gitdir records, relative to the work tree: the index's, and,
// where it is split (core.splitIndex), the shared index's its link
// extension names. git status, diff and commit enter each populated one,
// whatever its depth or name (node_modules/pkg), and run what its
// configuration names: the survey's bounds and skipped names cannot apply
// to them (red team 18). ok is false when an index could not be read as
// git reads it (the caller reports it: what it records is unknown).
//
// A split index's entry that replaces one of the shared index has no name
// of its own (git takes the shared entry's): when such an entry is a
// submodule, every name of the shared index is a candidate (red team 19
// hid a submodule so), and the caller looks for a populated one there.
// sparse are the folders a sparse index folds (see parsedIndex.sparse).
func gitlinks(fc *fence, gitdir string, hashSize int) (links, sparse []string, ok bool) {
	main := indexGitlinks(fc, filepath.Join(gitdir, "index"), hashSize)
	if !main.ok {
		return main.links, main.sparse, false
	}
	links, sparse = main.links, main.sparse
	if main.shared == "" {
		return links, sparse, !main.anonymous
	}
	shared := indexGitlinks(fc, filepath.Join(gitdir, "sharedindex."+main.shared), hashSize)
	links = append(links, shared.links...)
	sparse = append(sparse, shared.sparse...)
	if main.anonymous {
		links = append(links, shared.names...)
	}
	return links, sparse, shared.ok
}

// followGitlinks adds to f the submodules the indexes of the
// repositories found record (see gitlinks), and theirs in turn: a
// populated one (its .git there) is a repository git enters. At most
// maxGitlinks are followed; past that the work tree counts as truncated.
func (f *gitFound) followGitlinks(fc *fence) {
	seen := map[string]bool{}
	queue := oldestFirst(fc, os.Getenv("HOME"), f.reposSince(fc, foundCount{}, seen))
	followed := 0
	for len(queue) > 0 {
		r := queue[0]
		queue = queue[1:]
		hash, worktrees, all := gitdirSettings(fc, r.gitdir)
		if !all {
			f.truncated = append(f.truncated, r.tree)
		}
		links, sparse, ok := gitlinks(fc, r.gitdir, hash)
		if !ok {
			f.unreadIndexes = append(f.unreadIndexes, r.tree)
		}
		// git takes the submodules from the work tree core.worktree
		// names, where one is set (red team 21 had it name
		// node_modules/wt, and the host's git entered node_modules/wt/sub).
		// Each one read: an includeIf whose condition is false to git
		// makes it take an earlier one.
		trees := []string{r.tree}
		for _, wt := range worktrees {
			if !slices.Contains(trees, wt) {
				trees = append(trees, wt)
			}
		}
		// A folder a sparse index folds is unfolded by git from a tree
		// object, submodules and all (red team 22 hid one in
		// node_modules/ so): where the folder is there (a sparse
		// checkout leaves it out), it is searched whole, to the bound.
		for _, dir := range sparse {
			for _, top := range trees {
				p := filepath.Join(top, dir)
				if !within(p, top) || seen[p] {
					continue
				}
				seen[p] = true
				// Searched where it really is, and not where commands
				// cannot list (core.worktree may name any folder).
				real, err := fc.resolve(p)
				if err != nil || !fc.listable(real) {
					continue
				}
				n := f.count()
				if !f.search(fc, real, math.MaxInt, GitScanDirs, nil, false) {
					f.truncated = append(f.truncated, p)
				}
				queue = append(queue, f.reposSince(fc, n, seen)...)
			}
		}
		for _, name := range links {
			for _, top := range trees {
				tree := filepath.Join(top, name)
				if seen[tree] || !within(tree, top) {
					continue
				}
				seen[tree] = true
				if followed++; followed > maxGitlinks {
					f.truncated = append(f.truncated, r.tree)
					return
				}
				// Looked at only where commands can look (a submodule
				// l, a link to ~/.password-store, told whether its .git
				// was there: red team 45).
				if !fc.listable(tree) {
					continue
				}
				dotgit := filepath.Join(tree, ".git")
				fi, err := os.Lstat(dotgit)
				switch {
				case err != nil:
					continue // not populated: git does not enter it
				case fi.IsDir():
					f.dotGitDirs = append(f.dotGitDirs, [2]string{dotgit, tree})
				case fi.Mode()&os.ModeSymlink != 0:
					f.links = append(f.links, dotgit)
				default:
					f.pointers = append(f.pointers, dotgit)
				}
				if g := gitdirOf(fc, dotgit); g != "" {
					queue = append(queue, gitRepo{g, tree})
				}
			}
		}
	}
}

// gitRepo is a gitdir and its work tree.
type gitRepo struct{ gitdir, tree string }

// foundCount is how much a gitFound holds of the repositories it found.
type foundCount struct{ dirs, pointers, links int }

func (f *gitFound) count() foundCount {
	return foundCount{len(f.dotGitDirs), len(f.pointers), len(f.links)}
}

// reposSince are the repositories f found after it held n (their work
// trees marked seen): .git folders, and what .git files and links name.
func (f *gitFound) reposSince(fc *fence, n foundCount, seen map[string]bool) []gitRepo {
	var repos []gitRepo
	for _, d := range f.dotGitDirs[n.dirs:] {
		repos = append(repos, gitRepo{d[0], d[1]})
		seen[d[1]] = true
	}
	for _, p := range append(slices.Clone(f.pointers[n.pointers:]), f.links[n.links:]...) {
		seen[filepath.Dir(p)] = true
		if g := gitdirOf(fc, p); g != "" {
			repos = append(repos, gitRepo{g, filepath.Dir(p)})
		}
	}
	return repos
}

// maxGitlinks bounds the submodules followGitlinks follows in a survey.
const maxGitlinks = 4096

// gitdirOf is the gitdir a .git directory, link or file stands for; ""
// when none.
func gitdirOf(fc *fence, dotgit string) string {
	fi, err := os.Lstat(dotgit)
	switch {
	case err != nil:
		return ""
	case fi.IsDir():
		return dotgit
	case fi.Mode()&os.ModeSymlink != 0:
		g, err := fc.resolve(dotgit)
		if err != nil || fc.unlistable(g) {
			return ""
		}
		return g
	}
	return readGitdirFile(fc, dotgit)
}

// gitdirSettings is what the configuration of gitdir says that the
// survey of its index needs: the length of an object name (32 bytes where
// extensions.objectFormat is sha256, else 20), and the work trees its
// core.worktree values name, resolved from the gitdir as git does (in
// the common configuration, or config.worktree where any
// extensions.worktreeConfig read is on; included files are read too:
// more than git reads for it, never less). Every value is taken, not the
// last alone: an includeIf whose condition is false to git makes it take
// an earlier one (fresh-eyes review). At most maxWorktrees, the last
// always; all is false where there were more.
func gitdirSettings(fc *fence, gitdir string) (hashSize int, worktrees []string, all bool) {
	common := gitdir
	// One past the bound is told by the survey of the same gitdir.
	if c, _ := readGitPath(fc, filepath.Join(gitdir, "commondir")); c != "" {
		if r := resolveFrom(fc, gitdir, c); r != "" {
			common = r
		}
	}
	home, _ := os.UserHomeDir()
	// The last value of each setting asked for, each file parsed once, a
	// file not read again inside itself (git refuses it), and at most
	// maxIncludes files and maxRereads readings again followed (a file
	// that includes itself three times was 3¹⁰ readings: fresh-eyes
	// review); past them, the survey
	// reading the same files tells it.
	last := map[string]string{}
	var values []string
	worktreeConfig := false
	parsed := map[string]bool{}
	open := map[string]bool{}
	includes, rereads := 0, 0
	var read func(path string, depth int)
	read = func(path string, depth int) {
		if depth > 10 || open[path] {
			return
		}
		if !fc.walkAgain("index", path) {
			return
		}
		open[path] = true
		defer delete(open, path)
		es := readGitConfig(fc, path)
		parsed[path] = true
		for _, e := range es {
			switch e.key {
			case "extensions.objectformat":
				last[e.key] = e.value
			case "extensions.worktreeconfig":
				worktreeConfig = worktreeConfig || isGitTrue(e.value)
			case "core.worktree":
				values = append(values, e.value)
			}
			if e.key == "include.path" || strings.HasPrefix(e.key, "includeif.") && strings.HasSuffix(e.key, ".path") {
				inc := resolvePath(fc, e.value, filepath.Dir(path), home)
				if parsed[inc] {
					if rereads++; rereads > maxRereads {
						continue
					}
				} else if includes++; includes > maxIncludes {
					continue
				}
				read(inc, depth+1)
			}
		}
	}
	fc.budget().own(filepath.Join(common, "config"))
	read(filepath.Join(common, "config"), 0)
	hashSize = 20
	if strings.EqualFold(last["extensions.objectformat"], "sha256") {
		hashSize = 32
	}
	if worktreeConfig {
		read(filepath.Join(gitdir, "config.worktree"), 0)
	}
	all = true
	for i, v := range values {
		if v == "" {
			continue
		}
		wt := resolvePath(fc, v, gitdir, home)
		if slices.Contains(worktrees, wt) {
			continue
		}
		if len(worktrees) >= maxWorktrees && i != len(values)-1 {
			all = false
			continue
		}
		worktrees = append(worktrees, wt)
	}
	return hashSize, worktrees, all
}

// maxWorktrees bounds the core.worktree values of one gitdir whose work
// trees the submodule search enters.
const maxWorktrees = 16

// indexes keeps what each index records by its content (a seeded hash of
// its bytes, and its length): a large work tree's index takes
// milliseconds to parse, every plan. It is read each time — not kept by
// the file's status: a write through a shared mapping to a page already
// dirty moves no change time (red team 26).
var indexes = struct {
	mu   sync.Mutex
	m    map[string]cachedIndex
	seed maphash.Seed
}{m: map[string]cachedIndex{}, seed: maphash.MakeSeed()}

type cachedIndex struct {
	sum  uint64
	size int
	hash int
	idx  parsedIndex
}

// parsedIndex is what one index file records that the survey needs.
type parsedIndex struct {
	links []string // the submodules' paths
	// names are every entry's path, kept for a shared index only (see
	// gitlinks); shared is the shared index's name (hex) a split index's
	// link extension gives; anonymous: a submodule entry with no name
	// (one that replaces a shared index's entry).
	names     []string
	shared    string
	anonymous bool
	// sparse are the folders a sparse index folds into one entry each
	// (mode 040000, "dir/"): git unfolds them from the tree they name,
	// which the survey does not read, and enters a submodule there.
	sparse []string
	// ok: read to its end as git reads it (an index it could not, or
	// past maxIndex, is reported: what it records is unknown).
	ok bool
}

// indexGitlinks reads one index file (versions 2 to 4); what it records
// is parsed once for each content (see indexes).
func indexGitlinks(fc *fence, path string, hashSize int) parsedIndex {
	f, err := fc.open(path)
	if err != nil {
		return parsedIndex{ok: errors.Is(err, fs.ErrNotExist)} // no index: nothing recorded
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return parsedIndex{}
	}
	b, err := io.ReadAll(io.LimitReader(f, maxIndex+1))
	if err != nil || len(b) > maxIndex {
		return parsedIndex{}
	}
	sum := maphash.Bytes(indexes.seed, b)
	indexes.mu.Lock()
	c, ok := indexes.m[path]
	indexes.mu.Unlock()
	if ok && c.sum == sum && c.size == len(b) && c.hash == hashSize {
		return c.idx
	}
	idx := parseIndex(b, hashSize, strings.HasPrefix(filepath.Base(path), "sharedindex."))
	indexes.mu.Lock()
	if len(indexes.m) >= maxGitlinks {
		clear(indexes.m)
	}
	indexes.m[path] = cachedIndex{sum, len(b), hashSize, idx}
	indexes.mu.Unlock()
	return idx
}

// maxIndex bounds what is read of an index (git's own can be large; a
// work tree of a million files holds ~100 MB); a larger one is reported.
const maxIndex = 256 << 20

// maxIndexName bounds an entry's path (git's are PATH_MAX at most).
const maxIndexName = 64 << 10

// parseIndex reads an index as git's read_index_from does
// (create_from_disk): each entry's name length from its flags (all 12
// bits set: the name runs to its NUL), its extended flags wherever the
// flag says so, a version 4 name from the last one's less the number
// stripped, then the extensions, for a split index's link. keepNames keeps
// every entry's path (a shared index's).
//
// git may also load the entries in blocks from the offsets an IEOT
// extension gives, and the extensions from where an EOIE extension says
// (index.threads, or a large index on a machine of 3 or more cores): red
// team 20 hid a submodule inside a file's name bytes that an IEOT block
// starts at. Every IEOT's blocks are read too, and what any reading
// records counts. git finds EOIE at its fixed place before the checksum,
// not by walking the extensions (red team 21 hid one, and an IEOT, in an
// unknown extension's data): an index with one there that is not the
// last extension the walk reads, naming where the walk started, is
// reported (git writes none other), so git's extensions are the walk's.
func parseIndex(b []byte, hashSize int, keepNames bool) parsedIndex {
	var idx parsedIndex
	if len(b) < 12+hashSize || string(b[:4]) != "DIRC" {
		return idx
	}
	r := indexReader{b: b, end: len(b) - hashSize, hashSize: hashSize, version: binary.BigEndian.Uint32(b[4:8]), keepNames: keepNames, idx: &idx}
	if r.version < 2 || r.version > 4 {
		return idx
	}
	off, ok := r.entries(12, binary.BigEndian.Uint32(b[8:12]))
	if !ok {
		return idx
	}
	ieots, eoies, ok := r.extensions(off)
	if !ok || !r.eoieAsGit(off, eoies) {
		return idx
	}
	for _, ieot := range ieots {
		if len(ieot) < 4 {
			continue
		}
		// IEOT: a version, then each block's offset and count.
		for blk := ieot[4:]; len(blk) >= 8; blk = blk[8:] {
			at, n := binary.BigEndian.Uint32(blk[:4]), binary.BigEndian.Uint32(blk[4:8])
			if _, ok := r.entries(int(at), n); !ok {
				return idx
			}
		}
	}
	idx.ok = true
	return idx
}

// indexReader reads the parts of one index into idx.
type indexReader struct {
	b         []byte
	end       int // where the checksum starts
	hashSize  int
	version   uint32
	keepNames bool
	idx       *parsedIndex
	kept      int // bytes of names kept
	linked    map[string]bool
}

// entries reads count entries from off (a version 4 name starts from
// none there, as git's threads do); it returns the offset after them.
func (r *indexReader) entries(off int, count uint32) (int, bool) {
	b, end := r.b, r.end
	// ctime, mtime (8 each), dev, ino, mode, uid, gid, size (4 each),
	// the object name, flags (2).
	fixed := 40 + r.hashSize + 2
	var name []byte // the last entry's (version 4 strips from it)
	for i := range count {
		start := off
		if off < 12 || off+fixed > end {
			return off, false
		}
		mode := binary.BigEndian.Uint32(b[off+24 : off+28])
		flags := binary.BigEndian.Uint16(b[off+fixed-2 : off+fixed])
		off += fixed
		if flags&0x4000 != 0 {
			off += 2 // extended flags
		}
		length := int(flags & 0xfff)
		if r.version == 4 {
			strip, k := gitVarint(b[min(off, end):end])
			if k <= 0 || i > 0 && strip > uint64(len(name)) {
				return off, false
			}
			off += k
			if i == 0 {
				strip = 0 // git ignores it: no name before a block's first entry
			}
			name = name[:len(name)-int(strip)]
			suffix := length - len(name)
			if length == 0xfff {
				suffix = bytes.IndexByte(b[min(off, end):end], 0)
			}
			if suffix < 0 || off+suffix >= end || len(name)+suffix > maxIndexName {
				return off, false
			}
			name = append(name, b[off:off+suffix]...)
			off += suffix + 1
		} else {
			if length == 0xfff {
				length = bytes.IndexByte(b[min(off, end):end], 0)
			}
			if length < 0 || off+length >= end || length > maxIndexName {
				return off, false
			}
			name = append(name[:0], b[off:off+length]...)
			// Padded with NULs to a multiple of 8 (1 to 8 of them).
			off = start + (off+length-start+8)&^7
		}
		// git uses the name as a C string past this point.
		path := name
		if i := bytes.IndexByte(path, 0); i >= 0 {
			path = path[:i]
		}
		gitlink := mode&0o170000 == 0o160000
		if mode&0o170000 == 0o040000 {
			r.idx.sparse = append(r.idx.sparse, strings.TrimSuffix(string(path), "/"))
		}
		switch {
		case gitlink && len(path) == 0:
			r.idx.anonymous = true
		case gitlink && !r.linked[string(path)]:
			if r.linked == nil {
				r.linked = map[string]bool{}
			}
			r.linked[string(path)] = true
			r.idx.links = append(r.idx.links, string(path))
		}
		if r.keepNames && len(path) > 0 {
			if r.kept += len(path); r.kept > maxIndex {
				return off, false
			}
			r.idx.names = append(r.idx.names, string(path))
		}
	}
	return off, true
}

// extensions reads the extensions from off to the checksum: a split
// index's link is kept; it returns every IEOT extension's data, and the
// offsets of the EOIE extensions' headers.
func (r *indexReader) extensions(off int) (ieots [][]byte, eoies []int, ok bool) {
	b, end := r.b, r.end
	for off+8 <= end {
		at := off
		sig, size := string(b[off:off+4]), int(binary.BigEndian.Uint32(b[off+4:off+8]))
		off += 8
		if size < 0 || off+size > end {
			return nil, nil, false
		}
		data := b[off : off+size]
		switch sig {
		case "link":
			if size < r.hashSize {
				return nil, nil, false
			}
			if sh := hex.EncodeToString(data[:r.hashSize]); r.idx.shared == "" {
				r.idx.shared = sh
			} else if r.idx.shared != sh {
				return nil, nil, false // two extensions name two shared indexes
			}
		case "IEOT":
			ieots = append(ieots, data)
		case "EOIE":
			eoies = append(eoies, at)
		}
		off += size
	}
	return ieots, eoies, off == end
}

// eoieAsGit: the EOIE extension git would find (the signature at its
// fixed place: 8 bytes of header, an offset, a hash, then the checksum;
// its hash is 20 bytes long in some versions of git whatever the
// repository's, so both places are looked at) is none, or is the only one
// the walk from entriesEnd read, and names entriesEnd: then git, reading
// its extensions from there, reads what the walk read.
func (r *indexReader) eoieAsGit(entriesEnd int, eoies []int) bool {
	found := -1
	for _, hs := range []int{20, r.hashSize} {
		at := r.end - (8 + 4 + hs)
		if at >= 12 && string(r.b[at:at+4]) == "EOIE" {
			if found >= 0 && found != at {
				return false
			}
			found = at
		}
	}
	if found < 0 {
		return true
	}
	return len(eoies) == 1 && eoies[0] == found && int(binary.BigEndian.Uint32(r.b[found+8:found+12])) == entriesEnd
}

// gitVarint decodes the variable-length number of git's varint.c (each
// continuation adds one before the shift); k is the bytes read, 0 when
// b ends first or the number overflows.
func gitVarint(b []byte) (v uint64, k int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	v = uint64(c & 127)
	k = 1
	for c&128 != 0 {
		v++
		if v == 0 || v>>57 != 0 || k >= len(b) {
			return 0, 0
		}
		c = b[k]
		k++
		v = v<<7 + uint64(c&127)
	}
	return v, k
}

// oldestFirst orders repos by surveyAge, oldest first (stable): the
// survey's budgets, spent as configurations are first parsed, go to the
// repositories that were there before a command could make one (see
// gitSurvey.found).
func oldestFirst(fc *fence, home string, repos []gitRepo) []gitRepo {
	at := make(map[string]int64, len(repos))
	for _, r := range repos {
		at[r.gitdir] = surveyAge(fc, home, r.gitdir)
	}
	slices.SortStableFunc(repos, func(a, b gitRepo) int { return cmp.Compare(at[a.gitdir], at[b.gitdir]) })
	return repos
}

// surveyAge is when gitdir g's files that the survey parses first last
// changed, which no one can set back: the newest change time of its
// config, its commondir file, the config of the common directory that
// names and its config.worktree. Without a config of its own it counts
// as newest (red team 9: a gitdir of a HEAD, objects/ and a commondir
// naming a folder of 200 000 entries, dated as having nothing to parse,
// was surveyed first and spent the budget).
func surveyAge(fc *fence, home, g string) int64 {
	newest, ok := changedAt(filepath.Join(g, "config"))
	if !ok {
		return math.MaxInt64
	}
	paths := []string{filepath.Join(g, "commondir"), filepath.Join(g, "config.worktree")}
	if c, _ := readGitPath(fc, filepath.Join(g, "commondir")); c != "" {
		if common := commondirFrom(fc, g, c, home); common != "" {
			paths = append(paths, filepath.Join(common, "config"))
		}
	}
	for _, p := range paths {
		if at, ok := changedAt(p); ok {
			newest = max(newest, at)
		}
	}
	return newest
}
