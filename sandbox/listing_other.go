//go:build !linux

package sandbox

import (
	"os"
	"path/filepath"
	"slices"
)

// dirNames is the sorted names in dir (listed afresh each time here).
func dirNames(dir string) ([]string, error) {
	names, err := readDirNames(dir)
	slices.Sort(names)
	return names, err
}

// listEntries is os.ReadDir(dir) (sorted by name), and never exact here: lookups may
// find an entry by a name it does not list (a case-insensitive volume).
func listEntries(dir string) ([]string, []os.FileMode, bool, error) {
	entries, err := os.ReadDir(dir)
	names, types := make([]string, len(entries)), make([]os.FileMode, len(entries))
	for i, e := range entries {
		names[i], types[i] = e.Name(), e.Type()
	}
	return names, types, false, err
}

// absence says which paths are provably absent: none here (each is
// looked up).
type absence struct{}

func newAbsence() *absence           { return &absence{} }
func (*absence) absent(string) bool  { return false }
func (*absence) present(string) bool { return false }

// forget: nothing is kept here.
func (*absence) forget(string) {}

// read is dir's sorted names (read afresh).
func (*absence) read(dir string) ([]string, error) { return dirNames(dir) }

// openDir opens the folder dir.
func openDir(dir string) (*os.File, error) { return os.Open(dir) }

// openDirFollowing is os.Open here.
func openDirFollowing(path string) (*os.File, error) { return os.Open(path) }

// noWaitFlags: none here (see the Linux ones); openRegular looks at a
// file's kind before it opens it.
const noWaitFlags = 0

// readerDependent: not told apart here (no magic links to refuse).
func readerDependent(string) bool { return false }

// openNoMagicLinks is os.OpenFile here.
func openNoMagicLinks(path string, flags int) (*os.File, error) { return os.OpenFile(path, flags, 0) }

// kernelFile: not told apart here.
func kernelFile(*os.File) bool { return false }

// sameDir and keepableDir: no listing is kept here (see statKey).
func sameDir(*os.File, fileKey) bool { return false }
func keepableDir(*os.File) bool      { return false }

// oDirectory: none here.
const oDirectory = 0

// fdPath is where f's name leads here (no descriptor's own path).
func fdPath(f *os.File) (string, error) { return filepath.EvalSymlinks(f.Name()) }

// openNoLinks is os.OpenFile here: links are not refused (see linkOnWay).
func openNoLinks(path string, flags int) (*os.File, error) { return os.OpenFile(path, flags, 0) }

// oPath: none here.
const oPath = os.O_RDONLY

// linkOnWay: always walked here.
func linkOnWay(error) bool { return true }

// statNoLinks is os.Stat here.
func statNoLinks(path string) (os.FileInfo, error) { return os.Stat(path) }
