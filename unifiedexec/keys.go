package unifiedexec

import (
	"fmt"
	"strings"
)

// EncodeKeys turns tmux-style key names into the bytes an xterm sends:
// "Enter", "Tab", "Escape", "Space", "BSpace", "Up", "Down", "Left",
// "Right", "Home", "End", "PageUp"/"PPage", "PageDown"/"NPage", "IC"/"Insert",
// "DC"/"Delete", "F1"…"F12", "BTab"/"S-Tab", "C-x" (control), "M-x"
// (meta: ESC then x), combinations such as "C-M-a", and single characters.
func EncodeKeys(keys []string) ([]byte, error) {
	var out []byte
	for _, k := range keys {
		b, err := encodeKey(k)
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return out, nil
}

var namedKeys = map[string]string{
	"enter": "\r", "tab": "\t", "escape": "\x1b", "esc": "\x1b", "space": " ",
	"bspace": "\x7f", "backspace": "\x7f",
	"up": "\x1b[A", "down": "\x1b[B", "right": "\x1b[C", "left": "\x1b[D",
	"home": "\x1b[H", "end": "\x1b[F",
	"pageup": "\x1b[5~", "ppage": "\x1b[5~", "pgup": "\x1b[5~",
	"pagedown": "\x1b[6~", "npage": "\x1b[6~", "pgdn": "\x1b[6~",
	"ic": "\x1b[2~", "insert": "\x1b[2~", "dc": "\x1b[3~", "delete": "\x1b[3~",
	"btab": "\x1b[Z", "s-tab": "\x1b[Z",
	"f1": "\x1bOP", "f2": "\x1bOQ", "f3": "\x1bOR", "f4": "\x1bOS",
	"f5": "\x1b[15~", "f6": "\x1b[17~", "f7": "\x1b[18~", "f8": "\x1b[19~",
	"f9": "\x1b[20~", "f10": "\x1b[21~", "f11": "\x1b[23~", "f12": "\x1b[24~",
}

func encodeKey(k string) ([]byte, error) {
	if k == "" {
		return nil, fmt.Errorf("keys: empty key name")
	}
	if s, ok := namedKeys[strings.ToLower(k)]; ok {
		return []byte(s), nil
	}
	meta, ctrl := false, false
	rest := k
	for len(rest) > 2 && rest[1] == '-' {
		switch rest[0] {
		case 'C', 'c':
			ctrl = true
		case 'M', 'm':
			meta = true
		default:
			return nil, unknownKey(k)
		}
		rest = rest[2:]
	}
	var b []byte
	if s, ok := namedKeys[strings.ToLower(rest)]; ok && len(rest) > 1 {
		if ctrl {
			return nil, fmt.Errorf("keys: %q: control combined with a named key is not supported", k)
		}
		b = []byte(s)
	} else if len([]rune(rest)) == 1 {
		b = []byte(rest)
		if ctrl {
			c := rest[0]
			switch {
			case c >= 'a' && c <= 'z':
				b = []byte{c - 'a' + 1}
			case c >= '@' && c <= '_':
				b = []byte{c - '@'}
			case c == '?':
				b = []byte{0x7f}
			case c == ' ':
				b = []byte{0}
			default:
				return nil, unknownKey(k)
			}
		}
	} else {
		return nil, unknownKey(k)
	}
	if meta {
		b = append([]byte{0x1b}, b...)
	}
	return b, nil
}

func unknownKey(k string) error {
	return fmt.Errorf("keys: unknown key %q (use tmux names such as Enter, C-c, M-x, Up, F5, PageUp, S-Tab, or a single character)", k)
}

// Bracketed-paste markers.
const (
	pasteStart = "\x1b[200~"
	pasteEnd   = "\x1b[201~"
)
