package unifiedexec

import "strings"

// ForcedEnv are the variables every command gets, whatever the policy:
// no colors, no pagers, UTF-8. TERM depends on the terminal.
var ForcedEnv = []string{
	"NO_COLOR=1", "PAGER=cat", "GIT_PAGER=cat", "GH_PAGER=cat",
	"LANG=C.UTF-8", "LC_ALL=C.UTF-8", "COLORTERM=",
}

// BuildEnv returns base with the forced variables set on top, and TERM:
// xterm-256color in a terminal (TUIs need a real type), dumb with pipes.
func BuildEnv(base []string, tty bool) []string {
	term := "TERM=dumb"
	if tty {
		term = "TERM=xterm-256color"
	}
	forced := append(append([]string(nil), ForcedEnv...), term)
	skip := map[string]bool{}
	for _, kv := range forced {
		k, _, _ := strings.Cut(kv, "=")
		skip[k] = true
	}
	out := make([]string, 0, len(base)+len(forced))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if !skip[k] {
			out = append(out, kv)
		}
	}
	return append(out, forced...)
}
