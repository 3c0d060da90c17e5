package sandbox

import (
	"errors"
	"os"
)

// errNotRegular: what a survey would read is not a regular file.
var errNotRegular = errors.New("not a regular file (a FIFO, a device, a socket, a process's stream or a kernel file): what git reads there is not checked")

// errReaderDependent: the way to what a survey would read takes a link
// each process reads as its own (see readerDependent).
var errReaderDependent = errors.New("reached through a link each process reads as its own (/proc/self, /dev/fd), so git, run in the repository, may read another file there than this check does: what git reads there is not checked")

// unchecked: err says that what git reads at a path cannot be known here
// (not a regular file, or reached through a reader's own link).
func unchecked(err error) bool {
	return errors.Is(err, errNotRegular) || errors.Is(err, errReaderDependent)
}

// openRegular opens, for reading, the regular file path names (following
// links, as git does), and nothing else. A command can make whatever it
// likes where the repository search reads (a new repository's
// .git/config): a FIFO, whose open waits for a writer for ever (red team
// 41 hung the wrapper, and so every call, with one at r/.git/config); a
// link to /dev/stdin or /proc/self/fd/0, which the program would read as
// its own (the host's requests); a device. The kind is looked at before
// the open (no device is opened), and again on what was opened (a swap
// between the two): the open itself never waits (noWaitFlags). Nor is a
// path read whose way takes a process's own link (errReaderDependent),
// nor one absent here that git may find through one.
func openRegular(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		if readerDependent(path) {
			return nil, &os.PathError{Op: "open", Path: path, Err: errReaderDependent}
		}
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &os.PathError{Op: "open", Path: path, Err: errNotRegular}
	}
	// Through no magic link (the open refuses one): the one lookup the
	// check costs where a path is there.
	f, err := openNoMagicLinks(path, os.O_RDONLY|noWaitFlags)
	if err != nil {
		if readerDependent(path) {
			return nil, &os.PathError{Op: "open", Path: path, Err: errReaderDependent}
		}
		return nil, err
	}
	if st, err = f.Stat(); err != nil || !st.Mode().IsRegular() || kernelFile(f) {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: path, Err: errNotRegular}
	}
	return f, nil
}
