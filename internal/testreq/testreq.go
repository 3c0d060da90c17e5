// Package testreq says which kernel features the test suite must find
// here when UNIFIED_EXEC_REQUIRE_SANDBOX=1 turns skips into failures.
package testreq

import (
	"os"
)

// Env is the variable that turns skips for missing features into failures.
const Env = "UNIFIED_EXEC_REQUIRE_SANDBOX"

// Required reports whether missing sandbox features fail tests.
func Required() bool { return os.Getenv(Env) == "1" }

// ProcessLimitRequired reports whether a missing process limit fails
// tests: under [Required], as root (who can always make a pids cgroup),
// and as an ordinary user only where a cgroup v2 subtree is delegated to
// them (their own cgroup directory is theirs, as systemd's user slice
// gives). An ordinary user on cgroup v1, or without delegation, has no
// process limit to test.
func ProcessLimitRequired() bool {
	if !Required() {
		return false
	}
	return os.Getuid() == 0 || delegatedCgroup()
}
