//go:build linux

package ptyrun

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// TestMasterNotInherited: a command started while another session sets
// up its terminal holds no terminal master: with one, it could read the
// other session's output and type into it. Sessions start two at a time
// while a goroutine keeps making the non-blocking copy of a master that
// every terminal session's start makes; each command lists its own fds.
func TestMasterNotInherited(t *testing.T) {
	master, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	tty.Close()
	defer master.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// Owner: this test; it ends when stop is closed.
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			nb, err := nonblocking(master)
			if err != nil {
				t.Error(err)
				return
			}
			nb.Close()
		}
	})
	defer func() {
		close(stop)
		wg.Wait()
	}()
	const rounds = 40
	for _, m := range []mode{{"pipe", false, nil}, {"pty", true, nil}, {"pipe-thread", false, threadHelper()}} {
		t.Run(m.name, func(t *testing.T) {
			var spawns sync.WaitGroup
			for range 2 {
				spawns.Go(func() {
					for i := 0; i < rounds && !t.Failed(); i++ {
						out, err := listFds(m)
						if err != nil {
							t.Error(err)
							return
						}
						if strings.Contains(out, "ptmx") {
							t.Errorf("round %d: the command holds a terminal master:\n%s", i, out)
						}
					}
				})
			}
			spawns.Wait()
		})
	}
}

// listFds starts ls on the command's own fds in mode m and returns what
// it printed.
func listFds(m mode) (string, error) {
	var out syncBuf
	p, err := Start(Spec{Argv: []string{"/bin/ls", "-l", "/proc/self/fd/"}, TTY: m.tty, Output: &out, Helper: m.helper})
	if err != nil {
		return "", err
	}
	select {
	case <-p.Done():
	case <-time.After(20 * time.Second):
		p.Kill(0)
		return "", fmt.Errorf("ls did not finish")
	}
	return out.String(), nil
}
