package orchestrator

import (
	"context"
	"testing"

	"github.com/unified-exec/unified-exec/policy"
	"github.com/unified-exec/unified-exec/unifiedexec"
)

func benchSpawn(b *testing.B, mode string) {
	pol := policy.Default()
	pol.Sandbox.Mode = mode
	o, err := New(Config{Policy: pol, Workspace: b.TempDir()})
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
func BenchmarkSpawnSandboxed(b *testing.B)   { benchSpawn(b, policy.ModeWorkspaceWrite) }
func BenchmarkSpawnUnsandboxed(b *testing.B) { benchSpawn(b, policy.ModeDangerFullAccess) }
