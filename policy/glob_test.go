package policy

import (
	"math/rand/v2"
	"path"
	"testing"
)

// TestGlobMatchIsPathMatch: the fast matcher of environment globs says
// what path.Match says, for the default patterns and for random ones
// (of *, ?, letters and /) against random names.
func TestGlobMatchIsPathMatch(t *testing.T) {
	patterns := append([]string{"", "*", "**", "A*", "*A", "*A*B*", "A**B", "[A-Z]*", "*_PAT"}, Default().Env.Exclude...)
	names := []string{"", "A", "AB", "BA", "MY_KEY", "KEYRING", "GH_PAT", "PATH", "A/B", "XAUTHORITY", "AXXB", "AB_B"}
	r := rand.New(rand.NewPCG(1, 2))
	word := func(alphabet string, n int) string {
		b := make([]byte, r.IntN(n+1))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 2000 {
		patterns = append(patterns, word("*AB_?/", 6))
		names = append(names, word("AB_/", 6))
	}
	for _, p := range patterns {
		for _, n := range names[:40] {
			if want, _ := path.Match(p, n); newEnvGlob(p).match(n) != want {
				t.Fatalf("newEnvGlob(%q).match(%q) = %v, path.Match says %v", p, n, !want, want)
			}
		}
	}
	for i, n := range names {
		p := patterns[i%len(patterns)]
		if want, _ := path.Match(p, n); newEnvGlob(p).match(n) != want {
			t.Fatalf("newEnvGlob(%q).match(%q) = %v, path.Match says %v", p, n, !want, want)
		}
	}
}
