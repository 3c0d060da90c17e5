//go:build unified_exec_novt

package unifiedexec

// Built with the tag unified_exec_novt (scripts/build gives it to
// unified-exec, the wrapper: its commands' output goes to a real terminal
// or a pipe, never to a screen), a session keeps no screen: a full-screen
// program's output is a stream, as past maxScreens in the emulator's
// build. The terminal emulator and the packages under it are then not
// linked in, and their initialisation is not paid by each wrapped
// command's start.

type screen struct{}

func newScreen(cols, rows int, reply func([]byte)) *screen { return nil }

func (*screen) write(p []byte)        {}
func (*screen) resize(cols, rows int) {}
func (*screen) stop()                 {}
func (*screen) render() string        { return "" }
