package sandbox

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/landlock-lsm/go-landlock/landlock"
)

// TestLandlockRulesAgree: on every golden plan and at every Landlock
// ABI, the rules the helper gives go-landlock and the rules the thread
// sandbox adds to its ruleset grant the same rights on the same paths,
// in the same order (in a mount namespace, the only way the thread
// applies a plan; /dev/null stands in for the session's terminal).
func TestLandlockRulesAgree(t *testing.T) {
	const tty = "/dev/null"
	for _, c := range goldenCases(t) {
		t.Run(c.name, func(t *testing.T) {
			plan, root := compileGolden(t, c)
			for abi := 1; abi <= 11; abi++ {
				cfg := landlockConfig(abi, plan.Network)
				var helper, thread []string
				rules, release, err := landlockRules(plan, cfg, true, []string{tty})
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rules {
					helper = append(helper, openedPath(fmt.Sprint(r)))
				}
				release()
				err = threadRules(plan, tty, uint64(cfg.HandledAccessFS), func(path string, _ int, rights uint64) error {
					thread = append(thread, fmt.Sprintf("REQUIRE %v for paths [%s]", landlock.AccessFSSet(rights), path))
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if plan.Enforced() && len(thread) == 0 {
					t.Fatalf("ABI %d: no rules", abi)
				}
				// Paths that vanished meanwhile (other tests' temporary
				// directories under /tmp) are skipped by the thread
				// builder, which opens each one: compare the others.
				// Other tests' entries of /tmp (carved: the tree's home,
				// in /tmp, has unreadable paths to come) come and go
				// between the two: compare the rest.
				helper, thread = existing(helper, root), existing(thread, root)
				if !slices.Equal(helper, thread) {
					t.Errorf("ABI %d: the helper's rules and the thread's differ:\nhelper:\n%s\nthread:\n%s", abi, lines(helper), lines(thread))
				}
			}
		})
	}
}

// openedPath names the file behind a rule's /proc/self/fd/N path (the
// helper hands go-landlock the descriptors it opened).
func openedPath(rule string) string {
	i := strings.LastIndex(rule, "[/proc/self/fd/")
	if i < 0 {
		return rule
	}
	fdPath := strings.TrimSuffix(rule[i+1:], "]")
	target, err := os.Readlink(fdPath)
	if err != nil {
		return rule
	}
	return rule[:i+1] + target + "]"
}

// existing keeps the rules whose path ("... for paths [P]") still exists.
func existing(rules []string, root string) []string {
	return slices.DeleteFunc(slices.Clone(rules), func(r string) bool {
		i := strings.LastIndex(r, "for paths [")
		if i < 0 {
			return false
		}
		path := strings.TrimSuffix(r[i+len("for paths ["):], "]")
		if within(path, os.TempDir()) && path != root && !within(root, path) && !within(path, root) {
			return true // another test's, which may come and go
		}
		_, err := os.Stat(path)
		return err != nil
	})
}

func lines(s []string) string {
	out := ""
	for _, l := range s {
		out += "  " + l + "\n"
	}
	return out
}

// TestGrantRightsMatchGoLandlock: with every right handled, the rights
// of each kind of grant are those of go-landlock's canned rules, which
// the helper used: RODirs, ROFiles, RWDirs with refer, RWFiles, and for
// terminals the same with ioctls. A directory grant on what is now a
// file gets the file rights.
func TestGrantRightsMatchGoLandlock(t *testing.T) {
	const p = "/x"
	handled := uint64(landlockConfig(99, false).HandledAccessFS)
	for _, c := range []struct {
		access Access
		dir    bool // in the plan and now
		want   landlock.FSRule
	}{
		{AccessRead, true, landlock.RODirs(p)},
		{AccessRead, false, landlock.ROFiles(p)},
		{AccessReadWrite, true, landlock.RWDirs(p).WithRefer()},
		{AccessReadWrite, false, landlock.RWFiles(p)},
		{AccessTerminal, true, landlock.RWDirs(p).WithRefer().WithIoctlDev()},
		{AccessTerminal, false, landlock.RWFiles(p).WithIoctlDev()},
	} {
		got := landlock.PathAccess(landlock.AccessFSSet(grantRights(Grant{Path: p, Dir: c.dir, Access: c.access}, c.dir, handled)), p)
		if got.String() != c.want.String() {
			t.Errorf("%s dir=%v: %v, go-landlock %v", c.access, c.dir, got, c.want)
		}
		if c.dir {
			// Planned as a directory, a file now.
			got := grantRights(Grant{Path: p, Dir: true, Access: c.access}, false, handled)
			if want := grantRights(Grant{Path: p, Access: c.access}, false, handled); got != want {
				t.Errorf("%s on a file planned as a directory: %v, want %v", c.access, landlock.AccessFSSet(got), landlock.AccessFSSet(want))
			}
		}
	}
}
