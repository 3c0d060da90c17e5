//go:build linux

package sandbox

import (
	"os"
	"testing"

	"github.com/unified-exec/unified-exec/policy"
)

// BenchmarkCompile compiles the default policy for a workspace, as the
// orchestrator does for every command.
func BenchmarkCompile(b *testing.B) {
	p := policy.DefaultSandbox()
	ws := b.TempDir()
	for b.Loop() {
		if _, err := Compile(p, ws); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMountLayer builds the command's mount namespace of the default
// plan on a fresh thread, as ApplyThread does, and retires the thread.
func BenchmarkMountLayer(b *testing.B) {
	plan, err := Compile(policy.DefaultSandbox(), b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	benchMountLayer(b, plan)
}

// BenchmarkMountLayerRepo is the same for the workspace of
// BenchmarkCompileRepo (four repositories and a submodule: their hooks and
// config bound, the folders on the way pinned), without /tmp.
func BenchmarkMountLayerRepo(b *testing.B) {
	p := policy.DefaultSandbox()
	p.ExcludeSlashTmp = true
	plan, err := Compile(p, benchRepoTree(b))
	if err != nil {
		b.Fatal(err)
	}
	benchMountLayer(b, plan)
}

func benchMountLayer(b *testing.B, plan Plan) {
	if os.Geteuid() != 0 {
		b.Skip("mounts need root (or a user namespace)")
	}
	for b.Loop() {
		if err := inMountLayer(plan, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// inMountLayer builds plan's mount layer on a fresh thread, in a mount
// namespace of its own, and runs then there (if set); the thread is
// retired.
func inMountLayer(plan Plan, then func() error) error {
	errc := make(chan error, 1)
	goRetired(func() {
		if err := privateMountNamespace(); err != nil {
			errc <- err
			return
		}
		if err := mountLayer(plan); err != nil || then == nil {
			errc <- err
			return
		}
		errc <- then()
	})
	return <-errc
}
