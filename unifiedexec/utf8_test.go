//go:build linux

package unifiedexec

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestUTF8SplitAcrossPolls: a character cut between two reads is held
// back until its end arrives, in a pipe and in a terminal, wherever it is
// cut, and one left incomplete at the exit comes out as U+FFFD.
func TestUTF8SplitAcrossPolls(t *testing.T) {
	m := newManager(t, Config{})
	for _, tty := range []bool{false, true} {
		for _, c := range []string{"€", "😀"} {
			for cut := 1; cut < len(c); cut++ {
				name := fmt.Sprintf("tty=%v/%q/%d", tty, c, cut)
				cmd := fmt.Sprintf(`printf 'A%s'; sleep 1; printf '%sB\n%s'`, octal(c[:cut]), octal(c[cut:]), octal(c[:cut]))
				r := exec1(t, m, ExecRequest{Cmd: cmd, TTY: tty, Yield: 250 * time.Millisecond})
				out := r.Output
				// Polls until the first half is in (the second comes a
				// second later): the cut falls between two responses.
				for out == "" && r.ExitCode == nil {
					var err error
					r, err = m.Write(context.Background(), WriteRequest{SessionID: r.SessionID})
					if err != nil {
						t.Fatal(err)
					}
					out += r.Output
				}
				if r.ExitCode != nil || out != "A" {
					t.Fatalf("%s: the first half: %q %+v", name, out, r)
				}
				for r.ExitCode == nil {
					var err error
					r, err = m.Write(context.Background(), WriteRequest{SessionID: r.SessionID, Yield: 10 * time.Second})
					if err != nil {
						t.Fatal(err)
					}
					if r.Output != "" && r.Output[0] >= 0x80 && r.Output[0] < 0xc0 {
						t.Fatalf("%s: a poll began inside a character: %q", name, r.Output)
					}
					out += r.Output
				}
				if want := "A" + c + "B\n\uFFFD"; out != want {
					t.Fatalf("%s: got %q, want %q", name, out, want)
				}
			}
		}
	}
}

func octal(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, `\%03o`, s[i])
	}
	return b.String()
}

// TestUTF8AtBufferBoundary: a character astride the end of the session
// buffer's head and the start of its tail is returned whole.
func TestUTF8AtBufferBoundary(t *testing.T) {
	m := newManager(t, Config{MaxOutputTokens: DefaultBuffer})
	for cut := 1; cut < 3; cut++ {
		r := exec1(t, m, ExecRequest{Cmd: fmt.Sprintf(`head -c %d /dev/zero | tr '\0' x; printf '€\n'`, DefaultBuffer/2-cut)})
		if want := strings.Repeat("x", DefaultBuffer/2-cut) + "€\n"; r.Output != want {
			t.Fatalf("cut %d: the character came back as %q", cut, r.Output[len(want)-8:])
		}
	}
}
