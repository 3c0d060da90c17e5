package policy

import (
	"slices"
	"strings"
	"testing"
)

// FuzzParse: any input gives a policy or an error naming the source —
// never a panic, and a parsed policy always has valid values.
func FuzzParse(f *testing.F) {
	f.Add(DefaultTOML())
	f.Add([]byte("[approval]\nmood = \"x\"\n"))
	f.Add([]byte("[[rule]]\npattern = [\"git\", [\"push\", \"fetch\"]]\ndecision = \"prompt\"\n"))
	f.Add([]byte("[sandbox]\nnetwork = \"yes\"\n"))
	f.Add([]byte("[env.set]\nA = \"1\"\n[limits]\nsession_timeout = \"5m\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data, "fuzz.toml")
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.toml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if !slices.Contains([]string{ApprovalUntrusted, ApprovalOnFailure, ApprovalOnRequest, ApprovalNever}, p.Approval.Mode) {
			t.Fatalf("accepted approval mode %q", p.Approval.Mode)
		}
		if !slices.Contains([]string{ModeReadOnly, ModeWorkspaceWrite, ModeDangerFullAccess}, p.Sandbox.Mode) {
			t.Fatalf("accepted sandbox mode %q", p.Sandbox.Mode)
		}
		for _, r := range p.Rules {
			if len(r.Pattern) == 0 {
				t.Fatal("accepted an empty pattern")
			}
		}
	})
}
