package ptyrun

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/creack/pty"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/unified-exec/unified-exec/internal/userns"
	"golang.org/x/sys/unix"
)

var (
	subreaper    sync.Once
	subreaperSet atomic.Bool
)

// becomeSubreaper makes orphans of sessions that have neither a namespace
// nor a cgroup come to us rather than to a PID 1 that may never reap
// them; reapOrphans collects them after a kill.
func becomeSubreaper() {
	subreaper.Do(func() {
		if unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == nil {
			subreaperSet.Store(true)
		}
	})
}

func platformAttr(attr *syscall.SysProcAttr, isolate bool) error {
	// Children die with the server: the leader gets SIGKILL when its
	// parent goes, and with isolation the kernel then ends the namespace.
	// Inside a program namespace (EnterNamespace) the kernel ends every
	// session with the program anyway.
	if !insideOwn {
		attr.Pdeathsig = syscall.SIGKILL
	}
	if isolate {
		kind, err := userns.Probe()
		if err != nil {
			return err
		}
		ns := userns.Attr(kind, 0)
		attr.Cloneflags |= ns.Cloneflags
		attr.UidMappings, attr.GidMappings = ns.UidMappings, ns.GidMappings
		attr.GidMappingsEnableSetgroups = ns.GidMappingsEnableSetgroups
		attr.AmbientCaps = ns.AmbientCaps
	}
	return nil
}

// IsolationAvailable reports whether commands can run in their own PID and
// mount namespaces here — as root, or as an ordinary user through an
// unprivileged user namespace — and if not, why.
func IsolationAvailable() (bool, error) {
	kind, err := userns.Probe()
	return kind != userns.None, err
}

// threadMountNS is the calling thread's mount namespace when it is one of
// its own (a thread sandbox made it), with its file held open; "" and nil
// when it is this process's: a namespace shared with anything else must
// never name a session's processes.
func threadMountNS() (string, *os.File) {
	f, err := os.Open("/proc/thread-self/ns/mnt")
	if err != nil {
		return "", nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return "", nil
	}
	own := fmt.Sprintf("mnt:[%d]", st.Ino) // as the link reads
	process, err := programMountNS()
	if err != nil || own == process {
		f.Close()
		return "", nil
	}
	return own, f
}

// programMountNS is /proc/self/ns/mnt's link, read once: the program
// never leaves its mount namespace (its threads do).
var programMountNS = sync.OnceValues(func() (string, error) { return os.Readlink("/proc/self/ns/mnt") })

// unshareMountNS gives the calling thread a mount namespace of its own.
func unshareMountNS() error {
	if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_FS); err != nil {
		return fmt.Errorf("a mount namespace for the session: %w", err)
	}
	return nil
}

// findMarked lists the processes of a session that left its process
// group or session: those whose environment carries its marker, and,
// where the session has a mount namespace of its own (mntNS, the link
// /proc/PID/ns/mnt reads, "" for none), every process in it — a command
// can drop the marker (env -i), but not leave its mount namespace (no
// capabilities, no user namespace).
func findMarked(marker, mntNS string) []int {
	if marker == "" && mntNS == "" {
		return nil
	}
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	needle := []byte(markerEnv + "=" + marker + "\x00")
	self := os.Getpid()
	var pids []int
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid == self {
			continue
		}
		if mntNS != "" {
			if ns, err := os.Readlink("/proc/" + n + "/ns/mnt"); err == nil && ns == mntNS {
				pids = append(pids, pid)
				continue
			}
		}
		if marker == "" {
			continue
		}
		env, err := os.ReadFile("/proc/" + n + "/environ")
		if err != nil {
			continue
		}
		if bytes.Contains(append(env, 0), needle) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// runHelper is the body of a helper process: read the header on fd 3,
// set up the namespace, apply the payload, then run the command.
func runHelper(apply Apply) int {
	in := os.NewFile(3, "helper-header")
	status := os.NewFile(4, "helper-status")
	if in == nil || status == nil {
		fmt.Fprintln(os.Stderr, "unified-exec helper: started without its header and status pipes (fd 3 and 4); it is internal and not meant to be run by hand")
		return 125
	}
	syscall.CloseOnExec(4)
	var h helperHeader
	err := json.NewDecoder(in).Decode(&h)
	in.Close()
	if err != nil || len(h.Argv) == 0 {
		fmt.Fprintf(os.Stderr, "unified-exec helper: reading the command on fd 3: %v\n", err)
		fmt.Fprintln(status, "error 125")
		return 125
	}
	if h.Isolate {
		if err := mountProc(); err != nil {
			fmt.Fprintf(os.Stderr, "unified-exec helper: %v\n", err)
			fmt.Fprintln(status, "error 125")
			return 125
		}
		if h.TerminalFD != 0 {
			err = openOwnTerminal(h)
		} else {
			// No terminal of its own, and none of the program's either:
			// nested PTYs come from an instance of the session's own.
			err = mountOwnTerminals()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "unified-exec helper: %v\n", err)
			fmt.Fprintln(status, "error 125")
			return 125
		}
	}
	if apply != nil && h.Payload != nil {
		if err := apply(h.Payload); err != nil {
			fmt.Fprintf(os.Stderr, "unified-exec: sandbox: %v\n", err)
			fmt.Fprintln(status, "error 126")
			return 126
		}
	}
	env := os.Environ()
	path, err := lookPathIn(h.Argv[0], env)
	if err != nil {
		fmt.Fprintf(os.Stderr, "unified-exec: %v\n", err)
		fmt.Fprintln(status, "error 127")
		return 127
	}
	if !h.Isolate {
		// The command gets none of a user namespace's capabilities.
		runtime.LockOSThread()
		if err := userns.ClearAmbient(); err != nil {
			fmt.Fprintf(os.Stderr, "unified-exec: %v\n", err)
			fmt.Fprintln(status, "error 125")
			return 125
		}
		err := syscall.Exec(path, h.Argv, env)
		fmt.Fprintf(os.Stderr, "unified-exec: exec %s: %v\n", h.Argv[0], err)
		return 126
	}
	return runInit(path, h, env, status)
}

// terminalSocket makes the socket pair on which a helper sends the
// session's terminal (see openOwnTerminal): the program's end and the
// helper's.
func terminalSocket() (*os.File, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("terminal socket: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "terminal-socket"), os.NewFile(uintptr(fds[1]), "terminal-socket"), nil
}

// openOwnTerminal gives the session a terminal instance of its own on
// /dev/pts (the program's, with every other session's terminal, goes out
// of sight), opens the command's terminal there as this process's
// controlling terminal and standard streams, and sends its master and
// name to the program on h.TerminalFD.
func openOwnTerminal(h helperHeader) error {
	sock := os.NewFile(uintptr(h.TerminalFD), "helper-terminal")
	defer sock.Close()
	if err := mountOwnTerminals(); err != nil {
		return err
	}
	master, slave, err := pty.Open()
	if err != nil {
		return fmt.Errorf("open pty: %w", err)
	}
	defer master.Close()
	defer slave.Close()
	if err := pty.Setsize(master, &pty.Winsize{Rows: h.Rows, Cols: h.Cols}); err != nil {
		return fmt.Errorf("set terminal size: %w", err)
	}
	if err := unix.IoctlSetInt(int(slave.Fd()), unix.TIOCSCTTY, 0); err != nil {
		return fmt.Errorf("making the terminal the session's: %w", err)
	}
	for fd := 0; fd <= 2; fd++ {
		if err := unix.Dup2(int(slave.Fd()), fd); err != nil {
			return fmt.Errorf("terminal as fd %d: %w", fd, err)
		}
	}
	rights := unix.UnixRights(int(master.Fd()))
	if err := unix.Sendmsg(int(sock.Fd()), []byte(slave.Name()), rights, nil, 0); err != nil {
		return fmt.Errorf("sending the terminal to the program: %w", err)
	}
	return nil
}

// mountOwnTerminals mounts a terminal instance of the session's own on
// /dev/pts (/dev/ptmx opens the instance beside it).
func mountOwnTerminals() error {
	if err := syscall.Mount("devpts", "/dev/pts", "devpts", syscall.MS_NOSUID|syscall.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return fmt.Errorf("mounting a terminal instance of the session's own on /dev/pts: %w", err)
	}
	return nil
}

// mountProc gives the new PID namespace its own /proc, so the command sees
// only the processes of its session.
func mountProc() error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting /proc: %w", err)
	}
	return nil
}

// mountOwnDevices gives the program namespace a devpts instance and a
// /dev/shm of its own.
//
// Sessions' terminals come from the devpts instance at /dev/pts (/dev/ptmx
// opens the instance beside it), and so do those their commands open; the
// host's terminals — the one unified-exec was started from, the user's
// other shells — are not in it. Sandboxed commands are granted /dev/pts
// (nested PTYs need it), so they could otherwise open those and read what
// the user types there, or write to them. The program keeps its own
// standard streams and controlling terminal (/dev/tty), which it holds
// open.
//
// /dev/shm is writable in the sandbox (POSIX semaphores and shared memory:
// Python's multiprocessing); a tmpfs of its own keeps the host's segments
// (other programs' shared memory) out of reach. It is memory: its size
// and inodes are capped (see shmSize), so that no command fills the
// machine's memory through it.
func mountOwnDevices() error {
	err := syscall.Mount("devpts", "/dev/pts", "devpts", syscall.MS_NOSUID|syscall.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620")
	if err != nil {
		return fmt.Errorf("mounting a terminal instance of its own on /dev/pts: %w", err)
	}
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		opts := fmt.Sprintf("mode=1777,size=%d,nr_inodes=%d", shmSize(), shmInodes)
		if err := syscall.Mount("tmpfs", "/dev/shm", "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
			return fmt.Errorf("mounting a /dev/shm of its own: %w", err)
		}
	}
	return nil
}

// Caps of the program namespace's /dev/shm: a quarter of the memory, at
// most shmMaxSize (Chromium and Python's multiprocessing need far less;
// Docker gives 64 MiB), and shmInodes files.
const (
	shmMaxSize = 1 << 30
	shmInodes  = 65536
)

func shmSize() uint64 {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return shmMaxSize / 4
	}
	return min(uint64(si.Totalram)*uint64(si.Unit)/4, shmMaxSize)
}

// runInit runs the command as the child of this PID 1: it forwards
// signals to everything in the namespace, reaps every process, and exits
// with the command's status once the command is gone — which ends every
// process still in the namespace.
//
// Everything happens on one locked OS thread: Landlock (ABI < 8) is
// applied thread by thread, each thread getting its own domain, and a
// scoped domain may only signal its own descendants — so the thread that
// forks the command must be the one that forwards signals to it.
func runInit(path string, h helperHeader, env []string, status *os.File) int {
	runtime.LockOSThread()
	// The command shares this init's sandbox (its Landlock domain), so
	// /proc/1/fd would let it reopen the status pipe and report a forged
	// exit ("exit 0" before its own exit 7), or pidfd_getfd any of our
	// descriptors: not dumpable, this process's /proc entries are out of
	// reach of the user's other processes. The command's exec makes it
	// dumpable again, as usual.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "unified-exec: making the init undumpable: %v\n", err)
		fmt.Fprintln(status, "error 125")
		return 125
	}
	// A command gets none of a user namespace's capabilities.
	if err := userns.ClearAmbient(); err != nil {
		fmt.Fprintf(os.Stderr, "unified-exec: %v\n", err)
		fmt.Fprintln(status, "error 125")
		return 125
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	// The command shares this init's Landlock domain, so it may signal
	// it: what would make the Go runtime crash (and lose the command's
	// exit status) is ignored. The kernel already keeps SIGKILL and
	// SIGSTOP from within the namespace away from its PID 1.
	signal.Ignore(syscall.SIGABRT, syscall.SIGILL, syscall.SIGTRAP, syscall.SIGSYS, syscall.SIGFPE, syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGPIPE, syscall.SIGALRM, syscall.SIGVTALRM, syscall.SIGPROF, syscall.SIGXCPU, syscall.SIGXFSZ, syscall.SIGSTKFLT, syscall.SIGPWR, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
	attr := &syscall.SysProcAttr{Setpgid: true}
	if h.TTY {
		attr.Foreground = true
		attr.Ctty = 0
	}
	pid, err := syscall.ForkExec(path, h.Argv, &syscall.ProcAttr{
		Env:   env,
		Files: []uintptr{0, 1, 2},
		Sys:   attr,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "unified-exec: exec %s: %v\n", h.Argv[0], err)
		fmt.Fprintln(status, "error 126")
		return 126
	}
	for {
		// Reap whatever has exited; stop when the command has.
		for {
			var ws syscall.WaitStatus
			wpid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if err == syscall.EINTR {
				continue
			}
			if err != nil || wpid <= 0 {
				break
			}
			if wpid != pid {
				continue
			}
			switch {
			case ws.Signaled():
				fmt.Fprintf(status, "signal %d\n", int(ws.Signal()))
				return 128 + int(ws.Signal())
			case ws.Exited():
				fmt.Fprintf(status, "exit %d\n", ws.ExitStatus())
				return ws.ExitStatus()
			}
		}
		s := <-sigs
		switch {
		case s == syscall.SIGCHLD:
		default:
			syscall.Kill(-1, s.(syscall.Signal))
		}
	}
}

// waitExited waits until pid, a child of ours, has exited, without
// reaping it; false when it could not wait so (the child is then waited
// for the usual way).
func waitExited(pid int) bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err == nil
		}
	}
}

// reapWait bounds how long reapOrphans waits for killed processes to die:
// one stuck in the kernel (a hung network file system) must not hold the
// end of its session for ever.
const reapWait = 5 * time.Second

// reapOrphans waits for killed processes that were (or will be, once
// their parent has died) reparented to this process, and reaps them, so
// that no zombie is left behind.
func reapOrphans(pids []int) {
	deadline := time.Now().Add(reapWait)
	pending := pids
	for len(pending) > 0 && time.Now().Before(deadline) {
		var next []int
		for _, pid := range pending {
			if ownedChild(pid) {
				continue // another session's leader now: its owner reaps it
			}
			wpid, err := reapIfUnowned(pid)
			if wpid == pid {
				continue // reaped
			}
			if err == syscall.ECHILD {
				// Not (yet) our child: keep waiting while it exists and
				// its parent, which will die too, may hand it to us.
				if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err != nil {
					continue
				}
				if ppidOf(pid) == 1 {
					continue // someone else's to reap
				}
			}
			next = append(next, pid)
		}
		pending = next
		if len(pending) > 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// seenProc is a process as a kill found it: its number, and its start
// time (clock ticks after boot), which tells it from a later process that
// gets the same number.
type seenProc struct {
	pid   int
	start uint64
}

// same reports whether the process numbered s.pid is still the one seen.
func (s seenProc) same() bool {
	start := procStart(s.pid)
	return start != 0 && start == s.start
}

// procStart is pid's start time in clock ticks after boot; 0 when it is
// gone. A zombie keeps it.
func procStart(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	// Fields after "(comm)" start with the state, field 3; starttime is
	// field 22.
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 22-2 {
		return 0
	}
	start, _ := strconv.ParseUint(f[22-3], 10, 64)
	return start
}

func ppidOf(pid int) int {
	_, ppid, _, _ := procStat(pid)
	return ppid
}

// procStat reads state, parent, process group and session of pid.
func procStat(pid int) (state string, ppid, pgrp, sid int) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, 0, 0
	}
	// pid (comm) state ppid pgrp session ...
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", 0, 0, 0
	}
	fmt.Sscan(string(b[i+1:]), &state, &ppid, &pgrp, &sid)
	return state, ppid, pgrp, sid
}

// sessionMembers lists the processes still in the session or process
// group led by leader, in any state: one that is still dying (freeing its
// memory can take a while) is not a zombie yet, but will be ours to reap.
// A process group's number cannot be given to a new process while the
// group has members, so none of these is a stranger.
func sessionMembers(leader int) []int {
	names, _ := os.ReadDir("/proc")
	var z []int
	for _, e := range names {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == leader {
			continue
		}
		if _, _, pgrp, sid := procStat(pid); pgrp == leader || sid == leader {
			z = append(z, pid)
		}
	}
	return z
}
