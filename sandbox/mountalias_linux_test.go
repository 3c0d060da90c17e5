//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/policy"
	"golang.org/x/sys/unix"
)

// TestCurrentMountsSideBySide: callers side by side (the plan and the git
// survey before a wrapper's command) get the table mountinfo gives, all
// the same, and a caller after them gets it without reading again until
// a mount changes.
func TestCurrentMountsSideBySide(t *testing.T) {
	b, err := os.ReadFile("/proc/thread-self/mountinfo")
	if err != nil {
		t.Skipf("no /proc/thread-self/mountinfo: %v", err)
	}
	want := parseMountinfo(string(b))
	var wg sync.WaitGroup
	got := make([][]mountEntry, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _ = currentMounts()
		}()
	}
	wg.Wait()
	for i, g := range got {
		if !reflect.DeepEqual(g, want) {
			t.Fatalf("caller %d got %d mounts, mountinfo gives %d", i, len(g), len(want))
		}
	}
	mountTable.mu.Lock()
	read, reading := mountTable.read, mountTable.reading
	mountTable.mu.Unlock()
	if !read || reading != nil {
		t.Fatalf("after the callers: read %v, a read under way %v", read, reading != nil)
	}
	// A change the watch reported and nobody read yet is read by the
	// next caller, whoever took the report in.
	mountTable.mu.Lock()
	mountTable.changes++
	mountTable.mounts = nil
	mountTable.mu.Unlock()
	if g, _ := currentMounts(); !reflect.DeepEqual(g, want) {
		t.Fatalf("after a change: %d mounts, mountinfo gives %d", len(g), len(want))
	}
}

// TestCurrentMountsNotStaleWhileRead: a caller that starts after a mount,
// while another caller's read of the table is under way (that caller took
// in the mount's report), gets a table with the mount (fresh-eyes review
// of session 20: it got the table from before it, and with it a plan that
// missed the other path of a deny_read folder the mount made).
func TestCurrentMountsNotStaleWhileRead(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("binding a folder elsewhere takes root: the root run of the suite tries this")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	src, dst := dir+"/secret", dir+"/alias"
	for _, d := range []string{src, dst} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := currentMounts(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind %s at %s: %v", src, dst, err)
	}
	t.Cleanup(func() { unix.Unmount(dst, unix.MNT_DETACH) })
	// Caller A takes in the report and, while it reads, caller B starts.
	bStarted, bDone := make(chan struct{}), make(chan []mountEntry, 1)
	var once sync.Once
	duringMountRead = func() {
		once.Do(func() {
			go func() {
				close(bStarted)
				m, _ := currentMounts()
				bDone <- m
			}()
			<-bStarted
			// B either returns at once (the table it got is checked
			// below) or waits for this read, as it should: then A goes
			// on after a moment.
			select {
			case m := <-bDone:
				bDone <- m
			case <-time.After(200 * time.Millisecond):
			}
		})
	}
	t.Cleanup(func() { duringMountRead = nil })
	a, err := currentMounts()
	if err != nil {
		t.Fatal(err)
	}
	b := <-bDone
	for who, m := range map[string][]mountEntry{"A": a, "B": b} {
		if !slices.ContainsFunc(m, func(e mountEntry) bool { return e.point == dst }) {
			t.Errorf("caller %s, started after the bind at %s, got a table without it", who, dst)
		}
	}
}

// TestMountTableUnreadableFailsClosed: a mount table that cannot be read
// (no /proc, no descriptor left) leaves other paths of the deny_read
// paths unknown: no plan is made, and the git survey's fence takes every
// path for an unreadable one, reading nothing for commands.
func TestMountTableUnreadableFailsClosed(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	if err := os.Mkdir(home+"/.ssh", 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	unreadableMountTable(t)
	p := policy.DefaultSandbox()
	_, err := Compile(p, ws)
	if err == nil || !strings.Contains(err.Error(), "mount table") {
		t.Fatalf("Compile with no mount table: %v, want an error that says the mount table could not be read", err)
	}
	if targets := unreadableTargets(p, ws); !slices.Contains(targets, "/") {
		t.Fatalf("unreadable targets with no mount table: %q, want / among them", targets)
	}
}

// TestFenceWithEveryPathUnreadable: the fence of a survey whose mount
// table could not be read ("/" among its targets) refuses every path:
// absolute and relative ones, "/.." and links to / included, and lets the
// search enter no folder (fresh-eyes review of session 20: "/.." was
// looked up, and the search entered folders).
func TestFenceWithEveryPathUnreadable(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/f", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", dir+"/toroot"); err != nil {
		t.Fatal(err)
	}
	fc := newFence(func() []string { return []string{"/", "/home/u/.ssh"} })
	fc.roots = []string{dir}
	for _, p := range []string{"/", "/.", "/..", "//", "/../..", "/etc/passwd", dir, dir + "/f", dir + "/toroot", dir + "/toroot/etc", dir + "/nope/x", "rel", ".", "..", dir + "/f/../f"} {
		if fc.listable(p) {
			t.Errorf("listable(%q)", p)
		}
		if !fc.blocked(p) {
			t.Errorf("blocked(%q) is false", p)
		}
		if r, err := fc.locate(p); err == nil {
			t.Errorf("locate(%q) = %q", p, r)
		}
		if f, err := fc.open(p); err == nil {
			f.Close()
			t.Errorf("open(%q) opened it", p)
		} else if !strings.Contains(err.Error(), "deny_read") {
			t.Errorf("open(%q): %v, not the fence's refusal", p, err)
		}
		if _, err := fc.readDir(p); err == nil {
			t.Errorf("readDir(%q) listed it", p)
		}
		if abs := filepath.Clean(p); filepath.IsAbs(abs) && !fc.childBlocked(abs) {
			t.Errorf("childBlocked(%q) is false", abs)
		}
	}
}

// TestMountTableUnreadableSurveyEntersNoAlias: with the mount table
// unreadable, the git survey tells nothing of what lies in another path
// of ~/.ssh (the home bound inside the workspace), as it does not with
// the table read (fresh-eyes review of session 20: the search listed it).
func TestMountTableUnreadableSurveyEntersNoAlias(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("binding a folder elsewhere takes root: the root run of the suite tries this")
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home, ws := base+"/home", base+"/ws"
	for _, d := range []string{home + "/.ssh/proj/.git/objects", home + "/.ssh/proj/.git/refs", ws + "/hb"} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(home+"/.ssh/proj/.git/HEAD", []byte("ref: refs/heads/main\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(home, ws+"/hb", "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind %s at %s: %v", home, ws+"/hb", err)
	}
	t.Cleanup(func() { unix.Unmount(ws+"/hb", unix.MNT_DETACH) })
	t.Setenv("HOME", home)
	p := policy.DefaultSandbox()
	inAlias := func() []string {
		st, err := WatchGit(p, ws)
		if err != nil {
			t.Fatal(err)
		}
		var in []string
		for key := range st.items {
			if strings.Contains(key, "/hb/.ssh/") {
				in = append(in, key)
			}
		}
		return in
	}
	if in := inAlias(); len(in) > 0 {
		t.Fatalf("with the mount table read, the survey told what lies in ~/.ssh's other path: %q", in)
	}
	unreadableMountTable(t)
	if in := inAlias(); len(in) > 0 {
		t.Errorf("with the mount table unread, the survey told what lies in ~/.ssh's other path: %q", in)
	}
}

// TestReadOnlyRootNeedsTheMountTable: a thread whose mount table cannot
// be read gets no sandbox (an error, before anything is changed) rather
// than one that leaves binds of outside folders below a writable root
// writable (fresh-eyes review of session 20).
func TestReadOnlyRootNeedsTheMountTable(t *testing.T) {
	threadMountinfoPath = filepath.Join(t.TempDir(), "no-mountinfo")
	t.Cleanup(func() { threadMountinfoPath = "/proc/thread-self/mountinfo" })
	err := readOnlyRoot([]string{t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "mount table") {
		t.Fatalf("readOnlyRoot with no mount table: %v, want an error that says the mount table could not be read", err)
	}
}

// TestMountWatchReadsItsOwnNamespace: the table the watch gives is the
// one of the namespace it was opened in, whichever thread reads it (the
// process's first thread may have entered a namespace of its own for
// good: a table read at /proc/self then missed the mounts made since, and
// TestApplyDenyReadThroughSecondMount failed now and then).
func TestMountWatchReadsItsOwnNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("binding a folder elsewhere takes root: the root run of the suite tries this")
	}
	var w mountWatch
	w.changed() // opened here, in the test's namespace
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	src, dst := dir+"/src", dir+"/dst"
	for _, d := range []string{src, dst} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan []mountEntry, 1)
	errc := make(chan error, 1)
	goRetired(func() {
		// A thread in a namespace of its own, made before the mount.
		if err := privateMountNamespace(); err != nil {
			errc <- err
			return
		}
		errc <- nil
		<-got // the mount is made meanwhile, in the test's namespace
		b, err := w.table()
		if err != nil {
			errc <- err
			return
		}
		got <- parseMountinfo(string(b))
		errc <- nil
	})
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind %s at %s: %v", src, dst, err)
	}
	t.Cleanup(func() { unix.Unmount(dst, unix.MNT_DETACH) })
	got <- nil
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if m := <-got; !slices.ContainsFunc(m, func(e mountEntry) bool { return e.point == dst }) {
		t.Fatalf("read from a thread in another namespace, the watch's table lacks the bind made in its own at %s", dst)
	}
}

// goRetired runs f on a thread of its own, locked and never given back
// (the runtime retires it when f returns), and never on the process's
// first thread: the runtime cannot retire that one and keeps it, unused,
// in whatever namespace f left it, where /proc/self then looks (as
// ptyrun's forker hands off from it).
func goRetired(f func()) {
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == os.Getpid() {
			done := make(chan struct{})
			go func() {
				defer close(done)
				runtime.LockOSThread()
				f()
			}()
			<-done
			runtime.UnlockOSThread()
			return
		}
		f()
	}()
}

// unreadableMountTable has the program's mount table read from a file
// that is not there until the test ends (then it is read again).
func unreadableMountTable(t *testing.T) {
	forget := func() {
		mountTable.mu.Lock()
		mountTable.read = false
		mountTable.mu.Unlock()
	}
	mountinfoPath = filepath.Join(t.TempDir(), "no-mountinfo")
	forget()
	t.Cleanup(func() {
		mountinfoPath = ""
		forget()
	})
}

// privateMountNamespace gives the calling thread (locked, see goRetired)
// a mount namespace of its own, nothing in it propagating back.
func privateMountNamespace() error {
	if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_FS); err != nil {
		return err
	}
	return unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
}
