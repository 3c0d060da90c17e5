package sandbox

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// gitlinks are the paths of the submodules (mode 160000 entries) the
// index of gitdir records, relative to the work tree, from the index and
// any shared index it splits into (core.splitIndex); nil when there is no
// index it can read. git status, diff and commit enter each populated
// one, whatever its depth or name (node_modules/pkg), and run what its
// configuration names: the survey's bounds and skipped names cannot
// apply to them (red team 18).
func gitlinks(gitdir string, hashSize int) []string {
	files := []string{filepath.Join(gitdir, "index")}
	shared, _ := filepath.Glob(filepath.Join(gitdir, "sharedindex.*"))
	files = append(files, shared...)
	var out []string
	for _, f := range files {
		out = append(out, indexGitlinks(f, hashSize)...)
	}
	return out
}

// followGitlinks adds to f the submodules the indexes of the
// repositories found record (see gitlinks), and theirs in turn: a
// populated one (its .git there) is a repository git enters. At most
// maxGitlinks are followed; past that the work tree counts as truncated.
func (f *gitFound) followGitlinks() {
	type repo struct{ gitdir, tree string }
	var queue []repo
	seen := map[string]bool{}
	for _, d := range f.dotGitDirs {
		queue = append(queue, repo{d[0], d[1]})
		seen[d[1]] = true
	}
	for _, p := range append(slices.Clone(f.pointers), f.links...) {
		seen[filepath.Dir(p)] = true
		if g := gitdirOf(p); g != "" {
			queue = append(queue, repo{g, filepath.Dir(p)})
		}
	}
	followed := 0
	for len(queue) > 0 {
		r := queue[0]
		queue = queue[1:]
		for _, name := range gitlinks(r.gitdir, hashSize(r.gitdir)) {
			tree := filepath.Join(r.tree, name)
			if seen[tree] {
				continue
			}
			seen[tree] = true
			if followed++; followed > maxGitlinks {
				f.truncated = append(f.truncated, r.tree)
				return
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
			if g := gitdirOf(dotgit); g != "" {
				queue = append(queue, repo{g, tree})
			}
		}
	}
}

// maxGitlinks bounds the submodules followGitlinks follows in a survey.
const maxGitlinks = 4096

// gitdirOf is the gitdir a .git directory, link or file stands for; ""
// when none.
func gitdirOf(dotgit string) string {
	fi, err := os.Lstat(dotgit)
	switch {
	case err != nil:
		return ""
	case fi.IsDir():
		return dotgit
	case fi.Mode()&os.ModeSymlink != 0:
		g, err := filepath.EvalSymlinks(dotgit)
		if err != nil {
			return ""
		}
		return g
	}
	return readGitdirFile(dotgit)
}

// hashSize is the length of an object name in the repository of gitdir:
// 32 bytes where extensions.objectFormat is sha256, else 20.
func hashSize(gitdir string) int {
	config := filepath.Join(gitdir, "config")
	if c := readLine(filepath.Join(gitdir, "commondir")); c != "" {
		config = filepath.Join(resolveFrom(gitdir, c), "config")
	}
	if strings.EqualFold(lastValue(readGitConfig(config), "extensions.objectformat"), "sha256") {
		return 32
	}
	return 20
}

// maxIndex bounds what is read of an index (git's own can be large; a
// work tree of a million files holds ~100 MB).
const maxIndex = 256 << 20

// indexes keeps each index's gitlinks while the file is the same (its
// device, inode, size and change time, read past racyWindow after its
// last change, as dirCache): a large work tree's index takes
// milliseconds to parse, every plan.
var indexes = struct {
	mu sync.Mutex
	m  map[string]cachedIndex
}{m: map[string]cachedIndex{}}

type cachedIndex struct {
	key   fileKey
	size  int64
	hash  int
	links []string
}

// indexGitlinks is the gitlinks of one index file (versions 2 to 4).
func indexGitlinks(path string, hashSize int) []string {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	key, cacheable := statKey(fi)
	if cacheable {
		indexes.mu.Lock()
		c, ok := indexes.m[path]
		indexes.mu.Unlock()
		if ok && c.key == key && c.size == fi.Size() && c.hash == hashSize {
			return c.links
		}
	}
	readAt := time.Now()
	links := parseIndex(path, hashSize)
	if cacheable && readAt.Sub(key.ctime) > racyWindow {
		indexes.mu.Lock()
		if len(indexes.m) >= maxGitlinks {
			clear(indexes.m)
		}
		indexes.m[path] = cachedIndex{key, fi.Size(), hashSize, links}
		indexes.mu.Unlock()
	}
	return links
}

// parseIndex reads one index file for its gitlinks.
func parseIndex(path string, hashSize int) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxIndex))
	if err != nil || len(b) < 12 || string(b[:4]) != "DIRC" {
		return nil
	}
	version := binary.BigEndian.Uint32(b[4:8])
	count := binary.BigEndian.Uint32(b[8:12])
	if version < 2 || version > 4 {
		return nil
	}
	// ctime, mtime (8 each), dev, ino, mode, uid, gid, size (4 each),
	// the object name, flags (2).
	fixed := 40 + hashSize + 2
	var out []string
	prev := ""
	off := 12
	for i := uint32(0); i < count; i++ {
		start := off
		if off+fixed > len(b) {
			return out
		}
		mode := binary.BigEndian.Uint32(b[off+24 : off+28])
		flags := binary.BigEndian.Uint16(b[off+fixed-2 : off+fixed])
		off += fixed
		if version >= 3 && flags&0x4000 != 0 {
			off += 2 // extended flags
		}
		var name string
		if version == 4 {
			// The name is the previous one less N bytes, then this.
			n, k := gitVarint(b[off:])
			if k <= 0 || n > uint64(len(prev)) {
				return out
			}
			off += k
			end := bytes.IndexByte(b[off:], 0)
			if end < 0 {
				return out
			}
			name = prev[:len(prev)-int(n)] + string(b[off:off+end])
			off += end + 1
		} else {
			end := bytes.IndexByte(b[off:], 0)
			if end < 0 {
				return out
			}
			name = string(b[off : off+end])
			// Padded with NULs to a multiple of 8 (1 to 8 of them).
			off = start + (off+end-start+8)&^7
		}
		prev = name
		if mode&0o170000 == 0o160000 {
			out = append(out, name)
		}
	}
	return out
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
