package unifiedexec

import (
	"slices"
	"strings"
)

// MergeEnv returns base with the variables of extra (NAME=value) set,
// replacing those of the same name; base is not modified.
func MergeEnv(base, extra []string) []string {
	if len(extra) == 0 {
		return base
	}
	names := map[string]bool{}
	for _, kv := range extra {
		k, _, _ := strings.Cut(kv, "=")
		names[k] = true
	}
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		if k, _, _ := strings.Cut(kv, "="); !names[k] {
			out = append(out, kv)
		}
	}
	return append(out, slices.Clone(extra)...)
}
