//go:build linux

package unifiedexec

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestNoTextTwice: a partial line handed out once (a prompt) is not
// handed out again when the line is finished or redrawn the same, in the
// responses and in read_log.
func TestNoTextTwice(t *testing.T) {
	m := newManager(t, Config{})
	for _, c := range []struct{ name, cmd string }{
		{"read -p", `read -p 'Name: ' n; echo "hi $n"`},
		{"read -e (readline)", `read -e -p 'Name: ' n; echo "hi $n"`},
		{"python input", `python3 -c "n = input('Name: '); print('hi', n)"`},
	} {
		r := exec1(t, m, ExecRequest{Cmd: c.cmd, TTY: true, Yield: 20 * time.Second})
		if r.Output != "Name: " || !slices.Contains(r.Notes, WaitingNote) {
			t.Fatalf("%s: prompt: %+v", c.name, r)
		}
		w, err := m.Write(context.Background(), WriteRequest{SessionID: r.SessionID, Chars: "bob\n", Yield: 20 * time.Second})
		if err != nil || w.Output != "bob\nhi bob\n" {
			t.Fatalf("%s: after the prompt: %v %q", c.name, err, w.Output)
		}
	}

	// An interactive shell: read_log has each prompt once.
	id := shellSession(t, m)
	for _, cmd := range []string{"echo one\n", "echo two\n"} {
		turn(t, m, id, cmd)
	}
	lines, _, _, err := m.Log(id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"PROMPT> echo one", "one", "PROMPT> echo two", "two", "PROMPT> "}
	if !slices.Equal(lines, want) {
		t.Fatalf("read_log:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}
