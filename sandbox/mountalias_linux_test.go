//go:build linux

package sandbox

import (
	"os"
	"reflect"
	"sync"
	"testing"
)

// TestCurrentMountsSideBySide: callers side by side (the plan and the git
// survey before a wrapper's command) get the table mountinfo gives, all
// the same, and a caller after them gets it without reading again until
// a mount changes.
func TestCurrentMountsSideBySide(t *testing.T) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Skipf("no /proc/self/mountinfo: %v", err)
	}
	want := parseMountinfo(string(b))
	var wg sync.WaitGroup
	got := make([][]mountEntry, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = currentMounts()
		}()
	}
	wg.Wait()
	for i, g := range got {
		if !reflect.DeepEqual(g, want) {
			t.Fatalf("caller %d got %d mounts, mountinfo gives %d", i, len(g), len(want))
		}
	}
	mountTable.mu.Lock()
	read, reading := mountTable.read, mountTable.reading
	mountTable.mu.Unlock()
	if !read || reading != nil {
		t.Fatalf("after the callers: read %v, a read under way %v", read, reading != nil)
	}
	// A change the watch reported and nobody read yet is read by the
	// next caller, whoever took the report in.
	mountTable.mu.Lock()
	mountTable.changes++
	mountTable.mounts = nil
	mountTable.mu.Unlock()
	if g := currentMounts(); !reflect.DeepEqual(g, want) {
		t.Fatalf("after a change: %d mounts, mountinfo gives %d", len(g), len(want))
	}
}
