package sandbox

import (
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMountLayerRootMadeLink: a writable root of the plan is a link to a
// folder outside every root by the time the mount layer is built (a
// command swapped it after the plan was made). The clone of the root went
// where the link led and made that folder writable for the mount layer;
// now the root is left read-only and the folder stays read-only. (The
// Landlock layer skips such a root on its own: TestApplySwappedToSymlink.)
func TestMountLayerRootMadeLink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("building a mount layer in the test process needs root")
	}
	dir := t.TempDir()
	root, home := dir+"/root", dir+"/home"
	for _, d := range []string{root, home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	plan := Plan{Mode: "workspace-write", WritableRoots: []string{root}}
	if err := os.Rename(root, dir+"/away"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(home, root); err != nil {
		t.Fatal(err)
	}
	err := inMountLayer(plan, func() error { return os.WriteFile(home+"/pwned", []byte("x"), 0o644) })
	if err == nil {
		t.Fatal("the folder a swapped root's link leads to was writable in the mount layer")
	}
	if !errors.Is(err, unix.EROFS) {
		t.Fatalf("want a read-only file system, got %v", err)
	}
}
