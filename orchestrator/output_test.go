package orchestrator

import (
	"io"
	"os"
	"testing"
)

// runOutput gives a wrapper run a stdout and stderr that both end in w
// (through one pipe, as a terminal would interleave them); done closes the
// pipe and waits for the last byte to reach w.
func runOutput(t *testing.T, w io.Writer) (out *os.File, done func()) {
	t.Helper()
	r, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		io.Copy(w, r)
		r.Close()
	}()
	var closed bool
	done = func() {
		if !closed {
			closed = true
			pw.Close()
			<-copied
		}
	}
	t.Cleanup(done)
	return pw, done
}
