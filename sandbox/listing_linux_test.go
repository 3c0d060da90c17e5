package sandbox

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/policy"
	"golang.org/x/sys/unix"
)

// kept: dirNames keeps a listing of dir.
func kept(dir string) bool {
	listings.mu.Lock()
	defer listings.mu.Unlock()
	_, ok := listings.m[dir]
	return ok
}

// settled lists dir once it has stood unchanged past listingMargin, so
// that its listing is kept, and fails unless it is.
func settled(t *testing.T, dir string) {
	t.Helper()
	time.Sleep(listingMargin + 50*time.Millisecond)
	if _, err := dirNames(dir); err != nil {
		t.Fatal(err)
	}
	if !kept(dir) {
		t.Fatalf("%s stood unchanged for longer than %v and its listing was not kept", dir, listingMargin)
	}
}

// TestDirNamesSeesEveryChange: a kept listing is never used after any
// change of the directory's entries, made at once after it was read, the
// directory's times set back after it, or the change an exchange of two
// entries (the names stay, their types swap).
func TestDirNamesSeesEveryChange(t *testing.T) {
	dir := t.TempDir()
	other := t.TempDir()
	for _, n := range []string{"file", "old"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "outside"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	in := func(n string) string { return filepath.Join(dir, n) }
	changes := []struct {
		name   string
		change func() error
		want   func(names []string, types []os.FileMode) bool
	}{
		{"create", func() error { return os.WriteFile(in("new"), nil, 0o600) }, has("new")},
		{"mkdir", func() error { return os.Mkdir(in(".aws"), 0o700) }, has(".aws")},
		{"symlink", func() error { return os.Symlink("/etc", in("link")) }, has("link")},
		{"hard link", func() error { return os.Link(filepath.Join(other, "outside"), in("linked")) }, has("linked")},
		{"rename in", func() error { return os.Rename(filepath.Join(other, "outside"), in("moved")) }, has("moved")},
		{"rename out", func() error { return os.Rename(in("moved"), filepath.Join(other, "back")) }, not(has("moved"))},
		{"rename over", func() error { return os.Rename(in("new"), in("old")) }, not(has("new"))},
		{"unlink", func() error { return os.Remove(in("linked")) }, not(has("linked"))},
		{"rmdir", func() error { return os.Remove(in(".aws")) }, not(has(".aws"))},
		{"socket", func() error {
			l, err := net.Listen("unix", in("agent.sock"))
			if err == nil {
				t.Cleanup(func() { l.Close() })
			}
			return err
		}, has("agent.sock")},
		{"exchange", func() error {
			return unix.Renameat2(unix.AT_FDCWD, in("file"), unix.AT_FDCWD, in("sub"), unix.RENAME_EXCHANGE)
		}, func(names []string, types []os.FileMode) bool {
			i, ok := slices.BinarySearch(names, "file")
			return ok && types[i].IsDir()
		}},
		{"create, times set back", func() error {
			var st unix.Stat_t
			if err := unix.Stat(dir, &st); err != nil {
				return err
			}
			if err := os.WriteFile(in("hidden"), nil, 0o600); err != nil {
				return err
			}
			return unix.UtimesNanoAt(unix.AT_FDCWD, dir, []unix.Timespec{st.Atim, st.Mtim}, 0)
		}, has("hidden")},
	}
	for _, c := range changes {
		settled(t, dir)
		if err := c.change(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		names, types, _, err := listEntries(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !c.want(names, types) {
			t.Errorf("%s: the listing after it is %v: the change is not in it", c.name, names)
		}
	}
}

func has(name string) func([]string, []os.FileMode) bool {
	return func(names []string, _ []os.FileMode) bool { return slices.Contains(names, name) }
}

func not(f func([]string, []os.FileMode) bool) func([]string, []os.FileMode) bool {
	return func(names []string, types []os.FileMode) bool { return !f(names, types) }
}

// TestDirNamesBackToBack: changes coming quicker than a clock tick, each
// listed at once, are each seen.
func TestDirNamesBackToBack(t *testing.T) {
	dir := t.TempDir()
	settled(t, dir)
	for i := range 200 {
		name := "n" + time.Now().Format("150405.000000000")
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		names, err := dirNames(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(names, name) {
			t.Fatalf("change %d: %s, made just before, is not in the listing", i, name)
		}
	}
}

// TestDirNamesFreshNotKept: a directory changed within listingMargin is
// listed afresh every time.
func TestDirNamesFreshNotKept(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := dirNames(dir); err != nil {
		t.Fatal(err)
	}
	if kept(dir) {
		t.Fatalf("the listing of %s, changed just now, was kept", dir)
	}
}

// TestCompileSeesNewUnreadable: an unreadable path made in the home just
// after a plan (whose listing of the home was kept) is in the next plan,
// and so is a socket folder made in the same way.
func TestCompileSeesNewUnreadable(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	ws := t.TempDir()
	p := policy.DefaultSandbox()
	settled(t, home)
	plan, err := Compile(p, ws)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(plan.DenyRead, filepath.Join(home, ".aws")) {
		t.Fatal("~/.aws is unreadable before it exists")
	}
	for _, made := range []string{".aws", ".config/gh"} {
		if err := os.MkdirAll(filepath.Join(home, made), 0o700); err != nil {
			t.Fatal(err)
		}
		plan, err := Compile(p, ws)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(plan.DenyRead, filepath.Join(home, made)) {
			t.Errorf("~/%s, made after the last plan, is not unreadable in the next: %v", made, plan.DenyRead)
		}
		settled(t, home)
	}
}

// TestAbsence: what absence says against what a lookup finds.
func TestAbsence(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a/b"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(dir, "l")); err != nil {
		t.Fatal(err)
	}
	// deep/.. is a, not dir: a lookup finds a/only through it.
	if err := os.Symlink("a/b", filepath.Join(dir, "deep")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a/only"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	locked := filepath.Join(dir, "locked")
	if err := os.Mkdir(locked, 0o700); err != nil {
		t.Fatal(err)
	}
	settled(t, dir)
	for _, d := range []string{"a", "a/b", "l", "locked"} { // listed, and so kept
		if _, err := dirNames(filepath.Join(dir, d)); err != nil {
			t.Fatal(err)
		}
	}
	a := newAbsence()
	for _, c := range []struct {
		path          string
		absent, found bool
	}{
		{"a", false, true},
		{"a/b", false, true},
		{"a/c", true, false},
		{"x/y/z", true, false},
		{"l/b", false, true}, // through the link: the folder the link leads to
		{"l/c", true, false},
		{"locked", false, true},
		{"deep/../only", false, false}, // not said either way
	} {
		p := dir + "/" + c.path // as written: Join would clean away the ..
		if got := a.absent(p); got != c.absent {
			t.Errorf("absent(%s) = %v", c.path, got)
		}
		if got := a.present(p); got != c.found {
			t.Errorf("present(%s) = %v", c.path, got)
		}
		_, err := os.Lstat(p)
		if a.absent(p) && err == nil {
			t.Errorf("%s is there, and said absent", c.path)
		}
	}
	// A listing of a file system whose lookups may find what it does not
	// list (autofs mounts on lookup; /proc here stands for those kinds)
	// never says a name is absent.
	for _, p := range []string{"/proc/self/no-such-entry", "/sys/no-such-entry"} {
		if a.absent(p) {
			t.Errorf("%s said absent from a listing of a file system not known to list every name", p)
		}
	}
	// A folder no listing of which is at hand (made since) is not read
	// to say so: the caller looks the path up.
	if err := os.MkdirAll(filepath.Join(dir, "a/fresh"), 0o700); err != nil {
		t.Fatal(err)
	}
	b := newAbsence()
	if b.absent(filepath.Join(dir, "a/fresh/x")) || b.present(filepath.Join(dir, "a/fresh")) {
		t.Error("a/fresh, made after every listing, said absent or present")
	}
	// What the plan did not read to say so it reads when asked to.
	if names, err := b.read(filepath.Join(dir, "a")); err != nil || !slices.Contains(names, "fresh") {
		t.Errorf("reading a after asking about it: %v %v", names, err)
	}
	for _, p := range []string{"", "relative", "/"} {
		if a.absent(p) || a.present(p) {
			t.Errorf("%q said absent or present", p)
		}
	}
}

// TestCompileSeesNewProtected: a protected name absent from the workspace
// is said so in the plan's notes, and once made (just after a plan whose
// listing of the workspace was kept), the next plan keeps it read-only.
func TestCompileSeesNewProtected(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	ws := t.TempDir()
	p := policy.DefaultSandbox()
	p.Protected = []string{".agents"}
	settled(t, ws)
	plan, err := Compile(p, ws)
	if err != nil {
		t.Fatal(err)
	}
	agents := filepath.Join(ws, ".agents")
	if !slices.ContainsFunc(plan.Notes, func(n string) bool {
		return strings.Contains(n, "not protected because absent") && strings.Contains(n, agents)
	}) {
		t.Errorf("no note says %s is absent: %q", agents, plan.Notes)
	}
	if err := os.Mkdir(agents, 0o700); err != nil {
		t.Fatal(err)
	}
	plan, err = Compile(p, ws)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(plan.Protected, agents) {
		t.Errorf("%s, made after the last plan, is not protected in the next: %v", agents, plan.Protected)
	}
}

// TestCompileCoversFolderItMade: the tmux folder a plan makes (here under
// $TMUX_TMPDIR, whose listing the plan had read before making it) is
// covered by that same plan.
func TestCompileCoversFolderItMade(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	tmux := t.TempDir()
	t.Setenv("TMUX_TMPDIR", tmux)
	settled(t, tmux)
	plan, err := Compile(policy.DefaultSandbox(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(tmux, fmt.Sprintf("tmux-%d", os.Getuid()))
	if _, err := os.Stat(folder); err != nil {
		t.Fatalf("the plan did not make %s: %v", folder, err)
	}
	if !slices.Contains(plan.Sockets, folder) {
		t.Errorf("%s, made by the plan, is not covered by it: %v", folder, plan.Sockets)
	}
}

// TestDirNamesCoarseTimes: on a file system that stamps times in whole
// seconds (ext4 with 128-byte inodes: what mke2fs makes for one under
// 512 MiB), two changes in one second leave the change time as it was. A
// listing read between them must not be kept, however long after the
// first it was read within that second.
func TestDirNamesCoarseTimes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a file system image needs root")
	}
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		t.Skip("no mkfs.ext4 to make a file system of whole-second times")
	}
	img := filepath.Join(t.TempDir(), "small.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 16<<20); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(mkfs, "-q", "-F", "-I", "128", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v %s", err, out)
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		t.Skipf("no loop mount here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	dir := filepath.Join(mnt, "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		// A change 0.2 s into a second, a listing 0.25 s later (past
		// listingMargin), another change at once: all in one second.
		now := time.Now()
		time.Sleep(now.Truncate(time.Second).Add(time.Second + 200*time.Millisecond).Sub(now))
		first := fmt.Sprintf("first-%d", round)
		if err := os.WriteFile(filepath.Join(dir, first), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		time.Sleep(250 * time.Millisecond)
		if _, err := dirNames(dir); err != nil {
			t.Fatal(err)
		}
		second := fmt.Sprintf("second-%d", round)
		if err := os.WriteFile(filepath.Join(dir, second), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		names, err := dirNames(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(names, second) {
			t.Fatalf("round %d: %s, made in the second of the listing, is not in the next: %v", round, second, names)
		}
	}
}
