package approval

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxSpaces is the longest run of spaces Escape shows as it is; a longer
// one is shown as ␠×N, so that blanks cannot push the rest of a command
// out of sight.
const maxSpaces = 16

// Escape makes s safe to show on a terminal or in a dialog: every control
// character is written as an escape (ESC as \x1b, a newline as \n, the
// C1 controls as \u009b), and so are invalid UTF-8 bytes, the invisible
// format characters that reorder or hide text (bidirectional overrides,
// zero-width characters, line and paragraph separators) and the
// characters that look blank but are not a space (no-break and wide
// spaces, Hangul and braille fillers, variation selectors); a run of more
// than 16 spaces is shown as ␠×N. A command, a justification or a quoted
// line of output can then neither redraw a prompt, nor pass for another
// field of it, nor hide a part of itself. Backslashes are left as they
// are: Escape is for reading, not for decoding.
func Escape(s string) string {
	if strings.IndexFunc(s, needsEscape) < 0 && utf8.ValidString(s) && !strings.Contains(s, strings.Repeat(" ", maxSpaces+1)) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == ' ':
			run := len(s[i:]) - len(strings.TrimLeft(s[i:], " "))
			if run > maxSpaces {
				fmt.Fprintf(&b, "␠×%d", run)
			} else {
				b.WriteString(s[i : i+run])
			}
			n = run
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case needsEscape(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// blank are characters that show as nothing, or as a blank, without
// being a space or a format character: Hangul fillers, the braille
// blank, the combining grapheme joiner, Khmer's invisible vowels and
// Mongolian's variation selectors.
var blank = []rune{'\u115F', '\u1160', '\u3164', '\uFFA0', '\u2800', '\u034F', '\u17B4', '\u17B5', '\u180B', '\u180C', '\u180D', '\u180F'}

// needsEscape: C0 and C1 controls, DEL, format characters (Cf: bidi
// overrides and isolates, zero-width characters), the line and paragraph
// separators, spaces other than ASCII's (Zs), variation selectors and
// the characters of blank.
func needsEscape(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' ||
		r != ' ' && unicode.Is(unicode.Zs, r) || unicode.Is(unicode.Variation_Selector, r) || slices.Contains(blank, r)
}
