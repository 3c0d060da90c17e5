package unifiedexec

import "bytes"

// headTail keeps the first headMax and the newest tailMax bytes written to
// it and counts what it dropped in between. Memory is allocated as bytes
// arrive, so an idle session costs nothing. Not safe for concurrent use.
type headTail struct {
	headMax, tailMax int

	head []byte
	// tail is a ring once full: the oldest byte is at tail[start].
	tail    []byte
	start   int
	dropped int64
	// newlines counts the line ends written since the last Take, and
	// last is the last byte written: the output's exact line count,
	// whatever was dropped.
	newlines int64
	last     byte
}

func newHeadTail(capacity int) headTail {
	h := capacity / 2
	return headTail{headMax: h, tailMax: capacity - h}
}

// Write never fails.
func (b *headTail) Write(p []byte) (int, error) {
	n := len(p)
	if n == 0 {
		return 0, nil
	}
	b.newlines += int64(bytes.Count(p, []byte{'\n'}))
	b.last = p[n-1]
	if room := b.headMax - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return n, nil
	}
	if b.tailMax == 0 {
		b.dropped += int64(len(p))
		return n, nil
	}
	if len(p) >= b.tailMax {
		// Everything in the tail and the front of p goes.
		b.dropped += int64(len(b.tail)) + int64(len(p)-b.tailMax)
		if cap(b.tail) < b.tailMax {
			b.tail = make([]byte, b.tailMax)
		}
		b.tail = b.tail[:b.tailMax]
		copy(b.tail, p[len(p)-b.tailMax:])
		b.start = 0
		return n, nil
	}
	if room := b.tailMax - len(b.tail); room > 0 {
		k := min(room, len(p))
		b.tail = append(b.tail, p[:k]...)
		p = p[k:]
	}
	// Ring: overwrite the oldest bytes.
	for len(p) > 0 {
		k := copy(b.tail[b.start:], p)
		b.dropped += int64(k)
		p = p[k:]
		b.start = (b.start + k) % len(b.tail)
	}
	return n, nil
}

// Len is the number of bytes retained.
func (b *headTail) Len() int { return len(b.head) + len(b.tail) }

// Total is every byte written since the last Take.
func (b *headTail) Total() int64 { return int64(b.Len()) + b.dropped }

// Lines is the number of lines written since the last Take: line ends,
// and a last line without one.
func (b *headTail) Lines() int64 {
	if b.last != '\n' && b.Total() > 0 {
		return b.newlines + 1
	}
	return b.newlines
}

// Take returns the retained head, the count of dropped bytes and the tail,
// and empties the buffer (releasing its memory).
func (b *headTail) Take() (head []byte, dropped int64, tail []byte) {
	head = b.head
	tail = make([]byte, 0, len(b.tail))
	tail = append(tail, b.tail[b.start:]...)
	tail = append(tail, b.tail[:b.start]...)
	dropped = b.dropped
	b.head, b.tail, b.start, b.dropped = nil, nil, 0, 0
	b.newlines, b.last = 0, 0
	return head, dropped, tail
}
