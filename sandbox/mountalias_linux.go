//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// mountTable is the program's mounts, read again only after a mount was
// made or removed.
var mountTable struct {
	mu     sync.Mutex
	watch  mountWatch
	mounts []mountEntry
	read   bool
	// changes counts the changes the watch reported (each report is
	// taken in once, by whichever caller polls first); readAt is the
	// count the table in mounts was read after, set when it is stored.
	changes, readAt int
	// reading is closed when the read under way ends (nil: none): the
	// plan and the git survey that run side by side before a wrapper's
	// command read the table once between them, not each.
	reading chan struct{}
}

// duringMountRead, when set (by tests), runs while a read of the mount
// table is under way; mountinfoPath, when set (by tests), is a file read
// for the table instead of the one the watch polls.
var (
	duringMountRead func()
	mountinfoPath   string
)

// currentMounts are the program's mounts, as its mount table gives
// them after every change reported before the call: a table is taken as
// it stands only when it was read after the last report. A caller that
// comes while a read is under way waits for it and looks again (the
// read may have begun before the report it took in).
func currentMounts() ([]mountEntry, error) {
	for {
		mountTable.mu.Lock()
		if mountTable.watch.changed() {
			mountTable.changes++
		}
		if mountTable.read && mountTable.readAt == mountTable.changes {
			mounts := mountTable.mounts
			mountTable.mu.Unlock()
			return mounts, nil
		}
		if wait := mountTable.reading; wait != nil {
			mountTable.mu.Unlock()
			<-wait
			continue
		}
		done, at := make(chan struct{}), mountTable.changes
		mountTable.reading = done
		mountTable.mu.Unlock()
		if duringMountRead != nil {
			duringMountRead()
		}
		var b []byte
		var err error
		if mountinfoPath != "" {
			b, err = os.ReadFile(mountinfoPath)
		} else {
			// The table the watch polls: one namespace for both.
			b, err = mountTable.watch.table()
		}
		var mounts []mountEntry
		if err == nil {
			mounts = parseMountinfo(string(b))
		}
		mountTable.mu.Lock()
		mountTable.reading = nil
		// A change reported during the read (changes moved past at) has
		// it read again by the next caller; a failed read, too.
		mountTable.mounts, mountTable.read, mountTable.readAt = mounts, err == nil, at
		mountTable.mu.Unlock()
		close(done)
		return mounts, err
	}
}

// mountAliases are the other paths at which the program's mounts show
// each of paths (see aliasesIn), where one is there and is the same file.
// An error: the mount table could not be read, so other paths may exist
// that nobody knows of.
func mountAliases(paths []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	mounts, err := currentMounts()
	if err != nil {
		return nil, fmt.Errorf("reading the mount table to find the other paths of the deny_read paths: %w", err)
	}
	var out []string
	for _, pa := range aliasesIn(mounts, paths) {
		var a, b unix.Stat_t
		// Stat, not Lstat: a mount point is looked at through the mount.
		if unix.Stat(pa[0], &a) == nil && unix.Stat(pa[1], &b) == nil && a.Dev == b.Dev && a.Ino == b.Ino {
			out = append(out, pa[1])
		}
	}
	return out, nil
}
