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
//	<head>…K tokens truncated…<tail>
//
// where head is about half of the budget and tail the rest, cuts never
// split a UTF-8 sequence, a cut moves to a nearby newline when one lies
// within a small distance (the head never grows past its half, the tail
// keeps its last line whole), and K = ceil(removed bytes / 4). The end of
// the output, where errors are, always survives.
func Truncate(text string, maxTokens int) string {
	return truncateParts(text, "", 0, maxTokens)
}

// truncateParts truncates head+tail, between which dropped bytes were
// already lost (by the session buffer); the marker counts them too.
func truncateParts(head, tail string, dropped int64, maxTokens int) string {
	budget := max(maxTokens, 0) * bytesPerToken
	text := head + tail
	if dropped == 0 && len(text) <= budget {
		return text
	}
	if budget == 0 {
		return fmt.Sprintf("…%d tokens truncated…", tokenCount64(int64(len(text))+dropped))
	}
	lines := strings.Count(text, "\n")
	if !strings.HasSuffix(text, "\n") {
		lines++
	}
	total := fmt.Sprint(lines)
	if dropped > 0 {
		total += " or more"
	}
	var h, t int
	if len(text) <= budget {
		h, t = len(head), len(head)
	} else {
		h, t = cutPoints(text, budget)
	}
	removed := int64(t-h) + dropped
	return fmt.Sprintf("Total output lines: %s\n\n%s…%d tokens truncated…%s", total, text[:h], tokenCount64(removed), text[t:])
}

// cutPoints picks the end of the head and the start of the tail for a
// text longer than budget bytes.
func cutPoints(text string, budget int) (h, t int) {
	headBudget := budget / 2
	tailBudget := budget - headBudget

	// Head: a prefix of at most headBudget bytes, ending at a rune
	// boundary; prefer to end just after a newline when one is close.
	h = runeStart(text, headBudget)
	if nl := strings.LastIndexByte(text[:h], '\n'); nl >= 0 && h-(nl+1) <= snap(headBudget) {
		h = nl + 1
	}
	// Tail: a suffix of at most tailBudget bytes starting at a rune
	// boundary; prefer to start just after a newline when one is close,
	// unless that would lose the last line.
	t = runeStartAfter(text, len(text)-tailBudget)
	if t < h {
		t = h
	}
	if i := strings.IndexByte(text[t:], '\n'); i >= 0 && i+1 <= snap(tailBudget) && t+i+1 < len(text) {
		t += i + 1
	}
	return h, t
}

func tokenCount64(n int64) int64 { return (n + bytesPerToken - 1) / bytesPerToken }

// snap is how far a cut may move to reach a newline: an eighth of its
// budget, at most 256 bytes.
func snap(budget int) int { return min(budget/8, 256) }

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
