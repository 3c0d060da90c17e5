//go:build linux

package ptyrun

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestWaitingForInputOpensNoPathOfTheCommands: the look for pending input
// opens the session's terminal through its master, never by a path the
// command can make lead elsewhere. A root command may chroot: the
// terminal's name under its leader's root (/proc/PID/root/dev/pts/N) was
// then a link of its making, opened by the program outside every sandbox
// with all its rights (red team 42 had it open a FIFO of its choosing; a
// device node would be opened the same way).
func TestWaitingForInputOpensNoPathOfTheCommands(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a command's chroot needs CAP_SYS_CHROOT (root)")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3 (the command chroots with it)")
	}
	for _, m := range modes(t) {
		if !m.tty {
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			dir := t.TempDir()
			fifo := filepath.Join(dir, "bait")
			if err := unix.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			// The command puts its terminal's name, in a root of its own,
			// as a link to the FIFO, chroots there and waits on its
			// terminal.
			script := fmt.Sprintf(`import os, sys
tty = os.ttyname(0)
fake = %q
os.makedirs(fake + os.path.dirname(tty), exist_ok=True)
os.symlink(%q, fake + tty)
os.chroot(fake)
print("chrooted", flush=True)
sys.stdin.readline()
`, filepath.Join(dir, "fake"), fifo)
			var out syncBuf
			p, err := Start(Spec{Argv: []string{"python3", "-c", script}, TTY: true, Output: &out, Helper: m.helper})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Kill(0) })
			waitFor(t, func() bool { return strings.Contains(out.String(), "chrooted") })
			// A writer's open of the FIFO returns once anything opens it
			// to read.
			opened := make(chan struct{})
			go func() {
				if fd, err := unix.Open(fifo, unix.O_WRONLY|unix.O_CLOEXEC, 0); err == nil {
					unix.Close(fd)
				}
				close(opened)
			}()
			defer func() {
				// Unblock the writer whatever happened.
				if fd, err := unix.Open(fifo, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
					<-opened
					unix.Close(fd)
				}
			}()
			waiting := false
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && !waiting; {
				waiting = p.WaitingForInput()
				select {
				case <-opened:
					t.Fatal("the look for pending input opened the FIFO the command linked at its terminal's name")
				default:
				}
				time.Sleep(50 * time.Millisecond)
			}
			select {
			case <-opened:
				t.Fatal("the look for pending input opened the FIFO the command linked at its terminal's name")
			case <-time.After(300 * time.Millisecond):
			}
			if !waiting {
				t.Fatalf("the command, blocked reading its terminal, was never seen waiting for input; output %q", out.String())
			}
		})
	}
}
