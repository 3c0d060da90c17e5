package unifiedexec

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// cleaner turns a terminal byte stream into what a reader of the screen
// would see, line by line: escape sequences (CSI, OSC, DCS, two-byte ESC
// sequences) are dropped, a carriage return restarts the line so redraws
// like "10%\r50%\r100%" collapse to what the line finally shows, and a
// backspace steps back. Terminal queries (cursor position, status, device
// attributes) are answered through reply so programs waiting for an answer
// do not hang. Not safe for concurrent use.
//
// What it hands out holds no control a terminal would act on: no ESC, no
// C0 control but newline and tab, no 8-bit (C1) control. An 8-bit control
// is U+0080–U+009F encoded in UTF-8, or a byte 0x80–0x9F that is not part
// of a UTF-8 character; either starts what its 7-bit form (ESC and the
// byte less 0x40) starts, so 0x9b is CSI, 0x9d OSC, 0x90 DCS and 0x9c ST.
// A raw byte may as well be a letter of a legacy code page (0x9e is ž in
// windows-1250), so what it starts ends at the line's end at the latest.
//
// Output is bounded by input: the cursor moves within the line and the
// terminal's width, so a line gains at most width columns of padding, and
// sequences that repeat, insert or erase characters are dropped.
type cleaner struct {
	// out receives completed lines (with their "\n").
	out func([]byte)
	// reply, if set, answers terminal queries.
	reply func([]byte)
	// width is the terminal's width in columns (0: defaultWidth; at most
	// maxWidth).
	width int
	// altScreen, if set, follows a full-screen program: one on the
	// alternate screen (modes 47, 1047, 1049), or one that cleared the
	// whole screen while in application cursor-key mode (DECCKM, as top
	// does: curses without the alternate screen). It is called with true
	// when the program takes the screen (again: a fresh screen) and false
	// when it gives it back (leaves the alternate screen; resets DECCKM
	// after a clear); in between, what the program prints goes to
	// screen, not into lines, and the cleaner only looks for the way out
	// (and answers nothing: the screen's emulator does).
	altScreen func(on bool) bool // reports whether a screen is kept
	screen    func([]byte)
	alt       bool
	altEvent  altEvent // a change seen while on the screen
	// cleared: the screen was taken by a clear in application cursor-key
	// mode, not the alternate screen; appKeys: that mode is on.
	cleared, appKeys bool

	state  escState
	params []byte // parameters of the CSI being parsed
	// raw8 is set while the sequence being parsed was started by a raw
	// 8-bit byte: a line end ends it.
	raw8 bool
	// strLead and strFollow follow UTF-8 in a string (OSC, DCS...): the
	// lead byte of the current character and how many of its bytes are to
	// come, so a 0x9c inside a character is not taken for ST.
	strLead   byte
	strFollow uint8

	// pend holds a character cut at the end of a write, until the next
	// write completes it (whether it is text or a control depends on the
	// bytes to come).
	pend  [utf8.UTFMax]byte
	npend int

	line    []byte // the current, unfinished line
	col     int    // cursor position in line
	emitted int    // bytes of line already handed out by flushPartial
	redrawn bool   // line was rewritten before emitted
	// shown is the line as flushPartial last handed it out (its first
	// emitted bytes): a redraw that leaves it as it was (readline
	// reprinting the prompt) hands out only what follows.
	shown []byte
	// spliced is set when text overwrote part of the line: a character
	// partly overwritten may then leave an 8-bit control, which emit
	// drops.
	spliced bool
	scratch []byte // for emit
}

// maxLine bounds the unfinished line: past it, the line is handed out as
// it is and redraws of it are no longer collapsed.
const maxLine = 64 << 10

const (
	defaultWidth = 80
	// maxWidth is the widest terminal assumed, as wide as the tools let
	// a terminal be: it bounds the padding a line can gain.
	maxWidth = 1000
	// maxParam bounds a CSI parameter as it is read (a count past the
	// line's end means the end).
	maxParam = 1 << 16
)

// spaces pads a line.
var spaces = bytes.Repeat([]byte{' '}, maxWidth)

// columns is the terminal's width.
func (c *cleaner) columns() int {
	if c.width <= 0 {
		return defaultWidth
	}
	return min(c.width, maxWidth)
}

type escState uint8

const (
	stText      escState = iota
	stEsc                // after ESC
	stCSI                // after ESC [
	stString             // OSC, DCS, APC, PM, SOS: until BEL or ST
	stStringEsc          // ESC inside a string (maybe ST)
	stCharset            // ESC ( X and friends: one more byte
)

// Write consumes terminal output.
func (c *cleaner) Write(p []byte) {
	// First complete a character cut by the last write.
	for c.npend > 0 && len(p) > 0 {
		c.pend[c.npend] = p[0]
		c.npend++
		p = p[1:]
		if utf8.FullRune(c.pend[:c.npend]) {
			r := c.pend
			n := c.npend
			c.npend = 0
			c.write(r[:n])
		}
	}
	c.write(p)
}

func (c *cleaner) write(p []byte) {
	for len(p) > 0 {
		if c.alt {
			n := c.altScan(p)
			c.screen(p[:n])
			p = p[n:]
			switch ev := c.altEvent; ev {
			case altEnter:
				c.alt = c.altScreen(true)
			case altLeave:
				c.alt = false
				c.altScreen(false)
			}
			c.altEvent = altNone
			continue
		}
		if c.state != stText {
			c.byte(p[0])
			p = p[1:]
			continue
		}
		// Fast path: a run of text and line ends with no other control.
		i := plainLen(p)
		run := p[:i]
		p = p[i:]
		for len(run) > 0 {
			nl := bytes.IndexByte(run, '\n')
			if nl < 0 {
				c.text(run)
				break
			}
			if len(c.line) == 0 && c.col == 0 {
				// Whole lines with nothing pending: hand them out as
				// they are, in one piece.
				last := bytes.LastIndexByte(run, '\n')
				c.out(run[:last+1])
				run = run[last+1:]
				continue
			}
			c.text(run[:nl])
			c.line = append(c.line, '\n')
			c.commit()
			run = run[nl+1:]
		}
		switch {
		case len(p) == 0:
		case p[0] < utf8.RuneSelf:
			c.byte(p[0])
			p = p[1:]
		default:
			n, ctl := highRune(p)
			if n == 0 {
				c.npend = copy(c.pend[:], p) // a cut character
				return
			}
			c.c1(ctl, n == 1)
			p = p[n:]
		}
	}
}

// plainLen is the length of the leading run of p that is text: no special
// byte, no 8-bit control and no character cut at the end of p.
func plainLen(p []byte) int {
	i := asciiLen(p)
	for i < len(p) {
		b := p[i]
		switch {
		case b >= utf8.RuneSelf:
			n, ctl := highRune(p[i:])
			if n == 0 || ctl != 0 {
				return i
			}
			i += n
		case special[b]:
			return i
		case i+8 <= len(p) && binary.LittleEndian.Uint64(p[i:])&highs == 0:
			// A stretch of ASCII again: word at a time.
			i += asciiLen(p[i:])
		default:
			i++
		}
	}
	return i
}

// highRune reads the character at the start of p, whose first byte is
// 0x80 or above: its length n, and ctl, the 8-bit control it is (0 for
// text). n is 0 for a character cut at the end of p. A byte that is not
// part of a UTF-8 character is text (toValid replaces it) unless it is
// in 0x80–0x9f.
func highRune(p []byte) (n int, ctl byte) {
	// The common cases first: two bytes (U+0080–U+07FF), and three
	// with no overlong or surrogate form to rule out.
	if len(p) >= 2 && p[0] >= 0xc2 && p[0] <= 0xdf && p[1]&0xc0 == 0x80 {
		if p[0] == 0xc2 && p[1] <= 0x9f {
			return 2, p[1]
		}
		return 2, 0
	}
	if len(p) >= 3 && p[0] >= 0xe1 && p[0] <= 0xef && p[0] != 0xed && p[1]&0xc0 == 0x80 && p[2]&0xc0 == 0x80 {
		return 3, 0
	}
	r, n := utf8.DecodeRune(p)
	switch {
	case n > 1 && r <= 0x9f:
		return n, byte(r)
	case n > 1:
		return n, 0
	case !utf8.FullRune(p):
		return 0, 0
	case p[0] <= 0x9f:
		return 1, p[0]
	}
	return 1, 0
}

// asciiLen is the length of the leading run of p with no special byte
// and no byte 0x80 or above. It tests sixteen bytes at a time with exact
// per-byte masks (no carry crosses a byte): first whether any byte is
// below 0x20, 0x7f or above, which most words of text are not, and only
// then which of those are line ends or tabs.
func asciiLen(p []byte) int {
	i := 0
	for ; i+16 <= len(p); i += 16 {
		a := binary.LittleEndian.Uint64(p[i:])
		b := binary.LittleEndian.Uint64(p[i+8:])
		if candidates(a)|candidates(b) == 0 {
			continue
		}
		if m := specialMask(a); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
		if m := specialMask(b); m != 0 {
			return i + 8 + bits.TrailingZeros64(m)/8
		}
	}
	for ; i+8 <= len(p); i += 8 {
		if m := specialMask(binary.LittleEndian.Uint64(p[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for i < len(p) && !special[p[i]] && p[i] < utf8.RuneSelf {
		i++
	}
	return i
}

const (
	low7  = 0x7f7f7f7f7f7f7f7f
	highs = 0x8080808080808080
	ones  = 0x0101010101010101
)

// candidates sets the high bit of each byte of w below 0x20, equal to
// 0x7f or 0x80 and above.
func candidates(w uint64) uint64 {
	below := ^((w & low7) + 0x60*ones) & ^w & highs
	d := w ^ 0x7f*ones
	del := ^((d & low7) + low7 | d | low7)
	return below | del | w&highs
}

// specialMask sets the high bit of each byte of w that is special (below
// 0x20 but for '\n' and '\t', or 0x7f) or 0x80 and above.
func specialMask(w uint64) uint64 {
	m := candidates(w)
	if m == 0 {
		return 0
	}
	nl := w ^ '\n'*ones
	tab := w ^ '\t'*ones
	return m &^ ^((nl & low7) + low7 | nl | low7) &^ ^((tab & low7) + low7 | tab | low7)
}

// special marks the ASCII bytes the fast path stops at: controls other
// than newline and tab.
var special = func() (t [256]bool) {
	for b := 0; b < 0x20; b++ {
		t[b] = b != '\n' && b != '\t'
	}
	t[0x7f] = true
	return t
}()

// text puts plain bytes at the cursor, overwriting what a redraw covers.
func (c *cleaner) text(b []byte) {
	if len(b) == 0 {
		return
	}
	if c.col == len(c.line) {
		if c.emitted == 0 && !c.redrawn && len(c.line) == 0 && len(b) >= maxLine {
			// A long run with no line end: hand it out as it is.
			c.out(b)
			return
		}
		c.line = append(c.line, b...)
		c.col = len(c.line)
	} else {
		if c.col < c.emitted {
			c.redrawn = true
		}
		c.spliced = true
		end := c.col + len(b)
		if end > len(c.line) {
			c.line = append(c.line[:c.col], b...)
		} else {
			copy(c.line[c.col:], b)
		}
		c.col = end
	}
	if len(c.line) >= maxLine {
		c.flushPartial()
		c.line, c.col, c.emitted, c.spliced, c.shown = c.line[:0], 0, 0, false, c.shown[:0]
	}
}

func (c *cleaner) byte(b byte) {
	switch c.state {
	case stText:
		switch b {
		case 0x1b:
			c.state = stEsc
			c.raw8 = false
		case '\n':
			c.line = append(c.line, '\n')
			c.commit()
		case '\r':
			c.col = 0
		case '\b':
			if c.col > 0 {
				c.col--
			}
		case '\t':
			c.text([]byte{'\t'})
		default:
			// Other control bytes (BEL, SI/SO, NUL, DEL) show nothing.
		}
	case stEsc:
		switch b {
		case '[':
			c.state = stCSI
			c.params = c.params[:0]
		case ']', 'P', '_', '^', 'X':
			c.state = stString
			c.strFollow = 0
		case '(', ')', '*', '+', '-', '.', '/', '#', '%', ' ':
			c.state = stCharset
		default:
			c.state = stText
		}
	case stCharset:
		c.state = stText
	case stCSI:
		if b == '\n' && c.raw8 {
			c.state = stText
			c.byte(b)
			return
		}
		if b >= 0x40 && b <= 0x7e {
			c.csi(b)
			c.state = stText
			return
		}
		if len(c.params) < 64 {
			c.params = append(c.params, b)
		}
	case stString:
		switch {
		case b == 0x07:
			c.state = stText
		case b == 0x1b:
			c.state = stStringEsc
		case b == '\n' && c.raw8:
			c.state = stText
			c.byte(b)
		case b == 0x9c && (c.strFollow == 0 || c.strFollow == 1 && c.strLead == 0xc2):
			c.state = stText // ST, raw or encoded
		case b >= 0x80 && b <= 0xbf:
			if c.strFollow > 0 {
				c.strFollow--
			}
		default:
			c.strLead, c.strFollow = b, utf8Follow(b)
		}
	case stStringEsc:
		if b == '\\' {
			c.state = stText
		} else {
			c.state = stString
			c.strFollow = 0
		}
	}
}

// c1 starts what the 8-bit control ctl starts: what ESC and ctl less 0x40
// would. raw tells a byte from an encoded U+0080–U+009F.
func (c *cleaner) c1(ctl byte, raw bool) {
	c.state = stEsc
	c.raw8 = raw
	c.byte(ctl - 0x40)
}

// utf8Follow is how many bytes follow the lead byte b in a UTF-8
// character.
func utf8Follow(b byte) uint8 {
	switch {
	case b >= 0xc2 && b <= 0xdf:
		return 1
	case b >= 0xe0 && b <= 0xef:
		return 2
	case b >= 0xf0 && b <= 0xf4:
		return 3
	}
	return 0
}

// altEvent is a change of screen seen on the alternate screen.
type altEvent uint8

const (
	altNone  altEvent = iota
	altEnter          // entered again: a fresh screen
	altLeave
)

// altScan reads what the program prints on the alternate screen up to
// and including a sequence that changes the screen (then altEvent says
// which), or all of p; it returns how much it read.
func (c *cleaner) altScan(p []byte) int {
	for i := 0; i < len(p); {
		if c.state == stText {
			j := bytes.IndexByte(p[i:], 0x1b)
			if j < 0 {
				return len(p)
			}
			i += j
		}
		c.byte(p[i])
		i++
		if c.altEvent != altNone {
			return i
		}
	}
	return len(p)
}

// altScreenSwitch reports whether CSI params with final h or l set or
// reset an alternate screen mode ("?1049", "?47;1"...).
func altScreenSwitch(params []byte) bool {
	rest, ok := bytes.CutPrefix(params, []byte{'?'})
	if !ok {
		return false
	}
	for len(rest) > 0 {
		var n []byte
		n, rest, _ = bytes.Cut(rest, []byte{';'})
		switch string(n) {
		case "47", "1047", "1049":
			return true
		}
	}
	return false
}

// screenSwitch follows a full-screen program's taking and giving back of
// the screen (see cleaner.altScreen); it reports whether the sequence was
// such a switch.
func (c *cleaner) screenSwitch(final byte) bool {
	take := func() {
		if c.alt {
			c.altEvent = altEnter
		} else {
			// Without a screen (too many kept), the output stays a
			// stream.
			c.alt = c.altScreen(true)
		}
	}
	give := func() {
		if c.alt {
			c.altEvent = altLeave
		}
	}
	switch {
	case (final == 'h' || final == 'l') && altScreenSwitch(c.params):
		if final == 'h' {
			c.cleared = false
			take()
		} else {
			give()
		}
		return true
	case final == 'h' && string(c.params) == "?1":
		c.appKeys = true
	case final == 'l' && string(c.params) == "?1":
		c.appKeys = false
		if c.alt && c.cleared {
			give()
			return true
		}
	case final == 'J' && string(c.params) == "2" && c.appKeys && !c.alt:
		c.cleared = true
		take()
		return true
	}
	return false
}

// csi handles the few sequences that change what the line shows, and
// answers queries.
func (c *cleaner) csi(final byte) {
	if c.altScreen != nil && c.screenSwitch(final) {
		return
	}
	if c.alt {
		return // the screen's emulator answers
	}
	p := string(c.params)
	switch final {
	case 'n':
		switch p {
		case "6": // cursor position report
			c.answer("\x1b[1;" + strconv.Itoa(c.col+1) + "R")
		case "5": // status: OK
			c.answer("\x1b[0n")
		}
	case 'c':
		if p == "" || p == "0" { // primary device attributes: a VT102
			c.answer("\x1b[?6c")
		}
	case 'K': // erase in line
		switch p {
		case "", "0":
			if c.col < len(c.line) {
				if c.col < c.emitted {
					c.redrawn = true
				}
				c.line = c.line[:c.col]
			}
		case "2":
			if c.emitted > 0 {
				c.redrawn = true
			}
			c.line = c.line[:0]
			c.col = 0
		}
	case 'G', '`': // cursor to column
		c.moveTo(max(csiCount(c.params), 1) - 1)
	case 'D': // cursor back
		c.moveTo(c.col - max(csiCount(c.params), 1))
	case 'C', 'a': // cursor forward
		c.moveTo(c.col + max(csiCount(c.params), 1))
	}
}

// csiCount is the first parameter of a CSI sequence: 0 when it is absent
// or not a number, at most maxParam.
func csiCount(params []byte) int {
	n := 0
	for _, b := range params {
		if b == ';' {
			break
		}
		if b < '0' || b > '9' {
			return 0
		}
		n = min(n*10+int(b-'0'), maxParam)
	}
	return n
}

// moveTo moves the cursor to col, within the line or, as a terminal's
// cursor stops at its last column, the terminal's width: past the line's
// end, the line is padded with spaces.
func (c *cleaner) moveTo(col int) {
	col = min(max(col, 0), max(len(c.line), c.columns()-1))
	if n := col - len(c.line); n > 0 {
		c.line = append(c.line, spaces[:n]...)
	}
	c.col = col
}

func (c *cleaner) answer(s string) {
	if c.reply != nil {
		c.reply([]byte(s))
	}
}

// commit hands out the finished line (the part not already handed out,
// unless a redraw changed that part).
func (c *cleaner) commit() {
	if c.changed() {
		c.emit(c.line)
	} else {
		c.emit(c.line[c.emitted:])
	}
	c.line = c.line[:0]
	c.col, c.emitted, c.redrawn, c.spliced = 0, 0, false, false
	c.shown = c.shown[:0]
}

// changed reports whether a redraw changed the part of the line already
// handed out.
func (c *cleaner) changed() bool {
	return c.redrawn && !bytes.HasPrefix(c.line, c.shown)
}

// flushPartial hands out the unfinished line (a prompt, a progress bar) so
// a reader sees it now; if the line later only grows, just the new part is
// handed out again.
func (c *cleaner) flushPartial() {
	if len(c.line) == 0 {
		return
	}
	if c.changed() {
		c.emit(c.line)
	} else if len(c.line) > c.emitted {
		c.emit(c.line[c.emitted:])
	}
	c.emitted, c.redrawn = len(c.line), false
	c.shown = append(c.shown[:0], c.line...)
}

// end is the end of the stream: a character still cut (its end never
// came) shows as U+FFFD, and the unfinished line is handed out.
func (c *cleaner) end() {
	if c.npend > 0 && c.state == stText {
		c.text([]byte("\uFFFD"))
	}
	c.npend = 0
	c.flushPartial()
}

// emit hands out part of the line; a spliced line first loses the 8-bit
// controls a partial overwrite may have made of its characters.
func (c *cleaner) emit(b []byte) {
	if c.spliced {
		b = c.dropC1(b)
	}
	c.out(b)
}

// dropC1 is b without 8-bit controls (in c.scratch if any was dropped).
func (c *cleaner) dropC1(b []byte) []byte {
	out, start, cut := c.scratch[:0], 0, false
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if n == 1 && b[i] > 0x9f || n > 1 && r > 0x9f {
			i += n
			continue
		}
		out = append(out, b[start:i]...)
		i += n
		start, cut = i, true
	}
	if !cut {
		return b
	}
	out = append(out, b[start:]...)
	c.scratch = out
	return out
}
