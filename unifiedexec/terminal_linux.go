package unifiedexec

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/unified-exec/unified-exec/ptyrun"
	"golang.org/x/sys/unix"
)

// notifyResize sends the window-size changes of the caller's terminal
// (SIGWINCH) on ch.
func notifyResize(ch chan os.Signal) { signal.Notify(ch, syscall.SIGWINCH) }

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// terminalMirror puts the caller's terminal in raw mode for as long as
// the command runs in its own, and copies keys to it.
type terminalMirror struct {
	in, out *os.File
	saved   *unix.Termios
	raw     unix.Termios
	once    sync.Once
	p       *ptyrun.Process // whose terminal the keys go to, once started

	// inMu guards the input copier: a goroutine that polls in and a pipe
	// that wakes it to end. It is held while the copier is started or
	// stopped (a stop waits for the copier, which takes no lock).
	inMu         sync.Mutex
	paused       bool
	wakeR, wakeW *os.File
	inputDone    chan struct{}
}

func newTerminalMirror(in, out *os.File) (*terminalMirror, error) {
	fd := int(in.Fd())
	saved, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, fmt.Errorf("reading the terminal's mode: %w", err)
	}
	raw := *saved
	// cfmakeraw
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN] = 1
	raw.Cc[unix.VTIME] = 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
		return nil, fmt.Errorf("setting the terminal to raw mode: %w", err)
	}
	return &terminalMirror{in: in, out: out, saved: saved, raw: raw}, nil
}

// restore puts the caller's terminal back as it was, for good.
func (t *terminalMirror) restore() {
	t.once.Do(func() {
		unix.IoctlSetTermios(int(t.in.Fd()), unix.TCSETS, t.saved)
	})
}

// pause hands the caller's terminal back (its mode as it was, no keys
// copied) so that a person can be asked a question on it while the
// command runs; resume takes it again. A copier started while paused
// waits for resume.
func (t *terminalMirror) pause() {
	t.inMu.Lock()
	defer t.inMu.Unlock()
	t.paused = true
	t.stopInputLocked()
	unix.IoctlSetTermios(int(t.in.Fd()), unix.TCSETS, t.saved)
}

func (t *terminalMirror) resume() {
	t.inMu.Lock()
	defer t.inMu.Unlock()
	t.paused = false
	unix.IoctlSetTermios(int(t.in.Fd()), unix.TCSETS, &t.raw)
	if t.p != nil {
		t.startInputLocked(t.p)
	}
}

// size is the caller's window size (24×80 when unknown).
func (t *terminalMirror) size() (rows, cols uint16) {
	for _, f := range []*os.File{t.out, t.in} {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Row > 0 && ws.Col > 0 {
			return ws.Row, ws.Col
		}
	}
	return 24, 80
}

// startInput copies keys from the caller's terminal to p until
// stopInput. The caller's file stays blocking (its mode is shared with
// the shell it came from): the copier polls it with a wake-up pipe.
func (t *terminalMirror) startInput(p *ptyrun.Process) {
	t.inMu.Lock()
	defer t.inMu.Unlock()
	t.p = p
	if !t.paused {
		t.startInputLocked(p)
	}
}

func (t *terminalMirror) startInputLocked(p *ptyrun.Process) {
	if t.wakeW != nil {
		return // running
	}
	r, w, err := os.Pipe()
	if err != nil {
		return
	}
	done := make(chan struct{})
	t.wakeR, t.wakeW, t.inputDone = r, w, done
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		fds := []unix.PollFd{{Fd: int32(t.in.Fd()), Events: unix.POLLIN}, {Fd: int32(r.Fd()), Events: unix.POLLIN}}
		for {
			fds[0].Revents, fds[1].Revents = 0, 0
			if _, err := unix.Poll(fds, -1); err != nil {
				if errors.Is(err, unix.EINTR) {
					continue
				}
				return
			}
			if fds[1].Revents != 0 {
				return
			}
			if fds[0].Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) == 0 {
				continue
			}
			n, err := unix.Read(int(t.in.Fd()), buf)
			if n > 0 {
				if _, err := p.Write(buf[:n]); err != nil {
					return
				}
			}
			if n == 0 || (err != nil && !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.EAGAIN)) {
				return
			}
		}
	}()
}

// stopInput ends the key copier and waits for it.
func (t *terminalMirror) stopInput() {
	t.inMu.Lock()
	defer t.inMu.Unlock()
	t.stopInputLocked()
}

func (t *terminalMirror) stopInputLocked() {
	if t.wakeW == nil {
		return
	}
	t.wakeW.Write([]byte{0})
	<-t.inputDone
	t.wakeW.Close()
	t.wakeR.Close()
	t.wakeW, t.wakeR = nil, nil
}

// stopResize ends notifyResize.
func stopResize(ch chan os.Signal) { signal.Stop(ch) }

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool { return isTerminal(f) }
