package unifiedexec

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// cleanString runs in through a cleaner of the given width, in one write
// or byte by byte (so split sequences and split characters are covered),
// and returns all it handed out.
func cleanString(in string, width int, byteByByte bool) string {
	var out bytes.Buffer
	cl := cleaner{out: func(b []byte) { out.Write(b) }, width: width}
	if byteByByte {
		for i := 0; i < len(in); i++ {
			cl.Write([]byte{in[i]})
		}
	} else {
		cl.Write([]byte(in))
	}
	cl.flushPartial()
	return out.String()
}

// TestCleanerMovementBounded: a sequence that moves the cursor cannot pad
// a line past the terminal's width, whatever its parameter (the cleaner
// padded `\033[99999999999999999999C` until memory ran out).
func TestCleanerMovementBounded(t *testing.T) {
	pad := func(n int) string { return strings.Repeat(" ", n) }
	cases := []struct {
		name, in string
		width    int
		want     string
	}{
		{"small forward", "a\x1b[5Cb\n", 0, "a" + pad(5) + "b\n"},
		{"column", "ab\x1b[10Gc\n", 0, "ab" + pad(7) + "c\n"},
		{"back", "abcd\x1b[2DX\n", 0, "abXd\n"},
		{"forward million", "\x1b[1000000Cx\n", 0, pad(79) + "x\n"},
		{"column million", "\x1b[1000000Gx\n", 0, pad(79) + "x\n"},
		{"forward 1e8", "\x1b[100000000Cx\n", 0, pad(79) + "x\n"},
		{"forward 1e20", "\x1b[99999999999999999999Cx\n", 0, pad(79) + "x\n"},
		{"forward 1e20 after text", "ab\x1b[99999999999999999999Cx\n", 0, "ab" + pad(77) + "x\n"},
		{"back 1e20", "ab\x1b[99999999999999999999DX\n", 0, "Xb\n"},
		{"column 1e20", "\x1b[99999999999999999999Gx\n", 0, pad(79) + "x\n"},
		{"width 20", "\x1b[500Cx\n", 20, pad(19) + "x\n"},
		{"width 1000 cap", "\x1b[5000Cx\n", 60000, pad(maxWidth-1) + "x\n"},
		{"no pad past long text", strings.Repeat("y", 100) + "\r\x1b[500Cx\n", 0, strings.Repeat("y", 100) + "x\n"},
		{"move within long text", strings.Repeat("y", 100) + "\r\x1b[90CX\n", 0, strings.Repeat("y", 90) + "X" + strings.Repeat("y", 9) + "\n"},
		{"column position", "\x1b[99999`x\n", 0, pad(79) + "x\n"},
		{"column relative", "\x1b[99999ax\n", 0, pad(79) + "x\n"},
		{"second parameter ignored", "\x1b[3;99999999999Cx\n", 0, pad(3) + "x\n"},
		{"repeat ignored", "a\x1b[99999999999999999999b\n", 0, "a\n"},
		{"insert ignored", "a\x1b[99999999999999999999@\n", 0, "a\n"},
		{"erase chars ignored", "a\x1b[99999999999999999999X\n", 0, "a\n"},
		{"tab forward ignored", "a\x1b[99999999999999999999I\n", 0, "a\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, split := range []bool{false, true} {
				if got := cleanString(c.in, c.width, split); got != c.want {
					t.Fatalf("%q (split %v): got %d bytes %q, want %q", c.in, split, len(got), trim(got), c.want)
				}
			}
		})
	}
}

// TestCleanerPositionReport: the cursor position report follows the
// bounded column.
func TestCleanerPositionReport(t *testing.T) {
	var reply bytes.Buffer
	cl := cleaner{out: func([]byte) {}, reply: func(b []byte) { reply.Write(b) }}
	cl.Write([]byte("\x1b[99999999999999999999C\x1b[6n"))
	if reply.String() != "\x1b[1;80R" {
		t.Fatalf("reply %q", reply.String())
	}
}

// TestCleanerC1: 8-bit controls, raw or encoded as U+0080–U+009F, are
// stripped with the sequences they start, as their 7-bit forms are.
func TestCleanerC1(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"raw CSI", "\x9b1;31mred\x9b0m\n", "red\n"},
		{"encoded CSI", "\xc2\x9b1;31mred\xc2\x9b0m\n", "red\n"},
		{"raw CSI forward bounded", "\x9b99999999999999999999Cx\n", strings.Repeat(" ", 79) + "x\n"},
		{"encoded CSI erase line", "progress 1\r\xc2\x9bKprogress 2\n", "progress 2\n"},
		{"raw OSC BEL", "\x9d0;title\x07text\n", "text\n"},
		{"raw OSC raw ST", "\x9d0;title\x9ctext\n", "text\n"},
		{"encoded OSC encoded ST", "\xc2\x9d0;title\xc2\x9ctext\n", "text\n"},
		{"encoded OSC 7-bit ST", "\xc2\x9d8;;http://x\x1b\\link\xc2\x9d8;;\xc2\x9c\n", "link\n"},
		{"7-bit OSC encoded ST", "\x1b]0;title\xc2\x9ctext\n", "text\n"},
		{"raw DCS", "\x90qpayload\x9cok\n", "ok\n"},
		{"encoded DCS", "\xc2\x90$qm\xc2\x9cok\n", "ok\n"},
		{"encoded SOS", "\xc2\x98hidden\xc2\x9cok\n", "ok\n"},
		{"encoded PM", "\xc2\x9ehidden\xc2\x9cok\n", "ok\n"},
		{"encoded APC", "\xc2\x9fhidden\xc2\x9cok\n", "ok\n"},
		{"raw APC", "\x9fhidden\x07ok\n", "ok\n"},
		{"lone controls", "a\x85b\xc2\x85c\x84d\xc2\x8ee\x9cf\xc2\x9cg\n", "abcdefg\n"},
		{"OSC title in UTF-8", "\x1b]0;Ŝ€ğ\x07ok\n", "ok\n"},
		{"encoded OSC title in UTF-8", "\xc2\x9d0;Ŝ€ğ\xc2\x9cok\n", "ok\n"},
		// A raw byte may be a letter of a legacy code page (0x9e is ž in
		// windows-1250): what it starts ends at the line's end at the
		// latest, so the lines after it survive.
		{"raw string ends at line end", "a\x9eb\nnext\n", "a\nnext\n"},
		{"raw CSI ends at line end", "a\x9b1\nnext\n", "a\nnext\n"},
		{"encoded string spans lines", "a\xc2\x9db\nc\x07d\n", "ad\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, split := range []bool{false, true} {
				if got := cleanString(c.in, 0, split); got != c.want {
					t.Fatalf("%q (split %v): got %q, want %q", c.in, split, got, c.want)
				}
			}
		})
	}
}

// TestCleanerUTF8Kept: text whose characters have continuation bytes in
// 0x80–0x9F is not mistaken for 8-bit controls, also when a character is
// split between writes; bytes that are not UTF-8 and not controls are
// kept for toValid to replace.
func TestCleanerUTF8Kept(t *testing.T) {
	for _, in := range []string{
		"€ 价格 ✛ Ŝ ğ Ā Ÿ 𝄞 日本語 \u00a0 \u00ff\n",
		"a\xffb\xfe\xc0\n",
		"prompt € ",
	} {
		for _, split := range []bool{false, true} {
			if got := cleanString(in, 0, split); got != in {
				t.Errorf("%q (split %v): got %q", in, split, got)
			}
		}
	}
	for in, want := range map[string]string{
		"\x1b[1m€\x1b[0m ✛\r€\n": "€ ✛\n",
		"x\xe2\x82\xac\x1b":      "x€", // a character right before a split sequence
		// A cut character: its lead byte is kept (toValid makes it
		// U+FFFD); a continuation byte in 0x80–0x9F standing alone is a
		// control.
		"\xe2\x82\n": "\xe2\n",
	} {
		for _, split := range []bool{false, true} {
			if got := cleanString(in, 0, split); got != want {
				t.Errorf("%q (split %v): got %q, want %q", in, split, got, want)
			}
		}
	}
}

// TestCleanerRedrawNoC1: overwriting part of a character cannot splice
// bytes into an 8-bit control.
func TestCleanerRedrawNoC1(t *testing.T) {
	// "a✛" is 61 e2 9c 9b; writing c2 over the 9c would leave c2 9b, an
	// encoded CSI, and a bare 9b after it.
	for _, in := range []string{
		"a✛\r\x1b[3G\xc2\r\n",
		"a✛\r\x1b[3Gx\n",
		"a✛\r\x1b[3G\xc2",
	} {
		for _, split := range []bool{false, true} {
			got := cleanString(in, 0, split)
			if bad := firstUnsafe([]byte(got)); bad >= 0 {
				t.Errorf("%q (split %v): got %q, unsafe at %d", in, split, got, bad)
			}
		}
	}
}

// firstUnsafe is the offset of the first control in b that a reader's
// terminal would act on (ESC, a C0 control other than newline and tab,
// DEL, an 8-bit control raw or encoded), or -1.
func firstUnsafe(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r < 0x20 && r != '\n' && r != '\t', r == 0x7f:
			return i
		case r >= 0x80 && r <= 0x9f:
			return i
		case r == utf8.RuneError && n == 1 && b[i] >= 0x80 && b[i] <= 0x9f:
			return i
		}
		i += n
	}
	return -1
}

func trim(s string) string {
	if len(s) > 200 {
		return s[:100] + "…" + s[len(s)-100:]
	}
	return s
}

// FuzzCleaner: whatever a program prints, the cleaner hands out at most
// (1 + width/3) bytes per byte received plus one line of padding (each
// line gains at most width columns of padding, and a padded line costs at
// least three bytes: an 8-bit CSI, its final byte and a line end), and
// nothing a terminal would act on.
func FuzzCleaner(f *testing.F) {
	f.Add([]byte("\x1b[99999999999999999999Cx\n"), uint16(0), uint8(0))
	f.Add([]byte("\x9b1000G\n\x9b1000G\n"), uint16(1000), uint8(1))
	f.Add([]byte("a✛\r\x1b[3G\xc2\r\n€\xc2\x9d0;t\xc2\x9c\x90q\x9c"), uint16(80), uint8(2))
	f.Add([]byte("10%\r50%\r\x1b[K100%\n\x1b]8;;x\x1b\\l\x1b[6n\xe2\x82"), uint16(20), uint8(3))
	f.Add([]byte("a\x1b[?1049hscreen\x1b[?1049lb\n\x1b[?1h\x1b[2Jtop\x1b[?1lc\n"), uint16(81), uint8(4))
	f.Fuzz(func(t *testing.T, in []byte, width uint16, chunk uint8) {
		var out []byte
		cl := cleaner{out: func(b []byte) { out = append(out, b...) }, width: int(width), reply: func([]byte) {}}
		if width%2 == 1 {
			// With full-screen programs followed: what goes to the screen
			// is what does not go into lines.
			var screened int
			cl.screen = func(b []byte) { screened += len(b) }
			cl.altScreen = func(bool) bool { return true }
			defer func() {
				if screened > len(in) {
					t.Fatalf("%d bytes to the screen of %d in", screened, len(in))
				}
			}()
		}
		step := int(chunk%7) + 1
		if chunk >= 128 {
			step = len(in) + 1
		}
		for i := 0; i < len(in); i += step {
			cl.Write(in[i:min(i+step, len(in))])
		}
		cl.flushPartial()
		w := cl.columns()
		if limit := (1+w/3)*len(in) + w; len(out) > limit {
			t.Fatalf("%d bytes in, %d out (limit %d at width %d)", len(in), len(out), limit, w)
		}
		if i := firstUnsafe(out); i >= 0 {
			t.Fatalf("control at %d of %q", i, trim(string(out)))
		}
	})
}

// BenchmarkCleaner: the cleaner on log lines (ASCII, and text in several
// scripts) and on a redrawn progress line with colours.
func BenchmarkCleaner(b *testing.B) {
	for _, c := range []struct{ name, line string }{
		{"ascii", "2024-05-01T12:00:00Z INFO server: request handled in 12ms path=/api/v1/items status=200\n"},
		{"utf8", "журнал: запрос обработан за 12 мс — 日本語のログ行です € ✛ Ŝ ğ résumé naïve\n"},
		{"progress", "\r\x1b[32m[=====>     ]\x1b[0m 52% 1.2 MB/s eta 3s"},
	} {
		chunk := []byte(strings.Repeat(c.line, 4096/len(c.line)+1)[:4096])
		b.Run(c.name, func(b *testing.B) {
			cl := cleaner{out: func([]byte) {}}
			b.SetBytes(int64(len(chunk)))
			for b.Loop() {
				cl.Write(chunk)
			}
		})
	}
}

// TestCleanerRedrawSame: a partial line handed out, then redrawn with
// the same start (a prompt reprinted by readline, after a carriage return
// or an erase), is continued, not handed out again; a redraw that changes
// it is handed out whole.
func TestCleanerRedrawSame(t *testing.T) {
	for _, c := range []struct{ first, rest, want string }{
		{"Name: ", "bob\r\n", "Name: bob\n"},
		{"Name: ", "\rName: bob\r\n", "Name: bob\n"},
		{"Name: ", "\r\x1b[KName: bob\r\n", "Name: bob\n"},
		{"Name: b", "\r\x1b[2KName: bob\r\n", "Name: bob\n"},
		{"50%", "\r100%\n", "50%100%\n"},
		{"Name: bob", "\b\b\b   \b\b\bamy\n", "Name: bobName: amy\n"},
	} {
		var out bytes.Buffer
		cl := cleaner{out: func(b []byte) { out.Write(b) }}
		cl.Write([]byte(c.first))
		cl.flushPartial()
		cl.Write([]byte(c.rest))
		cl.flushPartial()
		if out.String() != c.want {
			t.Errorf("%q then %q: got %q, want %q", c.first, c.rest, out.String(), c.want)
		}
	}
}

// TestCleanerScreenSwitch: what a full-screen program prints between
// taking the screen and giving it back goes to the screen, not into lines,
// whether it comes in one write or byte by byte; the stream resumes after.
func TestCleanerScreenSwitch(t *testing.T) {
	for _, c := range []struct {
		name, in      string
		lines, screen string
		events        string
	}{
		{"alternate screen", "before\n\x1b[?1049hVIM\x1b[Hx\x1b[?1049lafter\n", "before\nafter\n", "VIM\x1b[Hx\x1b[?1049l", "+-"},
		{"again: a fresh screen", "\x1b[?1049hone\x1b[?1049htwo\x1b[?1049l", "", "one\x1b[?1049htwo\x1b[?1049l", "++-"},
		{"clear in application cursor-key mode (top)", "\x1b[?1h\x1b=\x1b[H\x1b[2Jtop - 1\x1b[?1l\x1b>$ ", "$ ", "top - 1\x1b[?1l", "+-"},
		{"clear without it (clear) is a stream", "a\n\x1b[H\x1b[2Jb\n", "a\nb\n", "", ""},
		{"other private modes are not the screen", "\x1b[?25l\x1b[?2004hx\n", "x\n", "", ""},
	} {
		for _, byteByByte := range []bool{false, true} {
			var lines, scr, events strings.Builder
			cl := cleaner{out: func(b []byte) { lines.Write(b) }}
			cl.screen = func(b []byte) { scr.Write(b) }
			cl.altScreen = func(on bool) bool {
				if on {
					events.WriteByte('+')
				} else {
					events.WriteByte('-')
				}
				return true
			}
			if byteByByte {
				for i := 0; i < len(c.in); i++ {
					cl.Write([]byte{c.in[i]})
				}
			} else {
				cl.Write([]byte(c.in))
			}
			cl.flushPartial()
			if lines.String() != c.lines || scr.String() != c.screen || events.String() != c.events {
				t.Errorf("%s (byte by byte %v): lines %q screen %q events %q; want %q %q %q", c.name, byteByByte, lines.String(), scr.String(), events.String(), c.lines, c.screen, c.events)
			}
		}
	}
}
