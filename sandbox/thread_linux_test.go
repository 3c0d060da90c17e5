package sandbox

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRulesetCache: one ruleset per plan, rebuilt once it is older than
// the TTL, and the expired one closed.
func TestRulesetCache(t *testing.T) {
	c := rulesetCache{entries: map[string]cachedRuleset{}}
	builds := 0
	build := func() (int, error) {
		builds++
		return unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	a1, _ := c.get([]byte("plan A"), build)
	a2, _ := c.get([]byte("plan A"), build)
	b1, _ := c.get([]byte("plan B"), build)
	if a1 != a2 || a1 == b1 || builds != 2 {
		t.Fatalf("fds %d %d %d after %d builds", a1, a2, b1, builds)
	}
	e := c.entries["plan A"]
	e.built = time.Now().Add(-2 * rulesetTTL)
	c.entries["plan A"] = e
	a3, _ := c.get([]byte("plan A"), build)
	if builds != 3 {
		t.Fatalf("an expired ruleset was reused (%d builds)", builds)
	}
	if a3 != a1 {
		// The expired fd was closed first, so its number is free again;
		// either way it must not be open as the old one.
		if _, err := unix.FcntlInt(uintptr(a1), unix.F_GETFD, 0); err == nil {
			t.Fatal("the expired ruleset's fd is still open")
		}
	}
	for i := 0; i < rulesetMax+3; i++ {
		c.get([]byte{byte(i)}, build)
	}
	if len(c.entries) > rulesetMax {
		t.Fatalf("%d rulesets kept, max %d", len(c.entries), rulesetMax)
	}
}
