package orchestrator

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/policy"
	"github.com/unified-exec/unified-exec/ptyrun"
	"github.com/unified-exec/unified-exec/unifiedexec"
)

func benchSpawn(b *testing.B, mode string, helper bool) {
	pol := policy.Default()
	pol.Sandbox.Mode = mode
	o, err := New(Config{Policy: pol, Workspace: b.TempDir(), HelperPerSession: helper})
	if err != nil {
		b.Fatal(err)
	}
	defer o.Close()
	for b.Loop() {
		r, err := o.Exec(context.Background(), Request{ExecRequest: unifiedexec.ExecRequest{Cmd: "true", Login: noLogin}})
		if err != nil || r.ExitCode == nil || *r.ExitCode != 0 {
			b.Fatal(err, r)
		}
	}
}

// Spawn of `true` through the orchestrator: sandboxed (workspace-write,
// Landlock + seccomp) and unsandboxed (danger-full-access), same run.
// The default: sessions forked from a thread (sandboxed in place) in the
// program's namespace.
func BenchmarkSpawnSandboxed(b *testing.B)   { benchSpawn(b, policy.ModeWorkspaceWrite, false) }
func BenchmarkSpawnUnsandboxed(b *testing.B) { benchSpawn(b, policy.ModeDangerFullAccess, false) }

// Through the re-executed helper, a namespace per session.
func BenchmarkSpawnSandboxedHelper(b *testing.B) {
	benchSpawn(b, policy.ModeWorkspaceWrite, true)
}
func BenchmarkSpawnUnsandboxedHelper(b *testing.B) {
	benchSpawn(b, policy.ModeDangerFullAccess, true)
}

// BenchmarkSpawnSandboxRatio alternates exec_command of `true` sandboxed
// (workspace-write) and unsandboxed, so that both see the same machine,
// and reports the medians and their ratio.
func BenchmarkSpawnSandboxRatio(b *testing.B) {
	sandboxed, unsandboxed := benchOrchestrator(b, policy.ModeWorkspaceWrite), benchOrchestrator(b, policy.ModeDangerFullAccess)
	run := func(o *Orchestrator) time.Duration { return timedTrue(b, o) }
	var s, u []time.Duration
	for b.Loop() {
		s = append(s, run(sandboxed))
		u = append(u, run(unsandboxed))
	}
	ms, mu := medianMS(s), medianMS(u)
	b.ReportMetric(ms, "sandboxed-ms")
	b.ReportMetric(mu, "unsandboxed-ms")
	b.ReportMetric(ms/mu, "sandboxed/unsandboxed")
}

// BenchmarkSpawnPaced: exec_command of `true` the way an agent's calls
// come — each after 150 ms of quiet (the model thinking) — against a
// burst (back to back), sandboxed and unsandboxed, alternating, medians.
// On cgroup v1 a thread's move into a session's cgroup waits for an RCU
// grace period after a quiet moment: paced/burst shows whether that (or
// any other idle tax) reaches the call. bare-paced/burst is the same for
// `bash -c true` started by os/exec alone: the machine's own idle tax
// (caches and idle processors woken), which no call can be under.
func BenchmarkSpawnPaced(b *testing.B) { spawnPaced(b, "") }

// BenchmarkSpawnPacedRepo is BenchmarkSpawnPaced in a workspace like an
// agent's: a git repository of 300 folders and as many files, committed
// (the plan and the git checks search it, read its configuration and its
// index at every call).
func BenchmarkSpawnPacedRepo(b *testing.B) { spawnPaced(b, benchRepo(b)) }

// spawnPaced is BenchmarkSpawnPaced in the workspace ws ("": an empty
// one of its own for each orchestrator).
func spawnPaced(b *testing.B, ws string) {
	sandboxed, unsandboxed := benchOrchestratorIn(b, policy.ModeWorkspaceWrite, ws), benchOrchestratorIn(b, policy.ModeDangerFullAccess, ws)
	run := func(o *Orchestrator) time.Duration { return timedTrue(b, o) }
	// The machine's own idle tax: `bash -c true` through os/exec alone,
	// paced and burst the same way.
	bare := func() time.Duration {
		t0 := time.Now()
		if err := ptyrun.RunOwned(exec.Command("bash", "-c", "true")); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	var paced, burst, pacedU, burstU, pacedB, burstB []time.Duration
	for b.Loop() {
		time.Sleep(150 * time.Millisecond)
		paced = append(paced, run(sandboxed))
		burst = append(burst, run(sandboxed))
		time.Sleep(150 * time.Millisecond)
		pacedU = append(pacedU, run(unsandboxed))
		burstU = append(burstU, run(unsandboxed))
		time.Sleep(150 * time.Millisecond)
		pacedB = append(pacedB, bare())
		burstB = append(burstB, bare())
	}
	mp, mb, mpu, mbu := medianMS(paced), medianMS(burst), medianMS(pacedU), medianMS(burstU)
	b.ReportMetric(mp, "paced-ms")
	b.ReportMetric(mb, "burst-ms")
	b.ReportMetric(mp/mb, "paced/burst")
	b.ReportMetric(mpu, "paced-unsandboxed-ms")
	b.ReportMetric(mbu, "burst-unsandboxed-ms")
	b.ReportMetric(mp/mpu, "paced-sandboxed/unsandboxed")
	b.ReportMetric(mb/mbu, "burst-sandboxed/unsandboxed")
	b.ReportMetric(mpu/mbu, "unsandboxed-paced/burst")
	b.ReportMetric(medianMS(pacedB), "bare-paced-ms")
	b.ReportMetric(medianMS(burstB), "bare-burst-ms")
	b.ReportMetric(medianMS(pacedB)/medianMS(burstB), "bare-paced/burst")
}

// benchOrchestrator is an orchestrator of the default policy in mode,
// closed when the benchmark ends.
func benchOrchestrator(b *testing.B, mode string) *Orchestrator {
	return benchOrchestratorIn(b, mode, "")
}

// benchOrchestratorIn is benchOrchestrator in the workspace ws ("": an
// empty one of its own).
func benchOrchestratorIn(b *testing.B, mode, ws string) *Orchestrator {
	if ws == "" {
		ws = b.TempDir()
	}
	pol := policy.Default()
	pol.Sandbox.Mode = mode
	o, err := New(Config{Policy: pol, Workspace: ws})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(o.Close)
	return o
}

// timedTrue times one exec_command of `true` (no login shell) through o.
func timedTrue(b *testing.B, o *Orchestrator) time.Duration {
	t0 := time.Now()
	r, err := o.Exec(context.Background(), Request{ExecRequest: unifiedexec.ExecRequest{Cmd: "true", Login: noLogin}})
	if err != nil || r.ExitCode == nil || *r.ExitCode != 0 {
		b.Fatal(err, r)
	}
	return time.Since(t0)
}

// medianMS is the median of d in milliseconds.
func medianMS(d []time.Duration) float64 {
	d = slices.Clone(d)
	slices.Sort(d)
	return float64(d[len(d)/2]) / 1e6
}

// benchRepo makes a git repository of 10 × 30 folders, a file in each,
// committed, and lets it age past the directory cache's racy window, as
// a tree does between an agent's commands.
func benchRepo(b *testing.B) string {
	b.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git is needed")
	}
	ws := b.TempDir()
	for i := range 10 {
		for j := range 30 {
			dir := fmt.Sprintf("%s/pkg%d/sub%d", ws, i, j)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(dir+"/file.go", []byte("package x\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "x"}} {
		cmd := exec.Command("git", append([]string{"-C", ws}, args...)...)
		if out, err := ownedOutput(cmd); err != nil {
			b.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	time.Sleep(2100 * time.Millisecond)
	return ws
}
