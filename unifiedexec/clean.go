package unifiedexec

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strconv"
)

// cleaner turns a terminal byte stream into what a reader of the screen
// would see, line by line: escape sequences (CSI, OSC, DCS, two-byte ESC
// sequences) are dropped, a carriage return restarts the line so redraws
// like "10%\r50%\r100%" collapse to what the line finally shows, and a
// backspace steps back. Terminal queries (cursor position, status, device
// attributes) are answered through reply so programs waiting for an answer
// do not hang. Not safe for concurrent use.
type cleaner struct {
	// out receives completed lines (with their "\n").
	out func([]byte)
	// reply, if set, answers terminal queries.
	reply func([]byte)
	// width is the terminal's width in columns (0: defaultWidth; at most
	// maxWidth).
	width int

	state  escState
	params []byte // parameters of the CSI being parsed

	line    []byte // the current, unfinished line
	col     int    // cursor position in line
	emitted int    // bytes of line already handed out by flushPartial
	redrawn bool   // line was rewritten before emitted
}

// maxLine bounds the unfinished line: past it, the line is handed out as
// it is and redraws of it are no longer collapsed.
const maxLine = 64 << 10

const (
	defaultWidth = 80
	// maxWidth is the widest terminal assumed, as wide as the tools let
	// a terminal be.
	maxWidth = 1000
)

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
	for len(p) > 0 {
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
		if len(p) > 0 {
			c.byte(p[0])
			p = p[1:]
		}
	}
}

// plainLen is the length of the leading run of p with no special byte.
// It tests sixteen bytes at a time with exact per-byte masks (no carry
// crosses a byte): first whether any byte is below 0x20 or is 0x7f,
// which most words of text are not, and only then which of those are
// line ends or tabs.
func plainLen(p []byte) int {
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
	for i < len(p) && !special[p[i]] {
		i++
	}
	return i
}

const (
	low7  = 0x7f7f7f7f7f7f7f7f
	highs = 0x8080808080808080
	ones  = 0x0101010101010101
)

// candidates sets the high bit of each byte of w below 0x20 or equal to
// 0x7f.
func candidates(w uint64) uint64 {
	below := ^((w & low7) + 0x60*ones) & ^w & highs
	d := w ^ 0x7f*ones
	del := ^((d & low7) + low7 | d | low7)
	return below | del
}

// specialMask sets the high bit of each byte of w that is special: below
// 0x20 but for '\n' and '\t', or 0x7f.
func specialMask(w uint64) uint64 {
	m := candidates(w)
	if m == 0 {
		return 0
	}
	nl := w ^ '\n'*ones
	tab := w ^ '\t'*ones
	return m &^ ^((nl & low7) + low7 | nl | low7) &^ ^((tab & low7) + low7 | tab | low7)
}

// special marks the bytes the fast path stops at: controls other than
// newline and tab.
var special = func() (t [256]bool) {
	for b := 0; b < 0x20; b++ {
		t[b] = b != '\n' && b != '\t'
	}
	t[0x7f] = true
	return t
}()

// text puts plain bytes at the cursor, overwriting what a redraw covers.
func (c *cleaner) text(b []byte) {
	if c.col == len(c.line) {
		if c.emitted == 0 && !c.redrawn && len(c.line) == 0 && len(b) >= maxLine {
			// A long run with no line end: hand it out as it is.
			c.out(b)
			return
		}
		c.line = append(c.line, b...)
		c.col = len(c.line)
		if len(c.line) >= maxLine {
			c.flushPartial()
			c.line, c.col, c.emitted = c.line[:0], 0, 0
		}
		return
	}
	if c.col < c.emitted {
		c.redrawn = true
	}
	end := c.col + len(b)
	if end > len(c.line) {
		c.line = append(c.line[:c.col], b...)
	} else {
		copy(c.line[c.col:], b)
	}
	c.col = end
}

func (c *cleaner) byte(b byte) {
	switch c.state {
	case stText:
		switch b {
		case 0x1b:
			c.state = stEsc
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
		case '(', ')', '*', '+', '-', '.', '/', '#', '%', ' ':
			c.state = stCharset
		default:
			c.state = stText
		}
	case stCharset:
		c.state = stText
	case stCSI:
		if b >= 0x40 && b <= 0x7e {
			c.csi(b)
			c.state = stText
			return
		}
		if len(c.params) < 64 {
			c.params = append(c.params, b)
		}
	case stString:
		switch b {
		case 0x07:
			c.state = stText
		case 0x1b:
			c.state = stStringEsc
		}
	case stStringEsc:
		if b == '\\' {
			c.state = stText
		} else {
			c.state = stString
		}
	}
}

// csi handles the few sequences that change what the line shows, and
// answers queries.
func (c *cleaner) csi(final byte) {
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
	case 'G': // cursor to column
		n, _ := strconv.Atoi(p)
		c.moveTo(max(n, 1) - 1)
	case 'D': // cursor back
		n, _ := strconv.Atoi(p)
		c.moveTo(c.col - max(n, 1))
	case 'C': // cursor forward
		n, _ := strconv.Atoi(p)
		c.moveTo(c.col + max(n, 1))
	}
}

func (c *cleaner) moveTo(col int) {
	col = max(col, 0)
	for len(c.line) < col {
		c.line = append(c.line, ' ')
	}
	c.col = col
}

func (c *cleaner) answer(s string) {
	if c.reply != nil {
		c.reply([]byte(s))
	}
}

// commit hands out the finished line (the part not already handed out,
// unless it was redrawn since).
func (c *cleaner) commit() {
	if c.redrawn {
		c.out(c.line)
	} else {
		c.out(c.line[c.emitted:])
	}
	c.line = c.line[:0]
	c.col, c.emitted, c.redrawn = 0, 0, false
}

// flushPartial hands out the unfinished line (a prompt, a progress bar) so
// a reader sees it now; if the line later only grows, just the new part is
// handed out again.
func (c *cleaner) flushPartial() {
	if len(c.line) == 0 {
		return
	}
	if c.redrawn {
		c.out(c.line)
	} else if len(c.line) > c.emitted {
		c.out(c.line[c.emitted:])
	}
	c.emitted, c.redrawn = len(c.line), false
}
