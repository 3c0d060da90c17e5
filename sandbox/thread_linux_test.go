package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fakeRulesets stands files named after plans in for rulesets: fdPlan
// tells which plan's "ruleset" an fd is.
func fakeRulesets(t *testing.T, plans ...string) (build func(plan string) func() (int, error), fdPlan func(fd int) string, builds func() int) {
	dir := t.TempDir()
	for _, p := range plans {
		if err := os.WriteFile(filepath.Join(dir, p), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	n := 0
	build = func(plan string) func() (int, error) {
		return func() (int, error) {
			mu.Lock()
			n++
			mu.Unlock()
			return unix.Open(filepath.Join(dir, plan), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		}
	}
	fdPlan = func(fd int) string {
		target, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		if err != nil || filepath.Dir(target) != dir {
			return "(not a ruleset: " + target + ")"
		}
		return filepath.Base(target)
	}
	builds = func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
	return build, fdPlan, builds
}

func isOpen(fd int) bool {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	return err == nil
}

// TestRulesetCache: one ruleset built per plan, each caller given a
// close-on-exec copy of its own; rebuilt once older than the TTL, the
// expired one closed; at most max kept.
func TestRulesetCache(t *testing.T) {
	build, fdPlan, builds := fakeRulesets(t, "A", "B")
	var c rulesetCache
	a1, _ := c.get([]byte("A"), Plan{}, build("A"))
	a2, _ := c.get([]byte("A"), Plan{}, build("A"))
	b1, _ := c.get([]byte("B"), Plan{}, build("B"))
	if a1 == a2 || builds() != 2 || fdPlan(a1) != "A" || fdPlan(a2) != "A" || fdPlan(b1) != "B" {
		t.Fatalf("fds %d %d %d (%s %s %s) after %d builds", a1, a2, b1, fdPlan(a1), fdPlan(a2), fdPlan(b1), builds())
	}
	if flags, err := unix.FcntlInt(uintptr(a2), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Fatalf("a copy is not close-on-exec: %#x %v", flags, err)
	}
	unix.Close(a1)
	unix.Close(a2)
	unix.Close(b1)
	kept := c.entries["A"]
	if !isOpen(kept.fd) {
		t.Fatal("closing the callers' copies closed the cache's")
	}
	kept.built = time.Now().Add(-2 * rulesetTTL)
	c.entries["A"] = kept
	a3, _ := c.get([]byte("A"), Plan{}, build("A"))
	if builds() != 3 || fdPlan(a3) != "A" {
		t.Fatalf("an expired ruleset was reused (%d builds, %s)", builds(), fdPlan(a3))
	}
	unix.Close(a3)
	if c.entries["A"].fd != kept.fd && isOpen(kept.fd) && fdPlan(kept.fd) == "A" {
		t.Fatal("the expired ruleset's fd is still open")
	}
	for i := range rulesetMax + 3 {
		fd, _ := c.get([]byte{byte(i)}, Plan{}, build("A"))
		unix.Close(fd)
	}
	if len(c.entries) > rulesetMax {
		t.Fatalf("%d rulesets kept, max %d", len(c.entries), rulesetMax)
	}
}

// TestRulesetCacheCarvedFolderChanged: a kept ruleset is used again only
// while the folders its plan's layer was carved from have had no entry
// made, removed or renamed: the rules bind files, so a folder moved into
// the unreadable one and another made in its place would be granted
// there by the kept ruleset.
func TestRulesetCacheCarvedFolderChanged(t *testing.T) {
	build, fdPlan, builds := fakeRulesets(t, "A")
	home := t.TempDir()
	plan := Plan{DenyRead: []string{filepath.Join(home, ".ssh")}}
	var c rulesetCache
	get := func() {
		t.Helper()
		fd, err := c.get([]byte("A"), plan, build("A"))
		if err != nil || fdPlan(fd) != "A" {
			t.Fatalf("get: fd %d (%s), %v", fd, fdPlan(fd), err)
		}
		unix.Close(fd)
	}
	get()
	get()
	if builds() != 1 {
		t.Fatalf("%d builds for one plan with nothing changed", builds())
	}
	if err := os.Mkdir(filepath.Join(home, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	get()
	if builds() != 2 {
		t.Fatalf("the ruleset kept was used after an entry was made beside the unreadable path (%d builds)", builds())
	}
	get()
	if builds() != 2 || len(c.entries) != 1 {
		t.Fatalf("the ruleset rebuilt was not kept in the stale one's place (%d builds, %d kept)", builds(), len(c.entries))
	}
}

// TestRulesetCacheConcurrent: with every ruleset expiring at once and
// room for two, concurrent callers each get their own plan's ruleset,
// open until they close it. A cache that handed out its own fd let
// another call's expiry close it before landlock_restrict_self, and the
// number come back as another plan's ruleset.
func TestRulesetCacheConcurrent(t *testing.T) {
	plans := []string{"a", "b", "c", "d"}
	build, fdPlan, _ := fakeRulesets(t, plans...)
	c := rulesetCache{ttl: time.Nanosecond, max: 2}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				plan := plans[(g+i)%len(plans)]
				fd, err := c.get([]byte(plan), Plan{}, build(plan))
				if err != nil {
					t.Error(err)
					return
				}
				got := fdPlan(fd)
				unix.Close(fd)
				if got != plan {
					t.Errorf("plan %s was given fd %d, %s", plan, fd, got)
					return
				}
			}
		})
	}
	wg.Wait()
	if len(c.entries) > 2 {
		t.Fatalf("%d rulesets kept, max 2", len(c.entries))
	}
}

// TestLastPlan: the decoded plan is reused only for the same payload; a
// bad payload is an error and leaves the kept plan as it was.
func TestLastPlan(t *testing.T) {
	a := Plan{Mode: "read-only", WritableRoots: []string{"/a"}}
	b := Plan{Mode: "workspace-write", WritableRoots: []string{"/b"}}
	pa, _ := a.Marshal()
	pb, _ := b.Marshal()
	var c lastPlan
	for _, step := range []struct {
		payload []byte
		root    string
	}{{pa, "/a"}, {pa, "/a"}, {pb, "/b"}, {pa, "/a"}} {
		got, err := c.get(step.payload)
		if err != nil || len(got.WritableRoots) != 1 || got.WritableRoots[0] != step.root {
			t.Fatalf("payload for %s: got %v, %v", step.root, got.WritableRoots, err)
		}
	}
	if _, err := c.get([]byte(`{"Mode":"nonsense"}`)); err == nil {
		t.Fatal("a bad payload was accepted")
	}
	if got, err := c.get(pa); err != nil || got.WritableRoots[0] != "/a" {
		t.Fatalf("after a bad payload: %v, %v", got.WritableRoots, err)
	}
}

// TestRulesetCacheExpiresIdle: rulesets kept for a burst of calls are
// closed once the TTL has passed with no call at all (a server left idle
// held them for good: TestNetworkNoLeaks saw two more descriptors).
func TestRulesetCacheExpiresIdle(t *testing.T) {
	build, _, _ := fakeRulesets(t, "a", "b")
	c := rulesetCache{ttl: 20 * time.Millisecond}
	for _, plan := range []string{"a", "b"} {
		fd, err := c.get([]byte(plan), Plan{}, build(plan))
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(fd)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.mu.Lock()
		n, armed := len(c.entries), c.expiry != nil
		c.mu.Unlock()
		if n == 0 && !armed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d rulesets still kept (expiry armed: %v) long after their TTL with no call", n, armed)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
