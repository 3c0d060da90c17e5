//go:build unix

package ptyrun

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/unified-exec/unified-exec/internal/tracepoint"
)

// Start spawns the command of spec and starts pumping its output into
// spec.Output. The returned Process owns the child, the terminal or pipes,
// and the pump goroutine; they end when the process has exited and its
// output was drained ([Process.Done]), or after [Process.Kill].
func Start(spec Spec) (*Process, error) {
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return nil, errors.New("empty command")
	}
	if spec.Output == nil {
		spec.Output = io.Discard
	}
	if spec.Dir != "" {
		st, err := os.Stat(spec.Dir)
		if err != nil {
			return nil, fmt.Errorf("working directory %q: %w", spec.Dir, errors.Unwrap(err))
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("working directory %q is not a directory", spec.Dir)
		}
	}
	if _, err := exec.LookPath(spec.Argv[0]); err != nil {
		return nil, fmt.Errorf("program %q %w", spec.Argv[0], ErrNotFound)
	}
	if spec.Helper != nil && (spec.Helper.Thread == nil || spec.Helper.Isolate) && !helperInstalled {
		return nil, ErrHelperNotInstalled
	}
	p := &Process{
		spec:    spec,
		exited:  make(chan struct{}),
		done:    make(chan struct{}),
		removed: make(chan struct{}),
		pumpEnd: make(chan struct{}),
	}
	if spec.Pending != nil {
		spec.Pending.Add(1)
	}
	if err := p.start(); err != nil {
		if spec.Pending != nil {
			spec.Pending.Done()
		}
		return nil, err
	}
	return p, nil
}

// Process is one running command. Its methods are safe for concurrent use.
type Process struct {
	spec Spec
	cmd  *exec.Cmd

	// input is the PTY master (write side) or nil for pipe sessions.
	input *os.File
	// output is what the pump reads: the PTY master or the read end of
	// the pipe shared by stdout and stderr.
	output *os.File
	// status is the read end of the helper's status pipe, or nil.
	status *os.File
	marker string
	// limit is the session's pids cgroup, or nil without Spec.MaxProcs.
	limit *procLimit
	// spare is the thread prepared in limit that forks the command, when
	// Spec.Forker had one.
	spare *spare
	// forkTid and forkHome: the thread that forked the command into a v1
	// cgroup, and its own cgroup (written before the fork, read after).
	forkTid, forkHome string
	// movedOut is closed once a sandboxed forking thread has been moved
	// out of the session's v1 cgroup (nil when there was no such move).
	movedOut chan struct{}
	// refused is the limit's final count, kept once limitGone is set.
	refused   atomic.Int64
	limitGone atomic.Bool
	// ttyName is the terminal's slave device, e.g. /dev/pts/3.
	ttyName string
	// mntNS is the session's own mount namespace, as /proc/PID/ns/mnt
	// reads, "" for none, and mntFile holds it open until the session is
	// removed (see keepMountNS); guarded by mu.
	mntNS   string
	mntFile *os.File
	// ttyOnThread: the terminal is opened on the forking thread (in the
	// session's own instance).
	ttyOnThread bool
	// threadSandbox: the command is forked from a thread its sandbox is
	// applied to (Helper.Thread), which may have been warmed for it.
	threadSandbox bool
	// ttyOwnInstance: the terminal is in a terminal instance of the
	// session's own (opened on the forking thread, or by the helper);
	// here its name is reached through the session's root (see ttyPath).
	ttyOwnInstance bool

	exited  chan struct{} // closed when the leader has been reaped
	pumpEnd chan struct{} // closed when the pump saw EOF/EIO
	done    chan struct{} // closed when exited and drained
	removed chan struct{} // closed after done, once the session's cgroup is removed

	killOnce sync.Once
	// parked is odd while the pump waits for output (see pump).
	parked atomic.Uint64

	// waitMu guards lastSeen: what the last look at the foreground job
	// saw (see WaitingForInput).
	waitMu   sync.Mutex
	lastSeen string

	// killMu makes the passes of killTree one after the other, and
	// orders them with the reaping of the leader (see wait).
	killMu sync.Mutex
	// leaderReaped: the leader has been reaped, its number (and so its
	// group's and its session's, once they are empty) may be any new
	// process's, of any program. Set under killMu: a kill pass never
	// signals by the number once it is set.
	leaderReaped bool

	// mu guards the fields below.
	mu     sync.Mutex
	exit   ExitStatus
	killed bool
	seen   []seenProc // descendants found by their marker, to reap once dead
}

func (p *Process) start() error {
	spec := p.spec
	env := append([]string(nil), spec.Env...)
	if spec.Env == nil {
		env = os.Environ()
	}
	p.marker = newMarker()
	env = append(env, markerEnv+"="+p.marker)
	isolate := spec.Helper != nil && spec.Helper.Isolate
	// A helper with Thread set and no isolation applies its payload to
	// the forking thread instead of being re-executed.
	thread := spec.Helper != nil && spec.Helper.Thread != nil && !isolate
	reexec := spec.Helper != nil && !thread
	// A cgroup holds the session's process limit, and, without a PID
	// namespace, lists every process of the session for an exact kill.
	ok := false
	defer func() {
		if !ok {
			p.spare.discardTaken()
			if p.limit != nil {
				p.limit.close()
			}
		}
	}()
	available, _ := ProcessLimitAvailable()
	p.threadSandbox = thread
	if spec.MaxProcs > 0 || (available && !isolate) || (thread && !available) {
		// A thread prepared in a cgroup of its own, when there is one,
		// warmed for a thread sandbox where the Forker warms them.
		tracepoint.Mark("session: taking a prepared thread")
		// A thread sandboxed ahead serves a thread sandbox with
		// nothing to do before it (Enter joins a namespace, which a
		// sandboxed thread can no longer do).
		var payload []byte
		if thread && spec.Helper.Enter == nil {
			payload = spec.Helper.Payload
		}
		p.spare = spec.Forker.take(thread, payload)
		if payload != nil {
			// The next call's plan will likely be this one: threads
			// are sandboxed for it ahead.
			spec.Forker.Expect(payload)
		}
		if p.spare != nil && p.spare.limit != nil {
			p.limit = p.spare.limit
			if err := p.limit.setMax(spec.MaxProcs); err != nil {
				return err
			}
		}
	}
	switch {
	case p.limit != nil:
	case spec.MaxProcs > 0:
		l, err := newProcLimit(spec.MaxProcs, p.marker)
		if err != nil {
			return err
		}
		p.limit = l
	case available && !isolate:
		if l, err := newProcLimit(0, p.marker); err == nil {
			p.limit = l
		}
	}
	if !isolate && p.limit == nil {
		becomeSubreaper()
	}

	argv := spec.Argv
	var cmd *exec.Cmd
	var payloadW, statusW *os.File
	var extra []*os.File
	var terminalR *os.File // the helper sends the terminal's master here
	terminalFD := 0
	if reexec {
		exe := spec.Helper.Exe
		if exe == "" {
			exe = "/proc/self/exe"
		}
		cmd = exec.Command(exe)
		cmd.Args = []string{helperArg0}
		pr, pw, err := os.Pipe()
		if err != nil {
			return fmt.Errorf("helper pipe: %w", err)
		}
		sr, sw, err := os.Pipe()
		if err != nil {
			pr.Close()
			pw.Close()
			return fmt.Errorf("status pipe: %w", err)
		}
		payloadW, statusW = pw, sw
		p.status = sr
		extra = append([]*os.File{pr, sw}, spec.Helper.Files...)
		defer pr.Close()
		if spec.TTY && isolate {
			// The helper opens the terminal in an instance of its own and
			// sends its master back on this socket.
			r, child, err := terminalSocket()
			if err != nil {
				p.closeStatus(payloadW, statusW)
				return err
			}
			terminalR = r
			defer child.Close()
			extra = append(extra, child)
			terminalFD = 2 + len(extra)
			p.ttyOwnInstance = true
		}
	} else {
		cmd = exec.Command(argv[0], argv[1:]...)
	}
	cmd.Env = env
	cmd.Dir = spec.Dir
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := platformAttr(cmd.SysProcAttr, isolate); err != nil {
		p.closeStatus(payloadW, statusW)
		return err
	}

	var slave *os.File
	// A thread sandbox gives the session a terminal instance of its own
	// (see Helper.Thread): its terminal is opened there, on the forking
	// thread once the sandbox is applied. Elsewhere it is opened here.
	p.ttyOnThread = spec.TTY && thread
	if p.ttyOnThread {
		p.ttyOwnInstance = true
	}
	if spec.TTY && !p.ttyOwnInstance {
		tty, err := p.openTerminal(cmd)
		if err != nil {
			p.closeStatus(payloadW, statusW)
			return err
		}
		slave = tty
	} else if spec.TTY {
		// Opened by prepare, below, or by the helper.
	} else if spec.Stdio != nil {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = spec.Stdio.Stdin, spec.Stdio.Stdout, spec.Stdio.Stderr
	} else {
		r, w, err := os.Pipe()
		if err != nil {
			p.closeStatus(payloadW, statusW)
			return fmt.Errorf("output pipe: %w", err)
		}
		p.output = r
		slave = w
		cmd.Stdin = nil // /dev/null
		cmd.Stdout, cmd.Stderr = w, w
	}

	var prepare func() error
	if thread {
		h := spec.Helper
		prepare = func() error {
			if err := h.Thread(h.Payload, ""); err != nil {
				return err
			}
			p.keepMountNS()
			if !p.ttyOnThread {
				return nil
			}
			tty, err := p.openTerminal(cmd)
			slave = tty
			return err
		}
	}
	if prepare == nil && spec.Helper == nil && insideOwn && p.limit == nil {
		// An unsandboxed session without a cgroup: a mount namespace of
		// its own all the same, so that its processes can be found by
		// it when it ends (findMarked), however they left its process
		// group and dropped its marker.
		prepare = func() error {
			if err := unshareMountNS(); err != nil {
				return err
			}
			p.keepMountNS()
			return nil
		}
	}
	if spec.Helper != nil && spec.Helper.Enter != nil {
		enter, then := spec.Helper.Enter, prepare
		prepare = func() error {
			if err := enter(); err != nil {
				return err
			}
			if then != nil {
				return then()
			}
			return nil
		}
	}
	if err := p.fork(cmd, prepare); err != nil {
		if slave != nil {
			slave.Close()
			p.output.Close()
		}
		p.closeStatus(payloadW, statusW)
		return fmt.Errorf("start %s: %w", argv[0], err)
	}
	// Only the child keeps the terminal slave / pipe write end: EIO or EOF
	// then means every holder is gone.
	if slave != nil {
		slave.Close()
	}
	p.cmd = cmd
	if statusW != nil {
		statusW.Close()
		hdr := helperHeader{Argv: argv, Isolate: isolate, TTY: spec.TTY, Payload: spec.Helper.Payload, TerminalFD: terminalFD, Rows: spec.Rows, Cols: spec.Cols}
		if hdr.Rows == 0 {
			hdr.Rows = 24
		}
		if hdr.Cols == 0 {
			hdr.Cols = 80
		}
		err := writeHeader(payloadW, hdr)
		payloadW.Close()
		if err != nil {
			// The helper exits on a broken header; Wait reaps it.
			p.killTree(syscall.SIGKILL)
		}
	}
	if terminalR != nil {
		err := p.receiveTerminal(terminalR)
		terminalR.Close()
		if err != nil {
			p.killTree(syscall.SIGKILL)
			p.cmd.Wait()
			reaped(p.cmd.Process.Pid)
			if st, ok := readHelperStatus(p.status); ok {
				err = fmt.Errorf("%w (the helper ended: %v)", err, st)
			}
			p.status.Close()
			if p.limit != nil {
				p.limit.close()
			}
			return err
		}
	}
	ok = true
	go p.pump()
	go p.wait()
	return nil
}

// keepMountNS records the forking thread's mount namespace as the
// session's when it is one of its own (a thread sandbox made it, or the
// unsandboxed session's unshare), never this process's, and holds it
// open: a namespace's number is reused once it is freed, and the session
// must never name another's. Released when the session is done (wait).
func (p *Process) keepMountNS() {
	ns, f := threadMountNS()
	if f == nil {
		return
	}
	p.mu.Lock()
	p.mntNS, p.mntFile = ns, f
	p.mu.Unlock()
}

// receiveTerminal takes the terminal's master and name from the helper
// (see helperHeader.TerminalFD).
func (p *Process) receiveTerminal(sock *os.File) error {
	c, err := net.FileConn(sock)
	if err != nil {
		return fmt.Errorf("terminal socket: %w", err)
	}
	defer c.Close()
	uc := c.(*net.UnixConn)
	uc.SetReadDeadline(time.Now().Add(helperTerminalWait))
	name := make([]byte, 256)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := uc.ReadMsgUnix(name, oob)
	if err != nil || n == 0 {
		return fmt.Errorf("the helper sent no terminal: %v", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return fmt.Errorf("the helper's terminal message: %v", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return fmt.Errorf("the helper's terminal descriptor: %v", err)
	}
	unix.CloseOnExec(fds[0])
	master := os.NewFile(uintptr(fds[0]), "pty-master")
	nb, err := nonblocking(master)
	master.Close()
	if err != nil {
		return err
	}
	p.input, p.output = nb, nb
	p.ttyName = string(name[:n])
	return nil
}

// helperTerminalWait bounds the wait for the helper's terminal.
const helperTerminalWait = 30 * time.Second

// openTerminal opens the session's terminal, sized, and makes it cmd's
// standard streams and controlling terminal; it returns the slave, which
// the caller closes once cmd has started.
func (p *Process) openTerminal(cmd *exec.Cmd) (*os.File, error) {
	master, tty, err := pty.Open()
	if err != nil {
		return nil, fmt.Errorf("open pty: %w", err)
	}
	rows, cols := p.spec.Rows, p.spec.Cols
	if rows == 0 {
		rows = 24
	}
	if cols == 0 {
		cols = 80
	}
	if err := pty.Setsize(master, &pty.Winsize{Rows: rows, Cols: cols}); err != nil {
		master.Close()
		tty.Close()
		return nil, fmt.Errorf("set terminal size: %w", err)
	}
	nb, err := nonblocking(master)
	master.Close()
	if err != nil {
		tty.Close()
		return nil, err
	}
	p.input, p.output = nb, nb
	p.ttyName = tty.Name()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr.Setctty = true
	cmd.SysProcAttr.Ctty = 0
	return tty, nil
}

func (p *Process) closeStatus(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
	if p.status != nil {
		p.status.Close()
		p.status = nil
	}
}

// pump copies output until EOF or EIO. Owner: the Process; it ends when
// every writer of the terminal or pipe is gone, or when wait gives up
// draining and closes the reader.
//
// It reads through the raw descriptor so that it can say when it parks:
// parked counts up by one each time the pump finds nothing to read and
// waits (odd: parked) and each time it wakes (even), and a read's bytes
// are delivered before the next read, so an odd count means everything
// read so far is in Spec.Output (see [Process.drained]).
func (p *Process) pump() {
	defer close(p.pumpEnd)
	if p.output == nil {
		return // the command writes to the caller's own streams
	}
	rc, err := p.output.SyscallConn()
	if err != nil {
		return
	}
	// An idle session holds its read buffer while it waits: start small,
	// grow once the command proves chatty.
	buf := make([]byte, 4*1024)
	for {
		var n int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			if p.parked.Load()&1 == 1 {
				p.parked.Add(1) // awake
			}
			for {
				n, rerr = syscall.Read(int(fd), buf)
				if rerr != syscall.EINTR {
					break
				}
			}
			if rerr == syscall.EAGAIN {
				p.parked.Add(1)
				return false // wait for output
			}
			return true
		})
		if n > 0 {
			p.spec.Output.Write(buf[:n])
			if n == len(buf) && len(buf) < 32*1024 {
				buf = make([]byte, 32*1024)
			}
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// wait gave up waiting for the end of the output (drainCap):
			// what the terminal or pipe holds now was written before,
			// the tail of it too — deliver it, then stop.
			p.drainRest(rc, buf)
			return
		}
		if err != nil || rerr != nil || n <= 0 {
			return
		}
	}
}

// drainRest delivers what the terminal or pipe holds once wait has given
// up on the end of the output: reads until there is nothing more to read
// now, at most drainRestMax bytes (a descendant that escaped the kill may
// write for ever).
func (p *Process) drainRest(rc syscall.RawConn, buf []byte) {
	for total := 0; total < drainRestMax; {
		n := 0
		var rerr error
		rc.Control(func(fd uintptr) {
			for {
				n, rerr = syscall.Read(int(fd), buf)
				if rerr != syscall.EINTR {
					return
				}
			}
		})
		if n <= 0 || rerr != nil {
			return
		}
		p.spec.Output.Write(buf[:n])
		total += n
	}
}

// drainRestMax bounds drainRest: more than a terminal or pipe holds.
const drainRestMax = 1 << 20

// drainGaveUp, when set (by tests), is called once wait has given up
// waiting for the end of the output.
var drainGaveUp func()

// drained reports whether everything the command wrote before the call
// has been delivered to Spec.Output: the pump is parked, waiting for more,
// and stayed parked while the terminal or pipe had nothing to read. The
// poll also waits for the kernel to move what the command wrote into the
// terminal's read buffer (a pty hands it over from a work queue).
func (p *Process) drained() bool {
	if p.output == nil {
		return true // nothing of the command's output passes here
	}
	v := p.parked.Load()
	if v&1 == 0 {
		return false
	}
	rc, err := p.output.SyscallConn()
	if err != nil {
		return false
	}
	readable := true
	rc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(fds, 0)
			if err == unix.EINTR {
				continue
			}
			readable = err != nil || n > 0
			return
		}
	})
	return !readable && p.parked.Load() == v
}

// wait reaps the leader, ends the rest of the tree, drains the output and
// closes everything. Owner: the Process; it ends after the drain.
func (p *Process) wait() {
	pid := p.cmd.Process.Pid
	// No descendant outlives its session: a PID namespace is already gone
	// with its init; otherwise end what is left of the tree — while the
	// leader has exited but is not reaped yet (where the platform can
	// wait so): until it is, its number, and so its group's and its
	// session's, is no one else's, and the kill cannot reach a process
	// that got it since.
	endTree := p.spec.Helper == nil || !p.spec.Helper.Isolate
	var err error
	if waitExited(pid) {
		tracepoint.Mark("session: command exited")
		if leaderExited != nil {
			leaderExited(pid)
		}
		if endTree {
			p.killTree(syscall.SIGKILL)
		}
		// Reaped while no kill pass runs, and no pass signals the number
		// afterwards: a Kill or Signal that comes while the output
		// drains must not reach the new process, of this program or
		// another, that has the number by then.
		p.killMu.Lock()
		err = p.cmd.Wait()
		p.leaderReaped = true
		p.killMu.Unlock()
	} else {
		err = p.cmd.Wait()
		tracepoint.Mark("session: command exited")
		if endTree {
			// Where the leader cannot be waited for without reaping it,
			// the rest of its tree is ended by number right after, as
			// best it can be.
			p.killTree(syscall.SIGKILL)
		}
		p.killMu.Lock()
		p.leaderReaped = true
		p.killMu.Unlock()
	}
	reaped(pid)
	st := statusFrom(p.cmd.ProcessState, err)
	if p.status != nil {
		if hs, ok := readHelperStatus(p.status); ok {
			st = hs
		}
		p.status.Close()
	}
	p.mu.Lock()
	p.exit = st
	p.mu.Unlock()
	close(p.exited)
	if p.input != nil {
		// Nobody is left to read the terminal: a Write waiting for room
		// ends now (once the terminal hangs up, the poller would wake it
		// for ever and it would spin), the output sink's included.
		p.input.SetWriteDeadline(time.Now())
	}
	tracepoint.Mark("session: its tree ended")
	select {
	case <-p.pumpEnd:
	case <-time.After(drainCap):
		// A descendant we could not find still holds the terminal: give
		// up after the cap, without losing what was already written
		// (the pump delivers what the terminal holds, see drainRest).
		p.output.SetReadDeadline(time.Now())
		if drainGaveUp != nil {
			drainGaveUp()
		}
		<-p.pumpEnd
	}
	if p.output != nil {
		p.output.Close()
	}
	if p.limit != nil {
		p.refused.Store(int64(p.limit.hitMax()))
		p.limitGone.Store(true)
		// Everything still in the session's cgroup ends with it.
		p.limit.kill()
	}
	tracepoint.Mark("session: output drained")
	close(p.done)
	// The answer first: what follows (a cgroup removed, the last hold
	// on the session's mount namespace let go, which unmounts its copy of
	// every mount) takes a hundred microseconds or more in the kernel,
	// while the caller woken by done would wait on this P behind it.
	runtime.Gosched()
	// The cgroup is removed after the answer: its removal can wait for
	// a grace period behind a preparation (see Forker.Refill).
	if p.movedOut != nil {
		// The forking thread is out of the cgroup, which can then go.
		// (Not before the answer: a move by another thread waits for a
		// grace period. The kill above spares this process's threads.)
		<-p.movedOut
	}
	if p.limit != nil {
		if err := p.limit.close(); err != nil {
			fmt.Fprintf(os.Stderr, "unified-exec: %v\n", err)
		}
	}
	p.mu.Lock()
	if p.mntFile != nil {
		// Nothing is left to find by it; the number may be another's soon.
		p.mntFile.Close()
		p.mntNS, p.mntFile = "", nil
	}
	p.mu.Unlock()
	close(p.removed)
	if p.spec.Pending != nil {
		p.spec.Pending.Done()
	}
}

// drainCap bounds the wait for end-of-output after the leader exited.
const drainCap = 200 * time.Millisecond

// ForksRefused is how many forks the session's process limit refused so
// far (0 without one).
func (p *Process) ForksRefused() int {
	if p.limit == nil {
		return 0
	}
	if !p.limitGone.Load() {
		n := p.limit.hitMax()
		if !p.limitGone.Load() {
			return n
		}
	}
	return int(p.refused.Load())
}

// Pid is the process id of the leader (the helper when one is used).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// TTY reports whether the process runs in a terminal.
func (p *Process) TTY() bool { return p.spec.TTY }

// Exited is closed once the leader has exited (its output may still be
// draining).
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Done is closed once the leader has exited and all its output has been
// delivered to Spec.Output.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitStatus is the leader's exit status; valid after Exited is closed.
func (p *Process) ExitStatus() ExitStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exit
}

// Write sends input to the terminal. Pipe sessions have stdin on
// /dev/null and answer [ErrNoStdin].
func (p *Process) Write(b []byte) (int, error) {
	if err := p.writable(); err != nil {
		return 0, err
	}
	n, err := p.input.Write(b)
	if err != nil && errors.Is(err, os.ErrClosed) {
		return n, ErrExited
	}
	return n, err
}

// TryWrite writes what the terminal takes now and returns how much that
// was, without waiting for room: for answers to terminal queries, written
// by the output pump, which a program that does not read its terminal must
// not be able to stall. It does not wait for a Write in progress either.
func (p *Process) TryWrite(b []byte) (int, error) {
	if err := p.writable(); err != nil {
		return 0, err
	}
	rc, err := p.input.SyscallConn()
	if err != nil {
		return 0, err
	}
	n := 0
	var werr error
	// Control, not Write: the descriptor is non-blocking, and Control does
	// not queue behind a Write that waits for room.
	err = rc.Control(func(fd uintptr) {
		for n < len(b) {
			m, e := syscall.Write(int(fd), b[n:])
			switch {
			case e == syscall.EINTR:
				continue
			case e == syscall.EAGAIN:
				return
			case e != nil:
				werr = e
				return
			case m <= 0:
				return
			}
			n += m
		}
	})
	if err != nil || werr == syscall.EIO {
		return n, ErrExited // closed, or the terminal hung up
	}
	return n, werr
}

// writable says why input cannot be written, if it cannot.
func (p *Process) writable() error {
	if p.input == nil {
		return ErrNoStdin
	}
	select {
	case <-p.done:
		return ErrExited
	default:
	}
	return nil
}

// SetWriteDeadline bounds a Write to a terminal whose reader is stuck.
func (p *Process) SetWriteDeadline(t time.Time) error {
	if p.input == nil {
		return ErrNoStdin
	}
	return p.input.SetWriteDeadline(t)
}

// Resize changes the terminal size; the foreground job gets SIGWINCH.
func (p *Process) Resize(rows, cols uint16) error {
	if p.input == nil {
		return ErrNoStdin
	}
	return pty.Setsize(p.input, &pty.Winsize{Rows: rows, Cols: cols})
}

// Kill ends the whole tree: SIGTERM to every process of the session, then
// SIGKILL after grace if anything is left. It returns once the output is
// drained. Safe to call more than once and after exit.
func (p *Process) Kill(grace time.Duration) ExitStatus {
	p.killOnce.Do(func() {
		p.mu.Lock()
		p.killed = true
		p.mu.Unlock()
		select {
		case <-p.exited:
		default:
			p.killTree(syscall.SIGTERM)
			if grace > 0 {
				select {
				case <-p.exited:
				case <-time.After(grace):
				}
			}
		}
		p.killTree(syscall.SIGKILL)
	})
	<-p.removed
	return p.ExitStatus()
}

// Signal sends sig to the foreground of the command (the whole tree when
// isolated).
func (p *Process) Signal(sig syscall.Signal) error {
	select {
	case <-p.exited:
		return ErrExited
	default:
	}
	return p.killTree(sig)
}

// killTree signals the leader's process group, and every other process
// of the session: the PID namespace's init forwards to all it holds; without
// one, processes are found by the marker in their environment.
// leaderExited, when set (by tests), is called once a session's leader
// has exited, before its tree is ended and it is reaped.
var leaderExited func(pid int)

func (p *Process) killTree(sig syscall.Signal) error {
	// One pass at a time: the end's SIGKILL pass must see what a SIGTERM
	// pass still scanning found (its processes, dying, may no longer be
	// found by their environment), or it would leave them zombies.
	p.killMu.Lock()
	defer p.killMu.Unlock()
	select {
	case <-p.done:
		// Ended and reaped, its tree with it: the leader's number, and
		// its group's, may be another process's by now.
		return nil
	default:
	}
	pid := p.cmd.Process.Pid
	// By number only while the leader is not reaped (see wait): until
	// then the number, and its group's and its session's, is no one
	// else's. Afterwards it may be any new process's — a session leader
	// of another program's, numbered as its group and session — and
	// what is left of the tree is found by its marker, cgroup or mount
	// namespace, which are this session's alone.
	byNumber := !p.leaderReaped
	var err error
	if byNumber {
		err = syscall.Kill(-pid, sig)
		if err == syscall.ESRCH {
			err = syscall.Kill(pid, sig)
		}
	}
	isolated := p.spec.Helper != nil && p.spec.Helper.Isolate
	if !isolated {
		var marked []int
		if p.limit != nil {
			marked = p.limit.members()
		} else {
			p.mu.Lock()
			mntNS := p.mntNS
			p.mu.Unlock()
			marked = findMarked(p.marker, mntNS)
		}
		for _, q := range marked {
			syscall.Kill(q, sig)
		}
		p.mu.Lock()
		for _, q := range marked {
			p.seen = append(p.seen, seenProc{q, procStart(q)})
		}
		// Only those that are still what was seen: a number seen at an
		// earlier kill (a forwarded signal) may be another process's now.
		var seen []int
		for _, q := range p.seen {
			if q.same() {
				seen = append(seen, q.pid)
			}
		}
		p.mu.Unlock()
		if sig == syscall.SIGKILL && subreaperSet.Load() {
			// Never the leader: wait reaps it, and would find no status
			// (exit 125) if it were reaped here first.
			// Whatever is still in the session is ended too: a process
			// whose environment could not be read at the scan above
			// (it was already dying) is still ours — while the leader
			// is unreaped: after, the session numbered as it may be
			// another's.
			var members []int
			if byNumber {
				members = sessionMembers(pid)
			}
			for _, q := range members {
				syscall.Kill(q, sig)
			}
			orphans := slices.DeleteFunc(append(seen, members...), func(q int) bool { return q == pid })
			reapOrphans(orphans)
		}
	}
	if err == syscall.ESRCH {
		return nil
	}
	return err
}

func statusFrom(ps *os.ProcessState, err error) ExitStatus {
	if ps == nil {
		return ExitStatus{Code: 125}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ExitStatus{Code: 128 + int(ws.Signal()), Signal: ws.Signal()}
	}
	return ExitStatus{Code: ps.ExitCode()}
}

// SignalName gives the conventional name of a signal, e.g. "SIGKILL".
func SignalName(s syscall.Signal) string {
	if n := unix.SignalName(s); n != "" {
		return n
	}
	return "SIG" + strconv.Itoa(int(s))
}

// markerEnv names the environment variable that tags every process of a
// session, so a kill can find descendants that left the process group.
const markerEnv = "UNIFIED_EXEC_SESSION"

func newMarker() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// nonblocking returns a copy of f in non-blocking mode, registered with
// the runtime poller so deadlines and Close unblock readers.
func nonblocking(f *os.File) (*os.File, error) {
	// Close-on-exec from the start (F_DUPFD_CLOEXEC): a Dup then
	// CloseOnExec leaves a window in which a command forked by another
	// goroutine inherits this master, and with it this session's
	// terminal, for good.
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("dup pty master: %w", err)
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("non-blocking pty master: %w", err)
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

func readHelperStatus(r *os.File) (ExitStatus, bool) {
	line, err := bufio.NewReader(io.LimitReader(r, 64)).ReadString('\n')
	if err != nil {
		return ExitStatus{}, false
	}
	f := strings.Fields(line)
	if len(f) != 2 {
		return ExitStatus{}, false
	}
	n, err := strconv.Atoi(f[1])
	if err != nil {
		return ExitStatus{}, false
	}
	switch f[0] {
	case "exit":
		return ExitStatus{Code: n}, true
	case "signal":
		return ExitStatus{Code: 128 + n, Signal: syscall.Signal(n)}, true
	case "error":
		return ExitStatus{Code: n}, true
	}
	return ExitStatus{}, false
}

// lookPathIn resolves argv0 against PATH from env.
func lookPathIn(argv0 string, env []string) (string, error) {
	if strings.Contains(argv0, "/") {
		return argv0, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		cand := filepath.Join(dir, argv0)
		if st, err := os.Stat(cand); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return cand, nil
		}
	}
	return "", fmt.Errorf("%s: command not found", argv0)
}
