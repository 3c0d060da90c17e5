package ptyrun

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/unified-exec/unified-exec/internal/tracepoint"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A procLimit is the session's own pids cgroup: the command is born in it
// (never moved there after it could fork), pids.max caps its processes
// and threads, and on the way out whatever is left in it is killed and
// the cgroup removed.
type procLimit struct {
	dir string
	v2  bool
	// fd is the cgroup directory (v2), for CLONE_INTO_CGROUP.
	fd *os.File
}

// cgroupPrefix names the session cgroups; the server's pid follows, so
// a later server can remove those of one that was killed.
const cgroupPrefix = "unified-exec-"

// cgroupOwner follows cgroupPrefix: this process's pid, or in a program
// namespace the relay's (see EnterNamespace).
var cgroupOwner = strconv.Itoa(os.Getpid())

var pidsRoot struct {
	once  sync.Once
	mount string // where the pids hierarchy is mounted
	dir   string // the server's own cgroup in it
	v2    bool
	err   error
}

// ProcessLimitAvailable reports whether sessions can be given a process
// limit here (a pids cgroup this process may create children in), and if
// not, why.
func ProcessLimitAvailable() (bool, error) {
	findPidsRoot()
	return pidsRoot.err == nil, pidsRoot.err
}

func findPidsRoot() {
	pidsRoot.once.Do(func() {
		pidsRoot.mount, pidsRoot.dir, pidsRoot.v2, pidsRoot.err = locatePids()
		if pidsRoot.err == nil {
			removeStaleCgroups(pidsRoot.dir)
		}
	})
}

// locatePids finds this process's cgroup in a hierarchy with the pids
// controller: a cgroup v1 "pids" mount, or cgroup v2 with pids enabled.
func locatePids() (mount, dir string, v2 bool, err error) {
	mounts, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", false, fmt.Errorf("process limit: reading mounts: %w", err)
	}
	defer mounts.Close()
	var v1Mount, v2Mount string
	sc := bufio.NewScanner(mounts)
	for sc.Scan() {
		// id parent maj:min root mountpoint opts ... - fstype source superopts
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			continue
		}
		switch g[0] {
		case "cgroup":
			for _, o := range strings.Split(g[2], ",") {
				if o == "pids" && v1Mount == "" {
					v1Mount = f[4]
				}
			}
		case "cgroup2":
			if v2Mount == "" {
				v2Mount = f[4]
			}
		}
	}
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", "", false, fmt.Errorf("process limit: reading /proc/self/cgroup: %w", err)
	}
	var v1Path, v2Path string
	for _, line := range strings.Split(string(own), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2Path = parts[2]
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "pids" {
				v1Path = parts[2]
			}
		}
	}
	if v1Mount != "" && v1Path != "" {
		dir := filepath.Join(v1Mount, v1Path)
		if unix.Access(dir, unix.W_OK) != nil {
			return "", "", false, fmt.Errorf("process limit: the pids cgroup %s is not writable by this process", dir)
		}
		return v1Mount, dir, false, nil
	}
	if v2Mount != "" && v2Path != "" {
		dir := filepath.Join(v2Mount, v2Path)
		ctl, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
		if err != nil {
			return "", "", false, fmt.Errorf("process limit: reading %s: %w", dir, err)
		}
		if !hasWord(string(ctl), "pids") {
			// Enabling works in the root, or in a cgroup of ours that
			// holds no process of its own; elsewhere the host must
			// delegate it.
			if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+pids"), 0); err != nil {
				return "", "", false, fmt.Errorf("process limit: the pids controller is not enabled below %s and enabling it failed (%v): run the server in a cgroup with pids delegated", dir, err)
			}
		}
		return v2Mount, dir, true, nil
	}
	return "", "", false, errors.New("process limit: no cgroup hierarchy with the pids controller is mounted")
}

func hasWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}

// removeStaleCgroups removes session cgroups left empty by programs that
// were killed before they could clean up. A session's cgroup is empty
// only between its creation and its first fork; one untouched for a
// minute is left over (and rmdir refuses any that is not empty).
func removeStaleCgroups(root string) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), cgroupPrefix) {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleAfter {
			syscall.Rmdir(filepath.Join(root, e.Name()))
		}
	}
}

const staleAfter = time.Minute

// removeOwnCgroups removes, in the relay, the session cgroups (and the
// prepared ones) of a program that was killed before it could: they are
// named after the relay. The sessions' processes died with the program's
// namespace; a cgroup is removed once its last one has finished exiting
// (waited for up to ownCgroupsWait).
func removeOwnCgroups() {
	findPidsRoot()
	if pidsRoot.err != nil {
		return
	}
	prefix := cgroupPrefix + cgroupOwner + "-"
	for deadline := time.Now().Add(ownCgroupsWait); ; time.Sleep(10 * time.Millisecond) {
		entries, err := os.ReadDir(pidsRoot.dir)
		if err != nil {
			return
		}
		left := 0
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), prefix) {
				if err := syscall.Rmdir(filepath.Join(pidsRoot.dir, e.Name())); err != nil && err != syscall.ENOENT {
					left++
				}
			}
		}
		if left == 0 || time.Now().After(deadline) {
			return
		}
	}
}

const ownCgroupsWait = 2 * time.Second

// newProcLimit creates the session cgroup with pids.max = max (no limit
// for 0).
func newProcLimit(max int, marker string) (*procLimit, error) {
	findPidsRoot()
	if pidsRoot.err != nil {
		return nil, pidsRoot.err
	}
	l := &procLimit{dir: filepath.Join(pidsRoot.dir, cgroupPrefix+cgroupOwner+"-"+marker), v2: pidsRoot.v2}
	if err := os.Mkdir(l.dir, 0o755); err != nil {
		return nil, fmt.Errorf("process limit: %w", err)
	}
	if err := l.setMax(max); err != nil {
		syscall.Rmdir(l.dir)
		return nil, err
	}
	if l.v2 {
		fd, err := os.Open(l.dir)
		if err != nil {
			syscall.Rmdir(l.dir)
			return nil, fmt.Errorf("process limit: %w", err)
		}
		l.fd = fd
	}
	return l, nil
}

// setMax sets pids.max (0: no limit).
func (l *procLimit) setMax(max int) error {
	limit := "max"
	if max > 0 {
		limit = strconv.Itoa(max)
	}
	if err := os.WriteFile(filepath.Join(l.dir, "pids.max"), []byte(limit), 0); err != nil {
		return fmt.Errorf("process limit: setting pids.max: %w", err)
	}
	return nil
}

// fork starts cmd so that the child is born in the session's cgroup (if
// any) and, with prepare, under what prepare applies to the forking
// thread (a thread sandbox). A v1 cgroup is joined by the forking thread
// for the fork; v2 uses CLONE_INTO_CGROUP. A thread that prepare changed,
// or that could not leave the cgroup, is never reused: it is retired with
// its goroutine — once the command exits when the child has a
// parent-death signal (tied to the forking thread), else at once. Under
// BatchScheduling the fork runs on a thread put back to SCHED_OTHER.
func (p *Process) fork(cmd *exec.Cmd, prepare func() error) error {
	if s := p.spare; s != nil {
		if l := p.limit; l != nil && l.v2 {
			// A spare with no cgroup of its own (warmed only): the
			// command is cloned into the session's all the same.
			cmd.SysProcAttr.UseCgroupFD = true
			cmd.SysProcAttr.CgroupFD = int(l.fd.Fd())
		}
		err := s.fork(cmd, prepare, p.threadSandbox)
		p.spare = nil // used: its thread retires, and the cgroup is the session's
		return err
	}
	l := p.limit
	v1 := l != nil && !l.v2
	if l != nil && l.v2 {
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = int(l.fd.Fd())
	}
	if !v1 && prepare == nil && !batch.Load() {
		return startChild(cmd)
	}
	errc := make(chan error, 1)
	go p.forkOnThread(cmd, prepare, errc)
	err := <-errc
	if err == nil && v1 && prepare != nil {
		// The sandboxed thread may no longer write to the cgroup file
		// system: take it out of the session's cgroup from here, so the
		// cgroup empties when the session does. The move waits for an
		// RCU grace period (milliseconds after a quiet moment): it is done
		// beside the command, not before Start returns; wait joins it
		// before the cgroup is removed.
		home, tid := p.forkHome, p.forkTid
		p.movedOut = make(chan struct{})
		go func() {
			defer close(p.movedOut)
			os.WriteFile(filepath.Join(home, "tasks"), []byte(tid), 0)
		}()
	}
	return err
}

// forkOnThread is fork's body, on a locked thread; it sends the outcome of
// the fork on errc.
func (p *Process) forkOnThread(cmd *exec.Cmd, prepare func() error, errc chan<- error) {
	runtime.LockOSThread()
	if unix.Gettid() == os.Getpid() {
		// The main thread cannot be retired (the runtime would wedge
		// it): hold it while another goroutine, which then cannot get
		// it, does the fork.
		inner := make(chan error, 1)
		go p.forkOnThread(cmd, prepare, inner)
		err := <-inner
		runtime.UnlockOSThread()
		errc <- err
		return
	}
	restore, err := forkPolicy()
	if err != nil {
		runtime.UnlockOSThread()
		errc <- err
		return
	}
	l := p.limit
	v1 := l != nil && !l.v2
	tid := strconv.Itoa(unix.Gettid())
	var home string
	if v1 {
		if home, err = threadCgroup(); err == nil {
			p.forkTid, p.forkHome = tid, home
			err = joinCgroupV1(l.dir)
		}
		if err != nil {
			if restore() {
				runtime.UnlockOSThread()
			}
			errc <- fmt.Errorf("process limit: joining %s: %w", l.dir, err)
			return
		}
	}
	if prepare != nil {
		if err := prepare(); err != nil {
			errc <- err
			return // retired: the thread may be half-restricted
		}
	}
	tracepoint.Mark("sandboxed the forking thread")
	err = startChild(cmd)
	errc <- err
	// A thread that only joined the cgroup and changed its policy is
	// reused once both are undone.
	if prepare == nil && (!v1 || joinCgroupV1(home) == nil) && restore() {
		runtime.UnlockOSThread()
		return
	}
	if err == nil && cmd.SysProcAttr.Pdeathsig != 0 {
		// The child's parent-death signal is tied to this thread: keep
		// it until the child is gone.
		<-p.exited
	}
}

// joinCgroupV1 moves the calling thread (its goroutine locked to it) into
// the v1 cgroup dir. It writes "0", the writer, to tasks, not the thread's
// number: a move by number takes the kernel's lock on every thread group,
// which waits for an RCU grace period when no move came just before, while
// a thread that moves itself needs no such lock (BenchmarkCgroupV1Move,
// after 200 ms of quiet: 14 ms by number, 0.14 ms as "0").
func joinCgroupV1(dir string) error {
	return os.WriteFile(filepath.Join(dir, "tasks"), []byte("0"), 0)
}

// threadCgroup is the calling thread's directory in the v1 pids hierarchy.
func threadCgroup() (string, error) {
	b, err := os.ReadFile("/proc/thread-self/cgroup")
	if err != nil {
		return "", fmt.Errorf("process limit: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && hasWord(strings.ReplaceAll(parts[1], ",", " "), "pids") {
			return filepath.Join(pidsRoot.mount, parts[2]), nil
		}
	}
	return "", errors.New("process limit: this thread is in no pids cgroup")
}

// hitMax reports how many forks the limit refused.
func (l *procLimit) hitMax() int {
	b, err := os.ReadFile(filepath.Join(l.dir, "pids.events"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "max "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// kill sends SIGKILL to whatever is in the cgroup.
func (l *procLimit) kill() {
	if l.v2 {
		os.WriteFile(filepath.Join(l.dir, "cgroup.kill"), []byte("1"), 0)
		return
	}
	for _, pid := range cgroupPids(l.dir) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// close kills whatever is still in the cgroup, waits for it to empty and
// removes it. It returns an error when the cgroup could not be removed.
func (l *procLimit) close() error {
	if l.fd != nil {
		l.fd.Close()
	}
	var err error
	for i := 0; i < 200; i++ {
		if err = syscall.Rmdir(l.dir); err == nil || err == syscall.ENOENT {
			return nil
		}
		l.kill()
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("process limit: removing %s: %w", l.dir, err)
}

// members lists the processes in the cgroup.
func (l *procLimit) members() []int { return cgroupPids(l.dir) }

// cgroupPids lists the processes in a cgroup but this one, whose forking
// thread may be parked there (v1 lists a process when any of its threads
// is in the cgroup).
func cgroupPids(dir string) []int {
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	self := os.Getpid()
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil && n != self {
			pids = append(pids, n)
		}
	}
	return pids
}
