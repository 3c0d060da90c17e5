package sandbox

import (
	"strings"
	"testing"
)

// FuzzDetectDenial: never a denial when unsandboxed or successful; never
// one for output that has no refusal message in it (paths naming
// "sandbox" or "landlock" included); always a reason when it says yes.
func FuzzDetectDenial(f *testing.F) {
	f.Add(true, 1, "touch: cannot touch '/etc/x': Permission denied\n")
	f.Add(true, 2, "/home/u/sandbox-project/x.go:3: undefined: foo\n")
	f.Add(true, 159, "")
	f.Add(false, 1, "Operation not permitted\n")
	f.Fuzz(func(t *testing.T, sandboxed bool, code int, out string) {
		denied, why := DetectDenial(sandboxed, code, out)
		if denied && (!sandboxed || code == 0) {
			t.Fatalf("denial for sandboxed=%v code=%d", sandboxed, code)
		}
		if denied && why == "" {
			t.Fatal("a denial without a reason")
		}
		lower := strings.ToLower(out)
		hasMessage := strings.Contains(lower, "permission denied") || strings.Contains(lower, "operation not permitted") ||
			strings.Contains(lower, "read-only file system") || strings.Contains(lower, "bad system call") || strings.Contains(lower, "invalid cross-device link") ||
			strings.Contains(lower, "unified-exec") || strings.Contains(lower, "seccomp") || strings.Contains(lower, "landlock")
		if denied && code != 159 && !hasMessage {
			t.Fatalf("denial with no refusal message in %q (%s)", out, why)
		}
	})
}
