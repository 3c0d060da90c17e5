//go:build linux

package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// median of the durations, in milliseconds.
func medianMS(d []time.Duration) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[len(s)/2]) / float64(time.Millisecond)
}

// BenchmarkWrapStartup: `unified-exec -- true` (the default policy:
// sandboxed, in the program namespace) against bare `bash -c true`,
// interleaved, medians; wrap/bare is the start-up tax of the wrapper.
func BenchmarkWrapStartup(b *testing.B) {
	ws := b.TempDir()
	var wrap, bare []time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if out, err := exec.Command(binary, "--workspace", ws, "--", "true").CombinedOutput(); err != nil {
			b.Fatalf("%v %s", err, out)
		}
		wrap = append(wrap, time.Since(t0))
		t0 = time.Now()
		if err := exec.Command("bash", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
		bare = append(bare, time.Since(t0))
	}
	w, r := medianMS(wrap), medianMS(bare)
	b.ReportMetric(w, "wrap-ms")
	b.ReportMetric(r, "bare-ms")
	b.ReportMetric(w/r, "wrap/bare")
}

// BenchmarkWrapThroughput: 64 MiB through the wrapper's stdin to its
// stdout (`unified-exec -- cat < file > /dev/null`) against `cat` alone,
// interleaved, medians.
func BenchmarkWrapThroughput(b *testing.B) {
	ws := b.TempDir()
	file := filepath.Join(ws, "64MiB")
	if err := os.WriteFile(file, bytes.Repeat([]byte("0123456789abcdef"), 4<<20), 0o644); err != nil {
		b.Fatal(err)
	}
	run := func(argv ...string) time.Duration {
		in, err := os.Open(file)
		if err != nil {
			b.Fatal(err)
		}
		defer in.Close()
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stdin = in
		null, _ := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		defer null.Close()
		cmd.Stdout = null
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	var wrap, bare []time.Duration
	for i := 0; i < b.N; i++ {
		wrap = append(wrap, run(binary, "--workspace", ws, "--", "cat"))
		bare = append(bare, run("cat"))
	}
	w, r := medianMS(wrap), medianMS(bare)
	b.ReportMetric(64/(w/1000), "wrap-MiB/s")
	b.ReportMetric(64/(r/1000), "cat-MiB/s")
	b.ReportMetric(r/w, "wrap/cat")
}
