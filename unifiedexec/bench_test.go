//go:build linux

package unifiedexec

import (
	"context"
	"io"
	"os/exec"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/unified-exec/unified-exec/ptyrun"
)

// asPlainProgram runs f as a plain program would run: TestMain put this
// process under SCHED_BATCH, as unified-exec does (unless UE_SCHED=other);
// a baseline runs with it off, so that neither the reader nor the
// commands it starts are batch.
func asPlainProgram(b *testing.B, f func()) {
	if err := ptyrun.BatchScheduling(false); err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := ptyrun.BatchScheduling(batchScheduling); err != nil {
			b.Fatal(err)
		}
	}()
	f()
}

// Spawn of `true`: a bare os/exec, and through the engine (pipe and PTY).
func BenchmarkSpawnOSExec(b *testing.B) {
	asPlainProgram(b, func() {
		for b.Loop() {
			// Recorded as ours: TestMain put this process at the head of
			// a namespace, whose reaper takes other children's exits.
			if err := ptyrun.RunOwned(exec.Command("/bin/bash", "-c", "true")); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func benchSpawn(b *testing.B, tty, noIso, helper bool) {
	m := New(Config{Workspace: b.TempDir(), NoIsolation: noIso, HelperPerSession: helper})
	defer m.Close()
	for b.Loop() {
		r, err := m.Exec(context.Background(), ExecRequest{Cmd: "true", Login: noLogin, TTY: tty})
		if err != nil || r.ExitCode == nil {
			b.Fatal(err, r)
		}
	}
}

// The default (TestMain enters a program namespace, as unified-exec
// does): forked directly, a cgroup per session.
func BenchmarkSpawnEnginePipe(b *testing.B) { benchSpawn(b, false, false, false) }
func BenchmarkSpawnEnginePTY(b *testing.B)  { benchSpawn(b, true, false, false) }

// Through the re-executed helper, a PID namespace per session.
func BenchmarkSpawnEnginePipeHelper(b *testing.B) { benchSpawn(b, false, false, true) }

// Without namespaces at all.
func BenchmarkSpawnEnginePipeNoIsolation(b *testing.B) { benchSpawn(b, false, true, false) }

const throughputBytes = 64 << 20

var producer = []string{"/bin/sh", "-c", "head -c 67108864 /dev/zero | tr '\\0' 'q' | fold -w 100"}

// rawThroughput reads everything from a PTY or a pipe, nothing else.
func rawThroughput(b *testing.B, tty bool) {
	cmd := exec.Command(producer[0], producer[1:]...)
	if tty {
		f, err := pty.Start(cmd)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, f)
		cmd.Wait()
		f.Close()
		return
	}
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, out)
	cmd.Wait()
}

// selfCPU is the CPU time this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchThroughput alternates a raw read loop and the engine on the same
// producer, b.N times each, so that both see the same machine; it reports
// the median rate of each and their ratio, and the median CPU time this
// process spent reading each run (the reader's cost; the producers'
// is not counted).
func benchThroughput(b *testing.B, tty bool) {
	m := New(Config{Workspace: b.TempDir()})
	defer m.Close()
	var raw, engine []float64
	var rawCPU, engineCPU []time.Duration
	rate := func(d time.Duration) float64 { return throughputBytes / d.Seconds() / 1e6 }
	for b.Loop() {
		asPlainProgram(b, func() {
			c0, t0 := selfCPU(), time.Now()
			rawThroughput(b, tty)
			raw = append(raw, rate(time.Since(t0)))
			rawCPU = append(rawCPU, selfCPU()-c0)
		})
		c0, t0 := selfCPU(), time.Now()
		r, err := m.Exec(context.Background(), ExecRequest{Cmd: producer[2], Login: noLogin, TTY: tty, Yield: 30 * time.Second})
		if err != nil || r.ExitCode == nil {
			b.Fatal(err, r)
		}
		engine = append(engine, rate(time.Since(t0)))
		engineCPU = append(engineCPU, selfCPU()-c0)
	}
	slices.Sort(raw)
	slices.Sort(engine)
	mr, me := raw[len(raw)/2], engine[len(engine)/2]
	b.ReportMetric(mr, "raw-MB/s")
	b.ReportMetric(me, "engine-MB/s")
	b.ReportMetric(me/mr, "engine/raw")
	cr, ce := medianMS(rawCPU), medianMS(engineCPU)
	b.ReportMetric(cr, "raw-cpu-ms")
	b.ReportMetric(ce, "engine-cpu-ms")
}

func BenchmarkThroughputPTY(b *testing.B)  { benchThroughput(b, true) }
func BenchmarkThroughputPipe(b *testing.B) { benchThroughput(b, false) }

// BenchmarkIdleSessionHeap reports the heap held per idle session.
func BenchmarkIdleSessionHeap(b *testing.B) {
	const n = 50
	for b.Loop() {
		m := New(Config{Workspace: b.TempDir(), MaxSessions: n + 1})
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := 0; i < n; i++ {
			if _, err := m.Exec(context.Background(), ExecRequest{Cmd: "echo ready; exec sleep 60", Login: noLogin, TTY: i%2 == 0, Yield: time.Millisecond}); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n/1024, "KiB/session")
		m.Close()
	}
}

// A flood in one session must not slow calls on others: exec of `true`
// while another session runs `yes` forever, against the same without.
func benchBeside(b *testing.B, flood bool) {
	m := New(Config{Workspace: b.TempDir()})
	defer m.Close()
	if flood {
		r, err := m.Exec(context.Background(), ExecRequest{Cmd: "yes flood", Login: noLogin, Yield: time.Millisecond})
		if err != nil || r.SessionID == 0 {
			b.Fatal(err, r)
		}
	}
	for b.Loop() {
		r, err := m.Exec(context.Background(), ExecRequest{Cmd: "true", Login: noLogin})
		if err != nil || r.ExitCode == nil {
			b.Fatal(err, r)
		}
	}
}

func BenchmarkExecBesideQuiet(b *testing.B) { benchBeside(b, false) }
func BenchmarkExecBesideFlood(b *testing.B) { benchBeside(b, true) }

// median of the durations in ms.
func medianMS(d []time.Duration) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[len(s)/2]) / 1e6
}

// BenchmarkSpawnRatio alternates a bare os/exec of `bash -c true` with the
// engine's spawn of `true` (pipe and PTY), so that all three see the same
// machine, and reports the medians and the ratios.
func BenchmarkSpawnRatio(b *testing.B) {
	m := New(Config{Workspace: b.TempDir()})
	defer m.Close()
	var bare, pipe, tty []time.Duration
	engine := func(isTTY bool) time.Duration {
		t0 := time.Now()
		r, err := m.Exec(context.Background(), ExecRequest{Cmd: "true", Login: noLogin, TTY: isTTY})
		if err != nil || r.ExitCode == nil {
			b.Fatal(err, r)
		}
		return time.Since(t0)
	}
	for b.Loop() {
		asPlainProgram(b, func() {
			t0 := time.Now()
			// Recorded as ours: TestMain put this process at the head of
			// a namespace, whose reaper takes other children's exits.
			if err := ptyrun.RunOwned(exec.Command("/bin/bash", "-c", "true")); err != nil {
				b.Fatal(err)
			}
			bare = append(bare, time.Since(t0))
		})
		pipe = append(pipe, engine(false))
		tty = append(tty, engine(true))
	}
	mb, mp, mt := medianMS(bare), medianMS(pipe), medianMS(tty)
	b.ReportMetric(mb, "osexec-ms")
	b.ReportMetric(mp, "pipe-ms")
	b.ReportMetric(mt, "pty-ms")
	b.ReportMetric(mp/mb, "pipe/osexec")
	b.ReportMetric(mt/mb, "pty/osexec")
}
