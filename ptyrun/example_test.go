//go:build linux

package ptyrun_test

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/unified-exec/unified-exec/ptyrun"
)

// syncBuffer is the output sink: the pump writes it while we read.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// A command in a terminal of its own: its output arrives through the
// pump, and Done closes once it has exited and everything was read.
func ExampleStart() {
	var out syncBuffer
	p, err := ptyrun.Start(ptyrun.Spec{Argv: []string{"/bin/sh", "-c", "tty >/dev/null && echo in a terminal"}, TTY: true, Output: &out})
	if err != nil {
		fmt.Println(err)
		return
	}
	<-p.Done()
	out.mu.Lock()
	defer out.mu.Unlock()
	fmt.Printf("%s, %s", bytes.TrimSpace(out.b.Bytes()), p.ExitStatus())
	// Output: in a terminal, exit 0
}
