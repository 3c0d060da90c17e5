//go:build linux

package sandbox

import (
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
	// count the table in mounts was read after.
	changes, readAt int
	// reading is closed when the read under way ends (nil: none): the
	// plan and the git survey that run side by side before a wrapper's
	// command read the table once between them, not each.
	reading chan struct{}
}

// currentMounts are the program's mounts, as /proc/self/mountinfo last
// gave them.
func currentMounts() []mountEntry {
	for {
		mountTable.mu.Lock()
		if mountTable.watch.changed() {
			mountTable.changes++
		}
		if mountTable.read && mountTable.readAt == mountTable.changes {
			mounts := mountTable.mounts
			mountTable.mu.Unlock()
			return mounts
		}
		if wait := mountTable.reading; wait != nil {
			mountTable.mu.Unlock()
			<-wait
			continue
		}
		done := make(chan struct{})
		mountTable.reading, mountTable.readAt = done, mountTable.changes
		mountTable.mu.Unlock()
		b, err := os.ReadFile("/proc/self/mountinfo")
		var mounts []mountEntry
		if err == nil {
			mounts = parseMountinfo(string(b))
		}
		mountTable.mu.Lock()
		mountTable.reading = nil
		// A change reported during the read (changes moved past readAt)
		// has it read again by the next caller; a failed read, too.
		mountTable.mounts, mountTable.read = mounts, err == nil
		mountTable.mu.Unlock()
		close(done)
		return mounts
	}
}

// mountAliases are the other paths at which the program's mounts show
// each of paths (see aliasesIn), where one is there and is the same file.
func mountAliases(paths []string) []string {
	if len(paths) == 0 {
		return nil
	}
	var out []string
	for _, pa := range aliasesIn(currentMounts(), paths) {
		var a, b unix.Stat_t
		// Stat, not Lstat: a mount point is looked at through the mount.
		if unix.Stat(pa[0], &a) == nil && unix.Stat(pa[1], &b) == nil && a.Dev == b.Dev && a.Ino == b.Ino {
			out = append(out, pa[1])
		}
	}
	return out
}
