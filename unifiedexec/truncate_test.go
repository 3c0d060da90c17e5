package unifiedexec

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncateGolden(t *testing.T) {
	cases := []struct {
		name, in string
		tokens   int
		want     string
	}{
		{"fits", "hello\n", 10, "hello\n"},
		{"exact", "abcdefgh", 2, "abcdefgh"},
		{"middle", "0123456789abcdefghij", 2, "Total output lines: 1\n\n0123\n…3 tokens truncated…\nghij"},
		{"lines", "aaaa\nbbbb\ncccc\ndddd\neeee\n", 3, "Total output lines: 5\n\naaaa\n…4 tokens truncated…\neeee\n"},
		{"line end within reach", "aaaa\n" + strings.Repeat("b", 37) + "\ncc\n", 4, "Total output lines: 3\n\naaaa\n…9 tokens truncated…\nbbbb\ncc\n"},
		{"line end out of reach", "aa\n" + strings.Repeat("b", 40) + "\ncc\n", 4, "Total output lines: 3\n\naa\nbbbbb\n…8 tokens truncated…\nbbbb\ncc\n"},
		{"last line longer than the tail", "a\n" + strings.Repeat("b", 40), 4, "Total output lines: 2\n\na\nbbbbbb\n…7 tokens truncated…\nbbbbbbbb"},
		{"utf8", "ééééééééééé", 2, "Total output lines: 1\n\néé\n…4 tokens truncated…\néé"},
		{"zero", "abc", 0, "…1 tokens truncated…"},
		{"zero, empty", "", 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Truncate(c.in, c.tokens); got != c.want {
				t.Fatalf("Truncate(%q, %d) = %q, want %q", c.in, c.tokens, got, c.want)
			}
		})
	}
}

func FuzzTruncate(f *testing.F) {
	f.Add("EXEC-LINE-0001 xxxxxxxxxxxxxxxxxxxx\nEXEC-LINE-0002 xxxxxxxxxxxxxxxxxxxx\n", 5)
	f.Add("ééé\nü\n日本語のテキスト\n", 3)
	f.Add("no newline at all but long enough to cut", 4)
	f.Add("a\xffb\xfe\n", 1)
	f.Fuzz(func(t *testing.T, in string, tokens int) {
		in = strings.ToValidUTF8(in, "?")
		tokens = tokens % 100
		if tokens < 0 {
			tokens = -tokens
		}
		out := Truncate(in, tokens)
		if !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8: %q", out)
		}
		if len(in) <= tokens*4 {
			if out != in {
				t.Fatal("output that fits was changed")
			}
			return
		}
		if tokens == 0 {
			if want := "…" + strconv.Itoa((len(in)+3)/4) + " tokens truncated…"; out != want {
				t.Fatalf("budget 0: %q, want only the marker %q", out, want)
			}
			return
		}
		lines := strings.Count(in, "\n")
		if !strings.HasSuffix(in, "\n") {
			lines++
		}
		header, body, ok := strings.Cut(out, "\n\n")
		if !ok || header != "Total output lines: "+strconv.Itoa(lines) || !strings.Contains(body, " tokens truncated…") {
			t.Fatalf("missing or wrong header, or no marker: %q", out)
		}
		// The marker stands on a line of its own.
		i := strings.Index(body, "…")
		j := strings.LastIndex(body, "tokens truncated…") + len("tokens truncated…")
		if i > 0 && body[i-1] != '\n' || j >= len(body) || body[j] != '\n' {
			t.Fatalf("the marker is not on a line of its own: %q", body)
		}
		head, tail := body[:i], body[j+1:]
		// A head cut inside a line got a line end of its own (which the
		// input may have right there): one byte more than the budget.
		if len(head)+len(tail) > tokens*4+1 || len(head)+len(tail) > tokens*4 && !strings.HasSuffix(head, "\n") {
			t.Fatalf("kept %d bytes over a budget of %d", len(head)+len(tail), tokens*4)
		}
		if head != "" && !strings.HasPrefix(in, head) {
			head = strings.TrimSuffix(head, "\n")
		}
		if !strings.HasPrefix(in, head) || !strings.HasSuffix(in, tail) {
			t.Fatalf("head/tail not from the input: %q / %q", head, tail)
		}
		// A cut splits a line only when no line end was within reach.
		headBudget := tokens * 4 / 2
		tailBudget := tokens*4 - headBudget
		if h := len(head); h > 0 && in[h-1] != '\n' {
			if nl := strings.LastIndexByte(in[:h], '\n'); nl >= 0 && h-(nl+1) <= headBudget/2 {
				t.Fatalf("the head cut a line with a line end %d bytes back: %q", h-(nl+1), head)
			}
		}
		if tl := len(in) - len(tail); tl > 0 && in[tl-1] != '\n' {
			if k := strings.IndexByte(in[tl:], '\n'); k >= 0 && k+1 <= tailBudget/2 && tl+k+1 < len(in) {
				t.Fatalf("the tail cut a line with a line end %d bytes on: %q", k+1, tail)
			}
		}
		// The last line survives whenever it fits in the tail budget.
		last := in[strings.LastIndexByte(strings.TrimSuffix(in, "\n"), '\n')+1:]
		if len(last) <= tokens*4-tokens*4/2 && !strings.HasSuffix(tail, last) {
			t.Fatalf("last line %q lost: tail %q", last, tail)
		}
	})
}

func FuzzHeadTail(f *testing.F) {
	f.Add([]byte("hello world"), 8, uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, capacity int, chunk uint8) {
		capacity = capacity % 64
		if capacity < 0 {
			capacity = -capacity
		}
		b := newHeadTail(capacity)
		step := int(chunk%17) + 1
		for i := 0; i < len(data); i += step {
			b.Write(data[i:min(i+step, len(data))])
		}
		if b.Total() != int64(len(data)) {
			t.Fatalf("total %d != %d", b.Total(), len(data))
		}
		lines := int64(bytes.Count(data, []byte{'\n'}))
		if len(data) > 0 && data[len(data)-1] != '\n' {
			lines++
		}
		if b.Lines() != lines {
			t.Fatalf("lines %d, want %d", b.Lines(), lines)
		}
		head, dropped, tail := b.Take()
		if int64(len(head)+len(tail))+dropped != int64(len(data)) {
			t.Fatal("bytes lost from the count")
		}
		if !bytes.HasPrefix(data, head) || !bytes.HasSuffix(data, tail) {
			t.Fatalf("head %q / tail %q not from %q", head, tail, data)
		}
		if len(data) <= capacity && dropped != 0 {
			t.Fatal("dropped bytes that fit")
		}
	})
}

func TestCleaner(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain\n", "plain\n"},
		{"\x1b[1;31mred\x1b[0m\n", "red\n"},
		{"10%\r50%\r100%\n", "100%\n"},
		{"abc\rX\n", "Xbc\n"},
		{"line\r\n", "line\n"},
		{"\x1b]0;title\x07text\n", "text\n"},
		{"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\n", "link\n"},
		{"ab\bc\n", "ac\n"},
		{"progress 1\r\x1b[Kprogress 2\n", "progress 2\n"},
		{"\x1b(Bok\n", "ok\n"},
		{"\x1b[?25lhidden cursor\x1b[?25h\n", "hidden cursor\n"},
	}
	for _, c := range cases {
		var out bytes.Buffer
		cl := cleaner{out: func(b []byte) { out.Write(b) }}
		// Byte by byte, so split sequences are covered too.
		for i := 0; i < len(c.in); i++ {
			cl.Write([]byte{c.in[i]})
		}
		cl.flushPartial()
		if out.String() != c.want {
			t.Errorf("%q: got %q want %q", c.in, out.String(), c.want)
		}
		out.Reset()
		cl = cleaner{out: func(b []byte) { out.Write(b) }}
		cl.Write([]byte(c.in))
		cl.flushPartial()
		if out.String() != c.want {
			t.Errorf("%q (one write): got %q want %q", c.in, out.String(), c.want)
		}
	}
}

func TestEncodeKeys(t *testing.T) {
	cases := map[string]string{
		"Up": "\x1b[A", "C-c": "\x03", "Enter": "\r", "M-x": "\x1bx", "F5": "\x1b[15~",
		"PageUp": "\x1b[5~", "S-Tab": "\x1b[Z", "C-d": "\x04", "Escape": "\x1b", "a": "a", "C-M-a": "\x1b\x01",
	}
	for k, want := range cases {
		got, err := EncodeKeys([]string{k})
		if err != nil || string(got) != want {
			t.Errorf("%s: got %q %v want %q", k, got, err, want)
		}
	}
	for _, bad := range []string{"", "Hyper-Q", "C-Up", "Foo"} {
		if _, err := EncodeKeys([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzEncodeKeys(f *testing.F) {
	for _, k := range []string{"C-c", "M-x", "Up", "F5", "S-Tab", "C-M-a", "", "Hyper-Q", "é"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, k string) {
		b, err := EncodeKeys([]string{k})
		if err == nil && len(b) == 0 {
			t.Fatalf("%q encoded to nothing", k)
		}
		if err != nil && !strings.Contains(err.Error(), "keys:") {
			t.Fatalf("unclear error %v", err)
		}
	})
}

// TestTranscriptBounded: past its cap the transcript drops old blocks but
// keeps numbering lines from the start of the session.
func TestTranscriptBounded(t *testing.T) {
	var tr transcript
	for i := 1; i <= 200_000; i++ {
		tr.Write([]byte(strings.Repeat("x", 10) + " " + strconv.Itoa(i) + "\n"))
	}
	if tr.size > transcriptMax+transcriptBlock {
		t.Fatalf("transcript holds %d bytes", tr.size)
	}
	lines, first, total := tr.Lines(-1, 2)
	if total != 200_000 || first != 199_998 || lines[1] != "xxxxxxxxxx 200000" {
		t.Fatalf("tail: %v %d %d", lines, first, total)
	}
	lines, first, _ = tr.Lines(0, 1)
	if len(lines) != 1 || !strings.HasSuffix(lines[0], " "+strconv.Itoa(first+1)) {
		t.Fatalf("oldest kept line %v numbered %d", lines, first)
	}
}

// TestPlainLen: the word-at-a-time scan stops exactly where a byte-at-a-
// time scan of the special table (and of the characters above ASCII)
// does, wherever the special byte sits.
func TestPlainLen(t *testing.T) {
	naive := func(p []byte) int {
		i := 0
		for i < len(p) {
			if p[i] < 0x80 {
				if special[p[i]] {
					break
				}
				i++
				continue
			}
			n, ctl := highRune(p[i:])
			if n == 0 || ctl != 0 {
				break
			}
			i += n
		}
		return i
	}
	naiveASCII := func(p []byte) int {
		i := 0
		for i < len(p) && !special[p[i]] && p[i] < 0x80 {
			i++
		}
		return i
	}
	check := func(p []byte) {
		t.Helper()
		if got, want := asciiLen(p), naiveASCII(p); got != want {
			t.Fatalf("asciiLen(%q) = %d, want %d", p, got, want)
		}
		if got, want := plainLen(p), naive(p); got != want {
			t.Fatalf("plainLen(%q) = %d, want %d", p, got, want)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 20000; n++ {
		p := make([]byte, r.IntN(40))
		for i := range p {
			const alphabet = "abc\n\t\xc3\xa9 ~\x7f\x1b\r\x00\x80\xff\xc2\x9b\xe2\x82\xac"
			p[i] = alphabet[r.IntN(len(alphabet))]
			if r.IntN(4) > 0 {
				p[i] = byte('a' + r.IntN(26))
			}
		}
		check(p)
	}
	for b := 0; b < 256; b++ {
		for pos := 0; pos < 41; pos++ {
			p := []byte(strings.Repeat("x", 41))
			p[pos] = byte(b)
			check(p)
		}
	}
}
