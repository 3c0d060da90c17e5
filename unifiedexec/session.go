package unifiedexec

import (
	"bytes"
	"cmp"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/unified-exec/unified-exec/ptyrun"
)

// session is one command and what it printed. The pump goroutine of its
// process writes into it; calls take from it.
type session struct {
	id      int
	cmd     string
	cwd     string
	tty     bool
	label   string
	started time.Time
	// proc is set by attach under mu (the pump reads it under mu); calls
	// read it freely once the session is registered.
	proc *ptyrun.Process
	// calls serializes the tool calls on this session (a 1-slot lock
	// that a waiting call can abandon).
	calls chan struct{}
	// refusedSeen is the count of refused forks already reported; only the
	// call holding calls touches it.
	refusedSeen int

	// lastUsed is guarded by Manager.mu.
	lastUsed time.Time

	// mu guards the fields below. It is never held while waiting.
	mu           sync.Mutex
	clean        cleaner
	buf          headTail   // clean output not yet returned
	transcript   transcript // clean output, for read_log
	exitReported bool
	exitCode     int
	// endNote says why the engine ended the session (a timeout), for the
	// response that reports the exit.
	endNote    string
	observer   func([]byte) // the current call's, if any
	received   int64        // bytes received from the process
	lastOutput time.Time    // when the last bytes arrived
	watched    int          // calls in their window on this session
	// rows and cols are the terminal's size, for a screen.
	rows, cols int
	// timer ends the session at its timeout, if it has one.
	timer *time.Timer
	// scr keeps the screen while the program is on the alternate screen
	// (nil otherwise); retired are screens let go of, to stop once mu is
	// released; released is set once the manager dropped the session (no
	// screen is made after it).
	scr      *screen
	retired  []*screen
	released bool

	// rmu guards the fields below. It is taken after mu (never before)
	// and never held while waiting: the screen's goroutine takes it alone.
	rmu sync.Mutex
	// replyTo is the process answers go to (set by attach).
	replyTo *ptyrun.Process
	// replies are answers to terminal queries not yet written (see
	// flushReplies); answering is set while one goroutine writes them, so
	// answers keep their order.
	replies   []byte
	answering bool
}

// maxReplies bounds the answers to terminal queries waiting for room in a
// terminal the program does not read; answers beyond it are dropped, as the
// program is not reading them.
const maxReplies = 4 << 10

// unwatchedRate caps how fast a session is read while no call watches it
// and its buffer already drops output between head and tail. A flood
// nobody reads then waits on its terminal or pipe, as under a terminal's
// flow control, instead of taking a core from every other session; no
// output is lost by it (only the middle, which the buffer drops anyway, is
// produced later), and the command runs at full speed again as soon as a
// call watches it.
const unwatchedRate = 16 << 20 // bytes per second

// Write is the process's output sink (called by the pump goroutine).
func (s *session) Write(p []byte) (int, error) {
	s.mu.Lock()
	s.received += int64(len(p))
	if s.tty {
		s.lastOutput = time.Now() // for the early return at a prompt
	}
	s.clean.Write(p)
	throttle := s.watched == 0 && s.buf.dropped > 0
	retired := s.takeRetired()
	s.mu.Unlock()
	stopScreens(retired)
	s.flushReplies()
	if throttle {
		time.Sleep(time.Duration(len(p)) * time.Second / unwatchedRate)
	}
	return len(p), nil
}

// attach hands the started process to the session and answers the
// terminal queries it printed before (the pump may run before Start
// returns).
func (s *session) attach(proc *ptyrun.Process) {
	s.mu.Lock()
	s.proc = proc
	s.mu.Unlock()
	s.rmu.Lock()
	s.replyTo = proc
	s.rmu.Unlock()
	s.flushReplies()
}

// flushReplies writes the pending answers to terminal queries, outside the
// lock and without waiting: the pump calls it, and a program that floods
// queries without reading its terminal must not stall the reading of its
// output. What the terminal has no room for stays queued for the next
// output or the next tick of a call's window.
func (s *session) flushReplies() {
	s.rmu.Lock()
	if s.replyTo == nil || s.answering || len(s.replies) == 0 {
		s.rmu.Unlock()
		return
	}
	proc, b := s.replyTo, s.replies
	s.replies, s.answering = nil, true
	s.rmu.Unlock()
	n, err := proc.TryWrite(b)
	s.rmu.Lock()
	s.answering = false
	if err == nil && n < len(b) {
		s.replies = append(b[n:len(b):len(b)], s.replies...)
	}
	s.rmu.Unlock()
}

// reply queues an answer to a terminal query.
func (s *session) reply(b []byte) {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	if len(s.replies)+len(b) > maxReplies {
		return // the program is not reading its answers
	}
	s.replies = append(s.replies, b...)
}

// screenAnswer is how a screen's emulator answers the program: queued and
// written at once (from the screen's goroutine, without mu).
func (s *session) screenAnswer(b []byte) {
	s.reply(b)
	s.flushReplies()
}

// altScreen follows a full-screen program taking the screen (on; again:
// a fresh screen) and giving it back; s.mu is held (the cleaner calls
// it). It reports whether the session keeps a screen now.
func (s *session) altScreen(on bool) bool {
	if s.scr != nil {
		s.retired = append(s.retired, s.scr)
		s.scr = nil
	}
	if on && !s.released {
		s.scr = newScreen(s.cols, s.rows, s.screenAnswer)
	}
	return s.scr != nil
}

// toScreen feeds what the program prints on the alternate screen; s.mu is
// held.
func (s *session) toScreen(p []byte) {
	if s.scr != nil {
		s.scr.write(p)
	}
}

// resize changes the terminal's size (a dimension of 0 keeps the current
// one): the screen and the cleaner's width first, so the program's redraw
// at the new size meets them, then the terminal, whose foreground job
// gets SIGWINCH.
func (s *session) resize(rows, cols uint16) error {
	if !s.tty {
		return ptyrun.ErrNoStdin
	}
	s.mu.Lock()
	s.rows, s.cols = int(cmp.Or(rows, uint16(s.rows))), int(cmp.Or(cols, uint16(s.cols)))
	s.clean.width = s.cols
	if s.scr != nil {
		s.scr.resize(s.cols, s.rows)
	}
	r, c := uint16(s.rows), uint16(s.cols)
	s.mu.Unlock()
	return s.proc.Resize(r, c)
}

// takeRetired hands over the screens to stop; s.mu is held.
func (s *session) takeRetired() []*screen {
	r := s.retired
	s.retired = nil
	return r
}

func stopScreens(l []*screen) {
	for _, sc := range l {
		sc.stop()
	}
}

// release lets go of what the session holds beyond its transcript (its
// screen), once the manager dropped it or closed.
func (s *session) release() {
	s.mu.Lock()
	s.released = true
	if s.timer != nil {
		s.timer.Stop()
	}
	s.altScreen(false)
	retired := s.takeRetired()
	s.mu.Unlock()
	stopScreens(retired)
}

// appendClean receives cleaned text from the cleaner; s.mu is held.
func (s *session) appendClean(b []byte) {
	s.buf.Write(b)
	s.transcript.Write(b)
	if s.observer != nil {
		s.observer(b)
	}
}

// endAs records why the engine is ending the session (the first reason
// stands), to be said with its exit.
func (s *session) endAs(note string) {
	s.mu.Lock()
	if s.endNote == "" && !s.exitReported {
		s.endNote = note
	}
	s.mu.Unlock()
}

func (s *session) exited() bool {
	select {
	case <-s.proc.Done():
		return true
	default:
		return false
	}
}

// respond takes the pending output and builds the response.
func (s *session) respond(started time.Time, maxTokens int) *Response {
	done := s.exited()
	s.mu.Lock()
	if done {
		s.clean.end()
	} else {
		s.clean.flushPartial()
	}
	lines := s.buf.Lines()
	head, dropped, tail := s.buf.Take()
	var screenText string
	if s.scr != nil {
		screenText = s.scr.render()
		if done {
			s.altScreen(false) // its last screen is this response's
		}
	}
	retired := s.takeRetired()
	if dropped == 0 {
		// One stretch of output: a character may straddle the two.
		head, tail = append(head, tail...), nil
	} else {
		head, tail, dropped = trimCut(head, tail, dropped)
	}
	r := &Response{ChunkID: newChunkID(), SessionID: s.id}
	if done && !s.exitReported {
		s.exitReported = true
		s.exitCode = s.proc.ExitStatus().Code
	}
	if s.exitReported {
		code := s.exitCode
		r.ExitCode = &code
		r.SessionID = 0
		if s.endNote != "" {
			r.Notes = append(r.Notes, s.endNote)
			s.endNote = ""
		}
		if s.timer != nil {
			s.timer.Stop()
		}
	}
	s.mu.Unlock()
	stopScreens(retired)

	headText, tailText := toValid(head), toValid(tail)
	if screenText != "" {
		// The screen follows what was printed before the program took
		// it, on a line of its own.
		if out := headText + tailText; out != "" && !strings.HasSuffix(out, "\n") {
			screenText = "\n" + screenText
			lines-- // the line it ends was counted
		}
		tailText += screenText
		lines += int64(strings.Count(screenText, "\n"))
	}
	total := int64(len(headText)+len(tailText)) + dropped
	r.OriginalTokenCount = tokenCount(int(total))
	text := truncateParts(headText, tailText, dropped, lines, maxTokens)
	if dropped > 0 || total > int64(max(maxTokens, 0))*bytesPerToken {
		// The id is not in the response of a command that exited.
		r.Notes = append(r.Notes, fmt.Sprintf("The output was cut: read_log with session_id %d reads it by lines (the last %d MiB of it).", s.id, transcriptMax>>20))
	}
	r.Output = text
	r.WallTime = time.Since(started)
	return r
}

func toValid(b []byte) string { return strings.ToValidUTF8(string(b), "\uFFFD") }

// trimCut drops the parts of characters that head and tail keep of one cut
// by the buffer's dropping (a character's start at head's end, its end at
// tail's start), and counts them as dropped.
func trimCut(head, tail []byte, dropped int64) ([]byte, []byte, int64) {
	for i := len(head) - 1; i >= 0 && i >= len(head)-utf8.UTFMax; i-- {
		if utf8.RuneStart(head[i]) {
			if !utf8.FullRune(head[i:]) {
				dropped += int64(len(head) - i)
				head = head[:i]
			}
			break
		}
	}
	n := 0
	for n < len(tail) && n < utf8.UTFMax-1 && !utf8.RuneStart(tail[n]) {
		n++
	}
	return head, tail[n:], dropped + int64(n)
}

func (s *session) log(offset, limit int) ([]string, int, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lines, first, total := s.transcript.Lines(offset, limit)
	return lines, first, total, nil
}

// transcript keeps the newest clean output of a session, about
// transcriptMax bytes in blocks, for read_log. Memory grows with use.
type transcript struct {
	blocks  [][]byte
	size    int
	dropped int // line ends dropped with old blocks
	cut     bool
	// spare is the last block dropped, kept to be the next one: a flood
	// then runs without allocating.
	spare []byte
}

const transcriptBlock = 64 << 10

func (t *transcript) Write(b []byte) {
	for len(b) > 0 {
		n := len(t.blocks)
		if n == 0 || len(t.blocks[n-1]) >= transcriptBlock {
			// The first block starts small and grows by append, so a
			// session that printed a line costs bytes, not a block; once
			// one block is full, the next is allocated whole (or is the
			// one last dropped).
			var next []byte
			switch {
			case t.spare != nil:
				next, t.spare = t.spare, nil
			case n > 0:
				next = make([]byte, 0, transcriptBlock)
			}
			t.blocks = append(t.blocks, next)
			n++
		}
		last := &t.blocks[n-1]
		k := min(transcriptBlock-len(*last), len(b))
		*last = append(*last, b[:k]...)
		t.size += k
		b = b[k:]
	}
	for t.size > transcriptMax && len(t.blocks) > 1 {
		t.dropped += bytes.Count(t.blocks[0], []byte{'\n'})
		t.size -= len(t.blocks[0])
		if cap(t.blocks[0]) == transcriptBlock {
			t.spare = t.blocks[0][:0]
		}
		t.blocks[0] = nil
		t.blocks = t.blocks[1:]
		t.cut = true
	}
}

// Lines returns lines [offset, offset+limit) counted from the start of the
// session (dropped lines included in the numbering); offset < 0 means the
// last limit lines; limit <= 0 means all.
func (t *transcript) Lines(offset, limit int) (lines []string, first, total int) {
	text := toValid(bytes.Join(t.blocks, nil))
	base := t.dropped
	if t.cut {
		// The oldest retained line lost its start: skip it.
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			text = text[i+1:]
			base++
		}
	}
	text = strings.TrimSuffix(text, "\n")
	var all []string
	if text != "" {
		all = strings.Split(text, "\n")
	}
	total = base + len(all)
	if offset < 0 {
		if limit <= 0 || limit > len(all) {
			limit = len(all)
		}
		return all[len(all)-limit:], total - limit, total
	}
	i := min(max(offset-base, 0), len(all))
	j := len(all)
	if limit > 0 && i+limit < j {
		j = i + limit
	}
	return all[i:j], base + i, total
}
