package orchestrator

import (
	"strings"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/internal/testfs"
)

// TestSecretUnlockedBetweenCalls: a home encrypted with fscrypt, locked
// during the calls that listed it (its names were ciphertext) and
// unlocked between two calls — its status unchanged — has its secrets
// unreadable from the next call.
func TestSecretUnlockedBetweenCalls(t *testing.T) {
	if !testfs.InOwnMountNS(t) {
		return // run in a mount namespace of its own (see TestListingRemountedAfterOfflineEdit)
	}
	requireSandbox(t)
	home, secret, unlock := testfs.LockedHome(t, ".aws/credentials", "SECRET-unlocked\n")
	t.Setenv("HOME", home)
	call := sandboxedCalls(t)
	call("true")
	time.Sleep(2100 * time.Millisecond) // settled, on a file system of whole seconds too
	call("true")
	call("true")
	unlock()
	if out := call("cat " + secret); strings.Contains(out, "SECRET") {
		t.Fatalf("the home, unlocked after the last call, gave its secret to the next: %q", out)
	}
}
