//go:build linux

package cli

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestHugeHeapAdvisesTheHeap: after hugeHeap, the mapping that holds a
// heap object is marked for transparent huge pages (smaps' VmFlags "hg").
func TestHugeHeapAdvisesTheHeap(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") {
		t.Skipf("no transparent huge pages on this host (%q, %v): nothing to advise", mode, err)
	}
	obj := new([64]byte)
	addr := uint64(uintptr(unsafe.Pointer(obj)))
	hugeHeap()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		if lo, hi, ok := strings.Cut(strings.Fields(line)[0], "-"); ok && !strings.HasSuffix(line, ":") {
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil {
				in = a <= addr && addr < b
				continue
			}
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			if !strings.Contains(line, " hg") {
				t.Fatalf("the heap's mapping is not advised for huge pages: %s", line)
			}
			return
		}
	}
	t.Fatalf("no mapping in /proc/self/smaps holds the heap object at %#x", addr)
}
