//go:build !linux

package unifiedexec

import (
	"errors"
	"os"

	"github.com/unified-exec/unified-exec/ptyrun"
)

func isTerminal(f *os.File) bool { return false }

func notifyResize(ch chan os.Signal) {}

// terminalMirror is Linux-only; isTerminal never lets Stream make one.
type terminalMirror struct{}

func newTerminalMirror(in, out *os.File) (*terminalMirror, error) {
	return nil, errors.New("terminal mirroring is Linux-only")
}
func (t *terminalMirror) restore()                     {}
func (t *terminalMirror) size() (rows, cols uint16)    { return 24, 80 }
func (t *terminalMirror) startInput(p *ptyrun.Process) {}
func (t *terminalMirror) stopInput()                   {}

func stopResize(ch chan os.Signal) {}

func (t *terminalMirror) pause()  {}
func (t *terminalMirror) resume() {}

// IsTerminal is false here (see isTerminal).
func IsTerminal(f *os.File) bool { return isTerminal(f) }
