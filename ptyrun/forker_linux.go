package ptyrun

import (
	"bytes"
	"errors"
	"github.com/unified-exec/unified-exec/internal/tracepoint"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A Forker forks sessions' commands from OS threads it prepared ahead of
// need, each already in a new pids cgroup of its own (cgroup v1), warmed,
// and sandboxed for the plan expected: a thread prepared beforehand keeps
// that work out of the path of the request. (The move itself is quick, as
// the thread moves itself: see joinCgroupV1.)
// Each prepared thread forks one command and then retires (it may be
// sandboxed), which also takes it out of the cgroup.
//
// It does something only in a program inside a namespace of its own (see
// [EnterNamespace]), where no parent-death signal ties a child to the
// thread that forked it, and with a v1 pids hierarchy: on cgroup v2 the
// command is cloned straight into its cgroup (CLONE_INTO_CGROUP), and
// without a process limit there is no cgroup to join. A nil Forker, or
// one that does nothing, leaves [Start] as it is.
//
// Owner: whoever made it (the session manager); Close ends it.
type Forker struct {
	// cgroups: each thread is prepared in a cgroup of its own.
	cgroups bool

	// mu guards the fields below.
	mu sync.Mutex
	// ahead: Refill prepares (only where the Forker acts at all).
	ahead, wantAhead bool
	// warm, when set, prepares each thread for a sandboxed command too
	// (see SetWarm).
	warm Warmer
	// build, when set, completes the sandbox of one warmed thread ahead
	// for expect, the payload of the last thread sandbox (see
	// SetBuilder).
	build  Builder
	expect []byte
	queue  []*spare // prepared, or being prepared, in that order
	closed bool
	// retiring are the spares taken out of the queue unused (built for
	// a plan no longer expected, or found not to fit): Close waits for
	// them.
	retiring sync.WaitGroup
}

// A Warmer prepares the calling thread, locked and never given back,
// ahead of a sandboxed command: the part of a thread sandbox that is the
// same for every command (a mount namespace of its own, a terminal
// instance), so that a call does only the rest. It returns undo, which
// gives the thread back what it changed, unless the sandbox applied to
// the thread since has taken it over (then undo does nothing); the
// Forker calls it before an unsandboxed command is forked from the
// thread (which forks nothing when undo fails), and when the thread
// retires. A warm that fails leaves the thread as it was.
type Warmer func() (undo func() error, err error)

// A Builder completes, on the calling thread (warmed by the Forker's
// Warmer, held and never given back), the thread sandbox a command with
// payload would get, ahead of the call. It returns fits, which reports,
// asked from another thread when the call comes, whether that sandbox is
// still the one the call's payload would get if built then (nil: nothing
// was built, the thread is as warmed), and release, which frees what the
// build keeps when the thread retires unused. An error means the thread
// is half-restricted: it forks nothing.
type Builder func(payload []byte) (fits func(payload []byte) bool, release func(), err error)

// NewForker starts preparing a thread now. With ahead, another is
// prepared at each Refill once this one is used, for the next session (a
// server); without, only this first one (a program that runs one
// command): a later command joins its cgroup on the way, as without a
// Forker.
func NewForker(ahead bool) *Forker { return NewWarmForker(ahead, nil) }

// NewWarmForker is NewForker with the threads warmed by warm from the
// first (see SetWarm): a program that knows before its policy is read
// that its commands will likely be sandboxed on the forking thread (its
// owner calls SetWarm(nil) if they are not).
func NewWarmForker(ahead bool, warm Warmer) *Forker {
	f := &Forker{wantAhead: ahead}
	if !insideOwn {
		return f
	}
	if ok, _ := ProcessLimitAvailable(); !ok || pidsRoot.v2 {
		f.SetWarm(warm) // nothing to prepare until it gives something
		return f
	}
	f.cgroups = true
	if ahead {
		spareProcs.Do(func() { runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + spareProcsAdded) })
	}
	f.mu.Lock()
	f.ahead = ahead
	f.warm = warm
	f.queue = []*spare{prepareSpare(f.cgroups, warm).start(nil)}
	f.mu.Unlock()
	f.Refill()
	return f
}

// SetWarm has the threads prepared from now on warmed by warm (nil: no
// more); a Forker with no cgroups to prepare threads in starts preparing
// them for warm's sake. Its owner calls it once it knows its commands
// are sandboxed on the forking thread.
func (f *Forker) SetWarm(warm Warmer) {
	if f == nil || !insideOwn {
		return
	}
	f.mu.Lock()
	f.warm = warm
	start := warm != nil && !f.cgroups && !f.closed && !f.ahead && len(f.queue) == 0
	if start {
		f.ahead = f.wantAhead
		f.queue = []*spare{prepareSpare(false, warm).start(nil)}
	}
	f.mu.Unlock()
	f.Refill()
}

// SetBuilder has one thread of those prepared from now on (warmed ones
// only) sandboxed ahead by build for the payload of the last thread
// sandbox (see Expect): a call whose plan is that one then forks at once,
// after fits. nil: no more.
func (f *Forker) SetBuilder(build Builder) {
	if f == nil || !insideOwn {
		return
	}
	f.mu.Lock()
	f.build = build
	f.mu.Unlock()
}

// Expect says that the next thread sandbox will likely have payload (the
// last one's): one thread prepared from now on is built for it. Threads
// built for another payload, and those not warmed, are retired.
func (f *Forker) Expect(payload []byte) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.build == nil || f.closed || bytes.Equal(f.expect, payload) {
		return
	}
	defer f.refillLocked()
	f.expect = bytes.Clone(payload)
	keep := f.queue[:0]
	for _, s := range f.queue {
		// Built for another plan, or prepared before the threads were
		// warmed (it would be the fallback of a built thread found not
		// to fit, and a cold one: a warmed one serves an unsandboxed
		// command too).
		if (s.buildFor != nil && !bytes.Equal(s.buildFor, payload)) || (s.warm == nil && f.warm != nil) {
			f.retireLocked(s)
			continue
		}
		keep = append(keep, s)
	}
	clear(f.queue[len(keep):])
	f.queue = keep
}

// retireLocked discards s, out of the queue, in the background.
func (f *Forker) retireLocked(s *spare) {
	f.retiring.Add(1)
	go func() {
		defer f.retiring.Done()
		s.discard()
	}()
}

// Close ends the prepared threads that were not used and removes their
// cgroups.
func (f *Forker) Close() {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.closed = true
	queue := f.queue
	f.queue = nil
	f.mu.Unlock()
	for _, s := range queue {
		s.discard()
	}
	f.retiring.Wait()
}

// Prepared waits for the thread prepared for the next command and returns
// the cgroup it is in; "" when there is none (this Forker does nothing
// here, it keeps none ahead, or the preparation failed).
func (f *Forker) Prepared() string {
	if f == nil {
		return ""
	}
	f.mu.Lock()
	var s *spare
	if len(f.queue) > 0 {
		s = f.queue[0]
	}
	f.mu.Unlock()
	if s == nil {
		return ""
	}
	<-s.ready
	if s.err != nil || s.limit == nil {
		return ""
	}
	return s.limit.dir
}

// take hands out a prepared thread for a command, sandboxed on it or
// not, whose thread sandbox a thread built ahead may serve if it has
// payload (nil: none can), waiting for its preparation to end: the one
// built for payload if it fits, else one not built; nil when there is
// none (or it failed: the caller goes the usual way). A built thread
// that does not fit is retired.
func (f *Forker) take(sandboxed bool, payload []byte) *spare {
	if f == nil {
		return nil
	}
	for {
		f.mu.Lock()
		i := f.pickLocked(sandboxed, payload)
		var s *spare
		if i >= 0 {
			s = f.queue[i]
			f.queue = slices.Delete(f.queue, i, i+1)
		}
		f.mu.Unlock()
		if s == nil {
			return nil
		}
		<-s.ready
		if s.err != nil {
			<-s.gone
			if s.limit != nil {
				// A spare that retired in its cgroup: removed once its
				// thread is gone (close retries for a second).
				go s.limit.close()
			}
			return nil
		}
		if s.fits == nil || (payload != nil && s.fits(payload)) {
			return s
		}
		f.mu.Lock()
		closed := f.closed
		if !closed {
			f.retireLocked(s)
		}
		f.mu.Unlock()
		if closed {
			s.discard() // Close is not waiting for it
		}
	}
}

// pickLocked is the index of the spare take hands out (see take): the
// one built for payload if it is ready (a burst of calls does not wait
// for a build while a thread not built is ready), else one not built for
// any — a warmed one first for a sandboxed command, one not warmed first
// for another — else the first; -1 when the queue is empty.
func (f *Forker) pickLocked(sandboxed bool, payload []byte) int {
	if len(f.queue) == 0 {
		return -1
	}
	if payload != nil {
		for i, s := range f.queue {
			if s.buildFor != nil && bytes.Equal(s.buildFor, payload) && (s.isReady() || !f.readyWarmLocked()) {
				return i
			}
		}
	}
	first := -1
	for i, s := range f.queue {
		if s.buildFor != nil {
			continue
		}
		if (s.warm != nil) == sandboxed {
			return i
		}
		if first < 0 {
			first = i
		}
	}
	return max(first, 0)
}

// Refill prepares threads up to forkAhead, when the Forker keeps them
// ahead. Call it when a request is answered (the agent then thinks): a
// preparation makes a cgroup, warms and sandboxes a thread, which is
// work the next request then finds done (see Spec.Pending).
func (f *Forker) Refill() {
	if f == nil || !f.ahead {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refillLocked()
}

func (f *Forker) refillLocked() {
	for f.ahead && !f.closed && len(f.queue) < forkAhead {
		f.queue = append(f.queue, f.prepareLocked())
	}
}

// A thread that blocks in the kernel without giving up its P (a move of
// another thread into a cgroup by number waits for an RCU grace period,
// 5–25 ms here after a quiet moment; a mount namespace torn down waits
// for one too) leaves, with as many Ps as CPUs, one fewer for the request
// being answered, which then waits until it returns or the runtime's
// monitor takes the P back (up to 10 ms after a quiet moment). A program
// with a Forker runs spareProcsAdded more Ps, so those waits never hold up a
// request. (Measured with BenchmarkSpawnPaced: burst calls of 10–13 ms
// became 3.5–4 ms when every move waited. Since a thread moves itself,
// which does not wait, burst calls took 3.0–4.3 ms with them against
// 3.5–3.7 without, three runs each, and the wrapper's start did not
// change: they stay.) Only a server's Forker adds them: the wrapper,
// whose one command waits on no such move, started in 0.85 of the wall
// time and 0.82 of the CPU without them (session 20: farm-bench, 50
// pairs), its start being CPU-bound on two processors, where more Ps
// meant more threads and more of them spinning for work.
var spareProcs sync.Once

const spareProcsAdded = 2

// forkAhead is how many threads a server keeps prepared: one only warmed
// (for a call whose plan is not the last one's, or when a built thread
// no longer fits) and two built for the last plan, so that a call that
// comes right after another (whose answer started the next preparation)
// finds one ready.
const forkAhead = 3

// readyWarmLocked reports whether a spare not built for any plan is
// prepared.
func (f *Forker) readyWarmLocked() bool {
	return slices.ContainsFunc(f.queue, func(s *spare) bool { return s.buildFor == nil && s.isReady() })
}

// isReady reports whether s is prepared (or failed to be).
func (s *spare) isReady() bool {
	select {
	case <-s.ready:
		return true
	default:
		return false
	}
}

// prepareLocked starts preparing a thread after the last one queued,
// built for the expected payload when one queued is warmed only (for a
// call whose plan is another, or a built thread that no longer fits).
func (f *Forker) prepareLocked() *spare {
	var after <-chan struct{}
	if n := len(f.queue); n > 0 {
		after = f.queue[n-1].ready
	}
	s := prepareSpare(f.cgroups, f.warm)
	fallback := slices.ContainsFunc(f.queue, func(q *spare) bool { return q.buildFor == nil && q.warm != nil })
	if f.build != nil && f.expect != nil && f.warm != nil && fallback {
		s.build, s.buildFor = f.build, f.expect
	}
	s.start(after)
	return s
}

// A spare is one prepared thread: a goroutine locked to it, in the
// cgroup limit (where the Forker has cgroups), warmed (where it has a
// Warmer), waiting for one fork. Owner: its Forker until taken, then the
// Process it forks for (the cgroup becomes the session's).
type spare struct {
	cgroup bool   // prepare in a cgroup of its own
	warm   Warmer // then warm it, when set
	// build, when set, then sandboxes the warmed thread for buildFor;
	// fits and release are what it returned (nil: nothing built).
	build    Builder
	buildFor []byte
	fits     func([]byte) bool
	release  func()
	ready    chan struct{} // closed when prepared; err says how it went
	err      error
	limit    *procLimit
	undo     func() error  // gives back what warm did; nil when not warmed
	job      chan forkJob  // the one fork; closed: retire unused
	wake     chan struct{} // a call is coming: watch for the job (see Wake)
	gone     chan struct{} // closed when the goroutine has ended
}

type forkJob struct {
	cmd     *exec.Cmd
	prepare func() error
	// sandboxed: prepare applies a thread sandbox, which takes over what
	// the warmer did; otherwise that is undone first.
	sandboxed bool
	errc      chan<- error
}

// prepareSpare is a thread to prepare, in a cgroup of its own if cgroup,
// warmed by warm if set; start starts preparing it.
func prepareSpare(cgroup bool, warm Warmer) *spare {
	return &spare{cgroup: cgroup, warm: warm, ready: make(chan struct{}), job: make(chan forkJob, 1), wake: make(chan struct{}, 1), gone: make(chan struct{})}
}

// start prepares s once after is closed (nil: at once).
func (s *spare) start(after <-chan struct{}) *spare {
	go func() {
		if after != nil {
			<-after
		}
		s.run()
	}()
	return s
}

// run is the spare's goroutine. Its thread is never given back once in
// the cgroup: it ends locked, and the runtime retires it.
func (s *spare) run() {
	defer close(s.gone)
	runtime.LockOSThread()
	if unix.Gettid() == os.Getpid() {
		// The main thread cannot be retired: hold it while another
		// goroutine, which then cannot get it, does the work.
		done := make(chan struct{})
		go func() {
			defer close(done)
			runtime.LockOSThread()
			s.work()
		}()
		<-done
		runtime.UnlockOSThread()
		return
	}
	s.work()
}

// work prepares the calling locked thread and forks the one job on it.
func (s *spare) work() {
	var err error
	if s.cgroup {
		var l *procLimit
		l, err = newProcLimit(0, newMarker())
		if err == nil {
			if err = joinCgroupV1(l.dir); err != nil {
				l.close()
			} else {
				s.limit = l
			}
		}
		tracepoint.Mark("forking thread in its cgroup")
	}
	spoilt := false
	if err == nil && s.warm != nil {
		// A thread that could not be warmed forks all the same, cold,
		// unless it could not be put back as it was: it then retires.
		undo, werr := s.warm()
		switch {
		case werr == nil:
			s.undo = undo
		case undo != nil:
			err, spoilt = werr, true
		}
		tracepoint.Mark("forking thread warmed")
	}
	if err == nil && s.build != nil && s.undo != nil {
		// Sandboxed ahead for the plan expected; a build that failed
		// half-way leaves the thread unusable: it retires.
		fits, release, berr := s.build(s.buildFor)
		switch {
		case berr != nil:
			err, spoilt = berr, true
		case fits != nil:
			s.fits, s.release = fits, release
		}
		tracepoint.Mark("forking thread built")
	}
	s.err = err
	close(s.ready)
	if spoilt {
		return // retired; its cgroup goes with take or discard
	}
	if err != nil {
		// Never moved: the thread may serve again.
		runtime.UnlockOSThread()
		return
	}
	var j forkJob
	var ok bool
	select {
	case j, ok = <-s.job:
	case <-s.wake:
		j, ok = s.watchForJob()
	}
	if !ok {
		if s.release != nil {
			s.release()
		}
		if s.undo != nil {
			s.undo()
		}
		return // retired unused
	}
	if s.fits != nil && !j.sandboxed {
		// take hands a built thread only to the plan it fits.
		s.release()
		j.errc <- errors.New("fork: a thread sandboxed ahead was given an unsandboxed command")
		return
	}
	if s.undo != nil {
		if !j.sandboxed {
			if err := s.undo(); err != nil {
				j.errc <- err
				return
			}
		}
		// Whatever prepare did not take over is given back once the
		// fork is done (nothing, after a thread sandbox).
		defer s.undo()
	}
	// The scheduling policy the command inherits (see forkPolicy); the
	// thread retires after the fork, so nothing is restored.
	if _, err := forkPolicy(); err != nil {
		j.errc <- err
		return
	}
	if j.prepare != nil {
		if err := j.prepare(); err != nil {
			j.errc <- err
			return
		}
	}
	tracepoint.Mark("sandboxed the forking thread")
	j.errc <- startChild(j.cmd)
}

// Wake tells the thread prepared for the next command that a call has
// come (its sandbox is being planned): it watches for its job for a
// moment instead of sleeping, so that handing the job over costs no
// wake-up (a tenth of a millisecond, more after a quiet moment) once the
// plan is made.
func (f *Forker) Wake() {
	if f == nil {
		return
	}
	f.mu.Lock()
	var s *spare
	if len(f.queue) > 0 {
		s = f.queue[0]
	}
	f.mu.Unlock()
	if s != nil {
		select {
		case s.wake <- struct{}{}:
		default: // woken already
		}
	}
}

// watchWindow bounds how long a woken thread watches for its job (a call
// refused, or waiting for a person's answer, brings none soon).
const watchWindow = 2 * time.Millisecond

// watchForJob waits for the job without sleeping for up to watchWindow,
// then as usual.
func (s *spare) watchForJob() (forkJob, bool) {
	for deadline := time.Now().Add(watchWindow); time.Now().Before(deadline); {
		select {
		case j, ok := <-s.job:
			return j, ok
		default:
		}
	}
	j, ok := <-s.job
	return j, ok
}

// fork starts cmd on the prepared thread, after prepare there.
func (s *spare) fork(cmd *exec.Cmd, prepare func() error, sandboxed bool) error {
	errc := make(chan error, 1)
	s.job <- forkJob{cmd: cmd, prepare: prepare, sandboxed: sandboxed, errc: errc}
	return <-errc
}

// discard retires a spare that was never taken and removes its cgroup.
func (s *spare) discard() {
	<-s.ready
	close(s.job)
	<-s.gone
	if s.limit != nil {
		s.limit.close()
	}
}

// discardTaken retires a spare that was taken but never forked from (the
// start failed before); its cgroup, the session's, is the caller's to
// remove. A nil spare does nothing.
func (s *spare) discardTaken() {
	if s == nil {
		return
	}
	close(s.job)
	<-s.gone
}
