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
}

// currentMounts are the program's mounts, as /proc/self/mountinfo last
// gave them.
func currentMounts() []mountEntry {
	mountTable.mu.Lock()
	fresh := mountTable.read && !mountTable.watch.changed()
	mounts := mountTable.mounts
	mountTable.mu.Unlock()
	if fresh {
		return mounts
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	mounts = parseMountinfo(string(b))
	mountTable.mu.Lock()
	mountTable.mounts, mountTable.read = mounts, true
	mountTable.mu.Unlock()
	return mounts
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
