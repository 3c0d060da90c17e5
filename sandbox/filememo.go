package sandbox

import (
	"os"
	"sync"
	"time"
)

// fileMemo keeps what was made of small files (a repository's
// configuration, a .git file) between surveys, while each is the same
// file: its device, inode, size and change time (a write moves the change
// time on, and nothing sets it back), read past racyWindow after its last
// change (as dirCache: a time can lag behind a change made within the
// same clock tick). Each survey reads them twice a call; the status check
// is one system call where the reading is four and a parse. Its zero
// value is ready for use.
type fileMemo[T any] struct {
	mu sync.Mutex
	m  map[string]memoEntry[T]
}

type memoEntry[T any] struct {
	key  fileKey
	size int64
	v    T
}

// memoMax bounds a memo; past it, it starts again empty.
const memoMax = 4096

// read is what readFile makes of the file at path (followed): kept while
// the file is the same, else read. The key kept is the opened file's own
// status: a path changed between a status and an open cannot file one
// file's reading under another's key.
func (c *fileMemo[T]) read(path string, readFile func(*os.File) (T, error)) (T, error) {
	if fi, err := os.Stat(path); err == nil {
		if key, ok := statKey(fi); ok {
			c.mu.Lock()
			e, kept := c.m[path]
			c.mu.Unlock()
			if kept && e.key == key && e.size == fi.Size() {
				return e.v, nil
			}
		}
	}
	f, err := os.Open(path)
	if err != nil {
		var zero T
		return zero, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		var zero T
		return zero, err
	}
	readAt := time.Now()
	v, err := readFile(f)
	if err != nil {
		return v, err
	}
	if key, ok := statKey(fi); ok && readAt.Sub(key.ctime) > racyWindow && stampedFile(f) {
		c.mu.Lock()
		if c.m == nil || len(c.m) >= memoMax {
			c.m = map[string]memoEntry[T]{}
		}
		c.m[path] = memoEntry[T]{key, fi.Size(), v}
		c.mu.Unlock()
	}
	return v, nil
}
