//go:build linux && cgo

package cli

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestHugeHeapFromTheRuntimesMapping: with the relay's mark set, heap the
// runtime maps from then on is advised for transparent huge pages as it is
// mapped (smaps' VmFlags "hg"), before anything in it is touched; without
// the mark it is not. This is the runtime's own path (its mmap through
// runtime/cgo, wrapped by the package's LDFLAGS): a build that lost the
// wrap, or a runtime that stopped mapping through the C library, fails.
// It runs in a process of its own, whose heap has no room left by other
// tests.
func TestHugeHeapFromTheRuntimesMapping(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skipf("no transparent huge pages in this kernel (%v): nothing to advise", err)
	}
	if os.Getenv("UE_TEST_HUGE_HEAP") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHugeHeapFromTheRuntimesMapping$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "UE_TEST_HUGE_HEAP=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestHugeHeapFromTheRuntimesMapping") {
			t.Fatalf("in a process of its own: %v\n%s", err, out)
		}
		return
	}
	setHugeHeap(false)
	// 64 MiB at a time: more than the heap has free, so the runtime
	// maps new heap for each, which holds at least its end.
	plain := make([]byte, 64<<20)
	if flags := vmFlags(t, unsafe.Pointer(&plain[len(plain)-1])); strings.Contains(flags, " hg") {
		t.Fatalf("heap mapped without the mark is advised for huge pages: %s", flags)
	}
	setHugeHeap(true)
	huge := make([]byte, 64<<20)
	setHugeHeap(false)
	if flags := vmFlags(t, unsafe.Pointer(&huge[len(huge)-1])); !strings.Contains(flags, " hg") {
		t.Fatalf("heap mapped with the mark is not advised for huge pages: %s", flags)
	}
	runtime.KeepAlive(plain)
	runtime.KeepAlive(huge)
}

// vmFlags is the VmFlags line of the mapping in /proc/self/smaps that
// holds p.
func vmFlags(t *testing.T, p unsafe.Pointer) string {
	t.Helper()
	addr := uint64(uintptr(p))
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
			return line
		}
	}
	t.Fatalf("no mapping in /proc/self/smaps holds %#x", addr)
	return ""
}
