package unifiedexec

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// bytesPerToken is the unified-exec estimate: a token is about 4 bytes.
const bytesPerToken = 4

// tokenCount is ceil(n / 4).
func tokenCount(n int) int { return (n + bytesPerToken - 1) / bytesPerToken }

// Truncate fits text into maxTokens×4 bytes. Text that fits is returned
// unchanged. Otherwise the result is
//
//	Total output lines: N
//
//	<head>
//	…K tokens truncated…
//	<tail>
//
// where head is about half of the budget and tail the rest, the marker
// stands on a line of its own, cuts never split a UTF-8 sequence, a cut
// moves to a line end when one lies within reach (half of its side's
// budget; the tail keeps its last line whole), and K = ceil(removed
// bytes / 4). The end of the output, where errors are, always survives.
// A budget of 0 gives the marker alone.
func Truncate(text string, maxTokens int) string {
	return truncateParts(text, "", 0, -1, maxTokens)
}

// truncateParts truncates head+tail, between which dropped bytes were
// already lost (by the session buffer); the marker counts them too. lines
// is the number of lines of the whole output, dropped ones included (< 0:
// count them in head+tail, which then must be all of it).
func truncateParts(head, tail string, dropped, lines int64, maxTokens int) string {
	budget := max(maxTokens, 0) * bytesPerToken
	text := head + tail
	if dropped == 0 && len(text) <= budget {
		return text
	}
	if budget == 0 {
		return fmt.Sprintf("…%d tokens truncated…", tokenCount64(int64(len(text))+dropped))
	}
	if lines < 0 {
		lines = int64(strings.Count(text, "\n"))
		if text != "" && !strings.HasSuffix(text, "\n") {
			lines++
		}
	}
	headBudget := budget / 2
	tailBudget := budget - headBudget
	// Where the cuts may go at most: within the budget, or where the
	// buffer already dropped the middle.
	hmax, tmin := headBudget, len(text)-tailBudget
	if len(text) <= budget {
		hmax, tmin = len(head), len(head)
	}
	h, t := cutPoints(text, hmax, tmin, headBudget, tailBudget)
	removed := int64(t-h) + dropped
	var b strings.Builder
	b.Grow(h + len(text) - t + 64)
	fmt.Fprintf(&b, "Total output lines: %d\n\n", lines)
	b.WriteString(text[:h])
	if h > 0 && text[h-1] != '\n' {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "…%d tokens truncated…\n", tokenCount64(removed))
	b.WriteString(text[t:])
	return b.String()
}

// cutPoints picks the end of the head (at most hmax) and the start of the
// tail (at least tmin). Each moves to a line end when one is within reach
// (half its side's budget), the tail only if a line remains after it.
func cutPoints(text string, hmax, tmin, headBudget, tailBudget int) (h, t int) {
	h = runeStart(text, max(hmax, 0))
	if nl := strings.LastIndexByte(text[:h], '\n'); nl >= 0 && h-(nl+1) <= reach(headBudget) {
		h = nl + 1
	}
	t = runeStartAfter(text, max(tmin, h))
	if t > 0 && text[t-1] != '\n' {
		if i := strings.IndexByte(text[t:], '\n'); i >= 0 && i+1 <= reach(tailBudget) && t+i+1 < len(text) {
			t += i + 1
		}
	}
	return h, t
}

// reach is how far a cut may move to reach a line end: half its budget.
func reach(budget int) int { return budget / 2 }

func tokenCount64(n int64) int64 { return (n + bytesPerToken - 1) / bytesPerToken }

// runeStart returns the largest i ≤ n that starts a rune (or len(s)).
func runeStart(s string, n int) int {
	if n >= len(s) {
		return len(s)
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

// runeStartAfter returns the smallest i ≥ n that starts a rune.
func runeStartAfter(s string, n int) int {
	if n <= 0 {
		return 0
	}
	for n < len(s) && !utf8.RuneStart(s[n]) {
		n++
	}
	return n
}
