package orchestrator

import (
	"context"
	"testing"

	"github.com/unified-exec/unified-exec/policy"
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
