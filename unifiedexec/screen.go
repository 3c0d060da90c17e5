//go:build !unified_exec_novt

package unifiedexec

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"
)

// screen keeps what a full-screen program shows on the alternate screen,
// through a terminal emulator (charmbracelet/x/vt), so that a response
// can show the screen as a person would see it rather than the stream of
// redraws. A session has one only while its program is on the alternate
// screen: an idle session pays nothing for it.
//
// The emulator answers the program's queries (cursor position, device
// attributes, modes) by writing to a pipe of its own, which blocks until
// read: a goroutine (its owner: the screen) reads it and hands the
// answers to reply. It ends when [screen.stop] sends it stopByte through
// that pipe; it then closes the emulator itself, so that the emulator's
// unsynchronized closed flag is only touched by it after the last write.
//
// Methods but stop are called with the session's lock held; stop is
// called without it, after the session let go of the screen.
type screen struct {
	emu      *vt.Emulator
	stopOnce sync.Once
	done     chan struct{} // closed when the reader has ended
	// failed says why the emulator is no longer used: it panicked on the
	// program's output (see guard). "" while it works.
	failed string
}

// stopByte ends the reader: no answer of the emulator contains a NUL.
const stopByte = 0

// maxScreens bounds the screens kept at once in this process: an emulator
// costs about 4.6 MB of heap (its parser keeps a 4 MiB buffer for OSC and
// DCS strings). Past it, a full-screen program's output is a stream, as
// any other.
const maxScreens = 16

// screensLive counts the screens made and not yet stopped.
var screensLive atomic.Int64

// newScreen starts a blank screen of cols×rows; answers to the program's
// queries go to reply (which must not block for long). It returns nil
// when maxScreens are live.
func newScreen(cols, rows int, reply func([]byte)) *screen {
	if screensLive.Add(1) > maxScreens {
		screensLive.Add(-1)
		return nil
	}
	e := vt.NewEmulator(cols, rows)
	// The main buffer is all the emulator uses (see ignoreAltScreen);
	// keep none of what scrolls off it.
	e.SetScrollbackSize(1)
	// The program is already on the alternate screen: the emulator must
	// not switch to its own, whose scrollback keeps 10 000 lines.
	ignoreAltScreen(e, ansi.Command('?', 0, 'h'))
	ignoreAltScreen(e, ansi.Command('?', 0, 'l'))
	clampCounts(e)
	sc := &screen{emu: e, done: make(chan struct{})}
	go sc.answer(reply)
	return sc
}

// ignoreAltScreen makes the emulator ignore a set or reset of the
// alternate screen modes (47, 1047, 1049) that comes alone.
func ignoreAltScreen(e *vt.Emulator, cmd int) {
	e.RegisterCsiHandler(cmd, func(params ansi.Params) bool {
		if len(params) == 0 {
			return false
		}
		for i := range params {
			if !isAltScreenMode(params[i].Param(0)) {
				return false // mixed with other modes: the emulator's own handling
			}
		}
		return true
	})
}

func isAltScreenMode(n int) bool { return n == 47 || n == 1047 || n == 1049 }

// countedFinals are the CSI sequences whose parameters the emulator works
// through one by one, or are positions on the screen: repeat (REP), insert,
// delete and erase characters or lines (ICH, DCH, ECH, IL, DL), tab
// forward and back (CHT, CBT), scroll (SU, SD), and the cursor's moves.
const countedFinals = "bP@XLMIZSTABCDEFGHf`ade"

// clampCounts has the emulator take no count or position in
// countedFinals larger than the screen's larger side: it repeats REP's
// character as many times as it is told (red team 41: ESC[99999999b, 14
// bytes, held a session's lock for 19 s of the server's CPU, and the
// server outlived its client and SIGTERM while it ran), and tabs, erases
// and scrolls likewise. A count past the screen does nothing more on it.
// The handler changes the parameters in place and lets the emulator's own
// run on them (the last registered runs first).
func clampCounts(e *vt.Emulator) {
	for _, final := range countedFinals {
		e.RegisterCsiHandler(int(final), func(params ansi.Params) bool {
			limit := max(e.Width(), e.Height(), 1)
			for i, p := range params {
				if v := p.Param(-1); v > limit {
					params[i] = ansi.Param(ansi.Parameter(limit, p.HasMore()))
				}
			}
			return false
		})
	}
}

// answer reads the emulator's answers until stopByte, then closes the
// emulator. Owner: the screen; it ends with stop.
func (sc *screen) answer(reply func([]byte)) {
	defer close(sc.done)
	buf := make([]byte, 256)
	for {
		n, err := sc.emu.Read(buf)
		b := buf[:n]
		stop := false
		if i := bytes.IndexByte(b, stopByte); i >= 0 {
			b, stop = b[:i], true
		}
		if len(b) > 0 {
			reply(b)
		}
		if stop || err != nil {
			sc.emu.Close()
			return
		}
	}
}

// write feeds program output to the emulator.
func (sc *screen) write(p []byte) { sc.guard(func() { sc.emu.Write(p) }) }

// resize changes the screen's size.
func (sc *screen) resize(cols, rows int) { sc.guard(func() { sc.emu.Resize(cols, rows) }) }

// guard runs f, which works the emulator, unless it failed before; a
// panic in it (third-party code parsing what a command prints) ends the
// emulator's use, not the server with every session: the screen then
// says so, and the command's output still reaches the transcript.
func (sc *screen) guard(f func()) {
	if sc.failed != "" {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			sc.failed = fmt.Sprint(r)
		}
	}()
	f()
}

// stop ends the reader (once the session no longer writes to the screen).
// It waits for the reader to take the stop byte, not for anything else.
func (sc *screen) stop() {
	sc.stopOnce.Do(func() {
		sc.emu.InputPipe().Write([]byte{stopByte})
		<-sc.done
		screensLive.Add(-1)
	})
}

// render gives the screen as text: a header naming the size and the
// cursor, then the rows, each without trailing blanks, trailing blank rows
// left out.
func (sc *screen) render() (out string) {
	if sc.failed != "" {
		return "Screen (full-screen program): not shown, the terminal emulator failed on the program's output (" + sc.failed + ")\n"
	}
	defer func() {
		if r := recover(); r != nil {
			sc.failed = fmt.Sprint(r)
			out = sc.render()
		}
	}()
	e := sc.emu
	w, h := e.Width(), e.Height()
	rows := make([]string, h)
	var line strings.Builder
	for y := range h {
		line.Reset()
		for x := 0; x < w; {
			c := e.CellAt(x, y)
			switch {
			case c == nil:
				line.WriteByte(' ')
				x++
			case c.Content == "":
				if c.Width == 0 {
					x++ // the right half of a wide character
					continue
				}
				line.WriteByte(' ')
				x++
			default:
				line.WriteString(c.Content)
				x += max(c.Width, 1)
			}
		}
		rows[y] = strings.TrimRight(line.String(), " ")
	}
	for len(rows) > 0 && rows[len(rows)-1] == "" {
		rows = rows[:len(rows)-1]
	}
	pos := e.CursorPosition()
	cursor := fmt.Sprintf("cursor at row %d, column %d", pos.Y+1, pos.X+1)
	if e.CursorHidden() {
		cursor += ", hidden"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Screen (full-screen program, %d rows × %d columns; %s):\n", h, w, cursor)
	for _, r := range rows {
		b.WriteString(r)
		b.WriteByte('\n')
	}
	return b.String()
}
