package orchestrator

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/policy"
	"github.com/unified-exec/unified-exec/ptyrun"
	"github.com/unified-exec/unified-exec/unifiedexec"
)

// BenchmarkLoginSnapshotRatio: exec_command `true` with the default login
// against login: false, interleaved in one run, through the whole
// pipeline (default policy: sandboxed, workspace-write), on a HOME whose
// .bashrc (read through .bash_profile, as Debian's .profile does) sleeps
// 200 ms and prints to stderr. The login shell runs once, for the
// snapshot (snapshot-ms, the first login command); every later login
// command restores it. For scale, bash-lc-ms is `bash -lc true` itself
// on that HOME, unsandboxed: what each login command cost before.
func BenchmarkLoginSnapshotRatio(b *testing.B) {
	home := b.TempDir()
	os.WriteFile(filepath.Join(home, ".bashrc"), []byte("sleep 0.2\necho 'rc: noise' >&2\nexport FROM_RC=1\n"), 0o644)
	os.WriteFile(filepath.Join(home, ".bash_profile"), []byte(". ~/.bashrc\n"), 0o644)
	b.Setenv("HOME", home)
	o, err := New(Config{Policy: policy.Default(), Workspace: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer o.Close()
	login := true
	run := func(login *bool) time.Duration {
		t0 := time.Now()
		r, err := o.Exec(context.Background(), Request{ExecRequest: unifiedexec.ExecRequest{Cmd: "true", Login: login}})
		if err != nil || r.ExitCode == nil || *r.ExitCode != 0 || r.Output != "" {
			b.Fatal(err, r)
		}
		return time.Since(t0)
	}
	snapshot := run(&login)
	bashLc := func() time.Duration {
		t0 := time.Now()
		if err := ptyrun.RunOwned(exec.Command("/bin/bash", "-lc", "true")); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	lc := bashLc()
	var l, n []time.Duration
	for b.Loop() {
		l = append(l, run(&login))
		n = append(n, run(noLogin))
	}
	ml, mn := medianMS(l), medianMS(n)
	b.ReportMetric(ml, "login-ms")
	b.ReportMetric(mn, "nologin-ms")
	b.ReportMetric(ml/mn, "login/nologin")
	b.ReportMetric(float64(snapshot)/1e6, "snapshot-ms")
	b.ReportMetric(float64(lc)/1e6, "bash-lc-ms")
}
