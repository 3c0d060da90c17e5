package ptyrun

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// WaitingForInput reports whether the terminal's foreground process is
// blocked reading the terminal — in read(2) on it, or in poll/select with
// it the only descriptor it waits on, with no timeout or one of at least
// [SettledWait] — or, for a shell running a pipeline, one of its children
// in the group is while the others wait too (see settled) — no input is
// pending for it, and everything it printed has been delivered to
// Spec.Output. A program that merely sleeps, computes or waits on the
// network is not waiting for input, nor is one that waits briefly on its
// terminal before acting on its own (vim, on its way out, waits 100 ms
// for a terminal's answers and then restores the terminal, discarding
// what was typed meanwhile). Always false for pipe sessions.
func (p *Process) WaitingForInput() bool {
	if p.input == nil || p.ttyName == "" {
		return false
	}
	// Settled means seen the same way on two looks in a row — the same
	// processes in the same calls, none having run in between (their
	// context switches unchanged) — and unchanged across the checks of
	// pending input and output below: a shell that looks blocked on its
	// terminal for an instant, or that wakes to read what was typed
	// while the checks run (a loaded machine can pause this goroutine
	// for milliseconds), is not waiting.
	seen := p.lookAtForeground()
	p.waitMu.Lock()
	again := seen != "" && seen == p.lastSeen
	p.lastSeen = seen
	p.waitMu.Unlock()
	if !again || p.pendingInput() {
		return false
	}
	// Blocked reading: what it printed before is in the terminal or
	// already delivered.
	return p.drained() && p.lookAtForeground() == seen
}

// lookAtForeground describes the terminal's foreground job when it is
// settled with a process reading the terminal (see settled), "" otherwise.
func (p *Process) lookAtForeground() string {
	// Not Fd(): it would put the master back into blocking mode.
	rc, err := p.input.SyscallConn()
	if err != nil {
		return ""
	}
	pgid := 0
	rc.Control(func(fd uintptr) { pgid, err = unix.IoctlGetInt(int(fd), unix.TIOCGPGRP) })
	if err != nil || pgid <= 0 {
		return ""
	}
	var seen strings.Builder
	fmt.Fprintf(&seen, "%d|", pgid)
	if ok, reading := settled(pgid, pgid, p.ttyName, 0, &seen); !ok || !reading {
		return ""
	}
	return seen.String()
}

// SettledWait is the shortest timeout of a poll or select on the terminal
// that counts as waiting for input: a shorter wait is a program about to
// act on its own. vim waits 100 ms for a terminal's answers on its way
// out, and 1 s (timeoutlen) after a lone Escape to tell the key from the
// start of a sequence; both end in the program acting on what it read.
const SettledWait = 2 * time.Second

// pendingInput reports whether the terminal holds input its reader has
// not consumed yet. What is written to a pty's master reaches the reading
// side through a kernel work queue; a poll of that side waits for the
// queue (a bare TIOCINQ does not, and a loaded machine left typed input
// unseen for longer than a turn's first look), then says whether a read
// would return. That side is opened from the master (TIOCGPTPEER), never
// by a path: the terminal's name under the session leader's root was a
// path the command makes (a root command chroots into a folder where
// dev/pts/N is a link to any file of the host's, which this program,
// outside every sandbox, then opened: red team 42).
func (p *Process) pendingInput() bool {
	rc, err := p.input.SyscallConn()
	if err != nil {
		return true // cannot tell: assume busy
	}
	fd := -1
	rc.Control(func(m uintptr) {
		r, _, errno := unix.Syscall(unix.SYS_IOCTL, m, unix.TIOCGPTPEER, uintptr(unix.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC))
		if errno == 0 {
			fd = int(r)
		}
	})
	if fd < 0 {
		return true // cannot tell: assume busy
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n > 0 && fds[0].Revents&(unix.POLLIN|unix.POLLERR|unix.POLLNVAL) != 0 {
			return true
		}
		break
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCINQ)
	return err != nil || n > 0
}

// settled reports whether the process pid of the terminal's foreground
// group pgid waits for nothing but the terminal: blocked reading it
// (reading), or waiting for its children (a shell running a pipeline)
// while each child in the group is settled, or blocked writing into a
// pipe (to a reader that waits), or a zombie. A shell's pipeline such as
// `seq 100 | less` is then waiting for input when less is.
//
// It writes what it saw of each process into seen: its pid, call,
// arguments and context switches.
func settled(pid, pgid int, tty string, depth int, seen *strings.Builder) (ok, reading bool) {
	state, pgrp := procState(pid)
	switch {
	case state == 'Z' || state == 'X':
		return true, false
	case state == 0:
		return false, false
	case pgrp != pgid:
		return true, false // not in the foreground
	}
	nr, args, err := procSyscall(pid)
	if err != nil {
		return false, false
	}
	fmt.Fprintf(seen, "%d:%d:%x:%s;", pid, nr, args, contextSwitches(pid))
	switch nr {
	case calls.wait4, calls.waitid:
		if depth >= 4 {
			return false, false
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
		if err != nil {
			return false, false
		}
		for _, f := range strings.Fields(string(b)) {
			child, err := strconv.Atoi(f)
			if err != nil {
				return false, false
			}
			ok, r := settled(child, pgid, tty, depth+1, seen)
			if !ok {
				return false, false
			}
			reading = reading || r
		}
		return true, reading
	case calls.write:
		target, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(int(args[0])))
		return err == nil && strings.HasPrefix(target, "pipe:"), false
	}
	return blockedOnTTY(pid, tty), true
}

// contextSwitches is how often a process gave up or lost its CPU so far
// (voluntary and not), "" if unknown: it changes whenever the process
// runs.
func contextSwitches(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return ""
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasSuffix(strings.SplitN(l, ":", 2)[0], "ctxt_switches") {
			out = append(out, strings.TrimSpace(strings.SplitN(l, ":", 2)[1]))
		}
	}
	return strings.Join(out, "/")
}

// procState reads a process's state letter and process group (0 when it
// is gone).
func procState(pid int) (state byte, pgrp int) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0
	}
	// pid (comm) state ppid pgrp ...: comm may hold anything but ends at
	// the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0
	}
	pgrp, _ = strconv.Atoi(f[2])
	return f[0][0], pgrp
}

// procSyscall reads the system call a blocked process is in and its
// arguments; an error for a running process.
func procSyscall(pid int) (nr int, args [6]uint64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/syscall")
	if err != nil {
		return 0, args, err
	}
	f := strings.Fields(string(b))
	if len(f) < 7 || f[0] == "running" {
		return 0, args, errRunning
	}
	nr, err = strconv.Atoi(f[0])
	if err != nil {
		return 0, args, err
	}
	for i := range args {
		args[i], _ = strconv.ParseUint(strings.TrimPrefix(f[1+i], "0x"), 16, 64)
	}
	return nr, args, nil
}

var errRunning = errors.New("running")

// syscall numbers of the calls that wait on a terminal, for children, or
// on a pipe.
type waitCalls struct{ read, poll, ppoll, sel, pselect, wait4, waitid, write int }

func (w waitCalls) valid() bool { return w.read >= 0 }

var calls = func() waitCalls {
	switch runtime.GOARCH {
	case "amd64":
		return waitCalls{read: 0, poll: 7, ppoll: 271, sel: 23, pselect: 270, wait4: 61, waitid: 247, write: 1}
	case "arm64":
		return waitCalls{read: 63, poll: -1, ppoll: 73, sel: -1, pselect: 72, wait4: 260, waitid: 95, write: 64}
	}
	return waitCalls{read: -1, poll: -1, ppoll: -1, sel: -1, pselect: -1, wait4: -1, waitid: -1, write: -1}
}()

func blockedOnTTY(pid int, tty string) bool {
	if !calls.valid() {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/syscall")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	if len(f) < 4 || f[0] == "running" {
		return false
	}
	nr, err := strconv.Atoi(f[0])
	if err != nil {
		return false
	}
	arg := func(i int) uint64 {
		v, _ := strconv.ParseUint(strings.TrimPrefix(f[1+i], "0x"), 16, 64)
		return v
	}
	isTTY := func(fd int) bool {
		target, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(fd))
		return err == nil && target == tty
	}
	// timed reports whether the wait has a timeout shorter than
	// SettledWait: the timeout argument of poll in ms, or a pointer to a
	// timespec (ppoll, pselect6) or timeval (select), NULL for none.
	timed := func(nr int) bool {
		var ns int64
		switch nr {
		case calls.poll:
			ms := int32(arg(2))
			if ms < 0 {
				return false
			}
			ns = int64(ms) * int64(time.Millisecond)
		default:
			i := 2
			if nr == calls.sel || nr == calls.pselect {
				i = 4
			}
			if arg(i) == 0 {
				return false
			}
			var t [16]byte
			if !readMem(pid, arg(i), t[:]) {
				return true // cannot tell: not settled
			}
			sec, frac := int64(binary.LittleEndian.Uint64(t[:])), int64(binary.LittleEndian.Uint64(t[8:]))
			if nr == calls.sel {
				frac *= 1000 // microseconds
			}
			if sec >= int64(SettledWait/time.Second)+1 {
				return false
			}
			ns = sec*int64(time.Second) + frac
		}
		return ns < int64(SettledWait)
	}
	switch nr {
	case calls.read:
		return isTTY(int(arg(0)))
	case calls.poll, calls.ppoll, calls.sel, calls.pselect:
		if timed(nr) {
			return false
		}
	}
	switch nr {
	case calls.poll, calls.ppoll:
		n := min(int(arg(1)), 64)
		buf := make([]byte, 8*n)
		if !readMem(pid, arg(0), buf) {
			return false
		}
		// Only the terminal: a program that also waits on something
		// else (script, ssh, a server) is not just waiting for input.
		found := false
		for i := 0; i < n; i++ {
			fd := int(int32(binary.LittleEndian.Uint32(buf[8*i:])))
			events := binary.LittleEndian.Uint16(buf[8*i+4:])
			if fd < 0 || events&unix.POLLIN == 0 {
				continue
			}
			if !isTTY(fd) {
				return false
			}
			found = true
		}
		return found
	case calls.sel, calls.pselect:
		nfds := min(int(arg(0)), 1024)
		if arg(1) == 0 || nfds == 0 {
			return false
		}
		buf := make([]byte, (nfds+7)/8)
		if !readMem(pid, arg(1), buf) {
			return false
		}
		found := false
		for fd := 0; fd < nfds; fd++ {
			if buf[fd/8]&(1<<(fd%8)) != 0 {
				if !isTTY(fd) {
					return false
				}
				found = true
			}
		}
		return found
	}
	return false
}

func readMem(pid int, addr uint64, buf []byte) bool {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mem")
	if err != nil {
		return false
	}
	defer f.Close()
	n, err := f.ReadAt(buf, int64(addr))
	return err == nil && n == len(buf)
}
