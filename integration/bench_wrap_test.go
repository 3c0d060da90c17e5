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
// sandboxed, in the program namespace) against bubblewrap running `true`
// in a PID namespace of its own (`bwrap --ro-bind / / --unshare-pid
// --proc /proc true`, where bwrap is installed) and bare `bash -c true`,
// interleaved, medians: wrap/bwrap and wrap/bare are the wrapper's
// start-up tax.
func BenchmarkWrapStartup(b *testing.B) {
	ws := b.TempDir()
	bwrap, _ := exec.LookPath("bwrap")
	timed := func(name string, args ...string) time.Duration {
		t0 := time.Now()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			b.Fatalf("%s: %v %s", name, err, out)
		}
		return time.Since(t0)
	}
	var wrap, bw, bare []time.Duration
	for i := 0; i < b.N; i++ {
		wrap = append(wrap, timed(binary, "--workspace", ws, "--", "true"))
		if bwrap != "" {
			bw = append(bw, timed(bwrap, "--ro-bind", "/", "/", "--unshare-pid", "--proc", "/proc", "true"))
		}
		bare = append(bare, timed("bash", "-c", "true"))
	}
	w, r := medianMS(wrap), medianMS(bare)
	b.ReportMetric(w, "wrap-ms")
	b.ReportMetric(r, "bare-ms")
	b.ReportMetric(w/r, "wrap/bare")
	if bwrap != "" {
		m := medianMS(bw)
		b.ReportMetric(m, "bwrap-ms")
		b.ReportMetric(w/m, "wrap/bwrap")
	}
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

// TestWrapperLinksNoEmulator: unified-exec, as scripts/build makes it,
// carries no terminal emulator (each wrapped command's start would load
// and initialise it for nothing: the wrapper shows no screen), and
// unified-exec-mcp, which shows full-screen programs to a model, does.
func TestWrapperLinksNoEmulator(t *testing.T) {
	const emulator = "github.com/charmbracelet/x/vt"
	linked := func(path string) bool {
		out, err := exec.Command("go", "version", "-m", path).CombinedOutput()
		if err != nil {
			t.Fatalf("go version -m %s: %v %s", path, err, out)
		}
		return bytes.Contains(out, []byte("\t"+emulator+"\t"))
	}
	if linked(binary) {
		t.Errorf("%s links %s: build it with the tag unified_exec_novt (scripts/build)", binary, emulator)
	}
	server := filepath.Join(filepath.Dir(binary), "unified-exec-mcp")
	if !linked(server) {
		t.Errorf("%s does not link %s: its sessions would show no screen", server, emulator)
	}
	// The egress proxy's HTTP and TLS parsing: the wrapper hands the
	// commands that need it to unified-exec-mcp (TestWrapHandsOverForEgress).
	symbols := func(path string) []byte {
		out, err := exec.Command("go", "tool", "nm", path).Output()
		if err != nil {
			t.Fatalf("go tool nm %s: %v", path, err)
		}
		return out
	}
	wrapper, mcp := symbols(binary), symbols(server)
	for _, pkg := range []string{"net/http", "crypto/tls"} {
		sym := []byte(" " + pkg + ".")
		if bytes.Contains(wrapper, sym) {
			t.Errorf("%s links %s: build it with the tag unified_exec_noegress (scripts/build)", binary, pkg)
		}
		if !bytes.Contains(mcp, sym) {
			t.Errorf("%s does not link %s: it would carry no egress proxy", server, pkg)
		}
	}
}
