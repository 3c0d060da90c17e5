package unifiedexec

import (
	"strings"
	"sync"
	"time"

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
	proc    *ptyrun.Process
	// calls serializes the tool calls on this session (a 1-slot lock
	// that a waiting call can abandon).
	calls chan struct{}

	// lastUsed is guarded by Manager.mu.
	lastUsed time.Time

	// mu guards the fields below. It is never held while waiting.
	mu           sync.Mutex
	clean        cleaner
	buf          headTail   // clean output not yet returned
	transcript   transcript // clean output, for read_log
	exitReported bool
	exitCode     int
}

// Write is the process's output sink (called by the pump goroutine).
func (s *session) Write(p []byte) (int, error) {
	s.mu.Lock()
	s.clean.Write(p)
	s.mu.Unlock()
	return len(p), nil
}

// appendClean receives cleaned text from the cleaner; s.mu is held.
func (s *session) appendClean(b []byte) {
	s.buf.Write(b)
	s.transcript.Write(b)
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
	s.clean.flushPartial()
	head, dropped, tail := s.buf.Take()
	r := &Response{ChunkID: newChunkID(), SessionID: s.id}
	if done && !s.exitReported {
		s.exitReported = true
		s.exitCode = s.proc.ExitStatus().Code
	}
	if s.exitReported {
		code := s.exitCode
		r.ExitCode = &code
		r.SessionID = 0
	}
	s.mu.Unlock()

	total := int64(len(head)) + dropped + int64(len(tail))
	r.OriginalTokenCount = tokenCount(int(total))
	text := truncateParts(toValid(head), toValid(tail), dropped, maxTokens)
	r.Output = text
	r.WallTime = time.Since(started)
	return r
}

func toValid(b []byte) string { return strings.ToValidUTF8(string(b), "\uFFFD") }

func (s *session) log(offset, limit int) ([]string, int, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lines, first, total := s.transcript.Lines(offset, limit)
	return lines, first, total, nil
}

// transcript keeps the newest clean output of a session, up to
// transcriptMax bytes, for read_log. Memory grows with use.
type transcript struct {
	data    []byte
	dropped int // whole lines dropped from the front
}

func (t *transcript) Write(b []byte) {
	t.data = append(t.data, b...)
	if len(t.data) > transcriptMax {
		cut := len(t.data) - transcriptMax*3/4
		if i := strings.IndexByte(string(t.data[cut:]), '\n'); i >= 0 {
			cut += i + 1
		}
		t.dropped += strings.Count(string(t.data[:cut]), "\n")
		t.data = append([]byte(nil), t.data[cut:]...)
	}
}

// Lines returns lines [offset, offset+limit) counted from the start of the
// session (dropped lines included in the numbering); offset < 0 means the
// last limit lines; limit <= 0 means all.
func (t *transcript) Lines(offset, limit int) (lines []string, first, total int) {
	text := toValid(t.data)
	text = strings.TrimSuffix(text, "\n")
	var all []string
	if text != "" {
		all = strings.Split(text, "\n")
	}
	total = t.dropped + len(all)
	if offset < 0 {
		if limit <= 0 || limit > len(all) {
			limit = len(all)
		}
		return all[len(all)-limit:], total - limit, total
	}
	i := offset - t.dropped
	if i < 0 {
		i = 0
	}
	if i > len(all) {
		i = len(all)
	}
	j := len(all)
	if limit > 0 && i+limit < j {
		j = i + limit
	}
	return all[i:j], t.dropped + i, total
}
