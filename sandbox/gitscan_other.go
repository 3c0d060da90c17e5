//go:build !linux

package sandbox

import (
	"io/fs"
	"os"
)

// statKey: no change time read here, so no cache.
func statKey(fs.FileInfo) (fileKey, bool) { return fileKey{}, false }

// readEntries lists the directory f (no inode numbers here).
func readEntries(f *os.File) ([]dirEntry, error) {
	des, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	entries := make([]dirEntry, len(des))
	for i, e := range des {
		entries[i] = dirEntry{name: e.Name(), typ: e.Type()}
	}
	return entries, nil
}

// hiddenByMode: taken to be so here.
func hiddenByMode(string) bool { return true }
