package approval

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape makes s safe to show on a terminal or in a dialog: every control
// character is written as an escape (ESC as \x1b, a newline as \n, the
// C1 controls as \u009b), and so are invalid UTF-8 bytes and the
// invisible format characters that reorder or hide text (bidirectional
// overrides, zero-width characters, line and paragraph separators). A
// command, a justification or a quoted line of output can then neither
// redraw a prompt nor pass for another field of it. Backslashes are left
// as they are: Escape is for reading, not for decoding.
func Escape(s string) string {
	if strings.IndexFunc(s, needsEscape) < 0 && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
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

// needsEscape: C0 and C1 controls, DEL, format characters (Cf: bidi
// overrides and isolates, zero-width characters) and the line and
// paragraph separators.
func needsEscape(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}
