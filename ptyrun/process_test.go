//go:build linux

package ptyrun

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	MaybeRunHelper(nil)
	enterOwnPIDs()
	os.Exit(m.Run())
}

// syncBuf is an io.Writer safe for the pump and the test.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type mode struct {
	name   string
	tty    bool
	helper *Helper
}

func modes(t *testing.T) []mode {
	ms := []mode{{"pipe", false, nil}, {"pty", true, nil}}
	if ok, err := IsolationAvailable(); ok {
		ms = append(ms, mode{"pipe-isolated", false, &Helper{Isolate: true}}, mode{"pty-isolated", true, &Helper{Isolate: true}})
	} else if os.Getenv("UNIFIED_EXEC_REQUIRE_SANDBOX") == "1" {
		t.Fatalf("isolation required but unavailable: %v", err)
	} else {
		t.Logf("isolated modes skipped: %v", err)
	}
	ms = append(ms, mode{"pty-helper", true, &Helper{}},
		mode{"pipe-thread", false, threadHelper()}, mode{"pty-thread", true, threadHelper()})
	return ms
}

// threadHelper forks from a dedicated thread, as a thread sandbox does,
// with nothing applied.
func threadHelper() *Helper {
	return &Helper{Payload: []byte("{}"), Thread: func([]byte, string) error { return nil }}
}

func run(t *testing.T, m mode, script string) (string, ExitStatus) {
	t.Helper()
	var out syncBuf
	p, err := Start(Spec{Argv: []string{"/bin/bash", "-c", script}, TTY: m.tty, Output: &out, Helper: m.helper})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(20 * time.Second):
		p.Kill(0)
		t.Fatalf("%q did not finish", script)
	}
	return out.String(), p.ExitStatus()
}

func TestExitAndOutput(t *testing.T) {
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			out, st := run(t, m, "echo hi; echo err >&2")
			if st.Code != 0 || !strings.Contains(out, "hi") || !strings.Contains(out, "err") {
				t.Fatalf("got %q %v", out, st)
			}
			if _, st = run(t, m, "exit 17"); st.Code != 17 || st.Signal != 0 {
				t.Fatalf("exit 17: got %v", st)
			}
			if _, st = run(t, m, "kill -SEGV $$"); st.Code != 128+11 || st.Signal != syscall.SIGSEGV {
				t.Fatalf("SIGSEGV: got %v", st)
			}
			if st.String() != "signal SIGSEGV (139)" {
				t.Fatalf("String: %q", st.String())
			}
		})
	}
}

func TestTerminal(t *testing.T) {
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			out, _ := run(t, m, "if [ -t 1 ]; then echo TTY-yes; else echo TTY-no; fi; stty size 2>/dev/null || true")
			want := "TTY-no"
			if m.tty {
				want = "TTY-yes"
				if !strings.Contains(out, "24 80") {
					t.Errorf("stty size: %q", out)
				}
			}
			if !strings.Contains(out, want) {
				t.Fatalf("want %s in %q", want, out)
			}
		})
	}
}

func TestTailNotLost(t *testing.T) {
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			for i := 0; i < 5; i++ {
				out, st := run(t, m, "head -c 200000 /dev/zero | tr '\\0' x; echo; echo THE-END")
				if st.Code != 0 || !strings.Contains(out, "THE-END") || strings.Count(out, "x") != 200000 {
					t.Fatalf("run %d: lost output or failed: status %v, %d bytes of output, %d x's, tail %q", i, st, len(out), strings.Count(out, "x"), out[max(0, len(out)-40):])
				}
			}
		})
	}
}

func TestInteractive(t *testing.T) {
	for _, m := range modes(t) {
		if !m.tty {
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			var out syncBuf
			p, err := Start(Spec{Argv: []string{"/bin/cat"}, TTY: true, Output: &out, Helper: m.helper})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Kill(0)
			p.Write([]byte("hello cat\n"))
			waitFor(t, func() bool { return strings.Count(out.String(), "hello cat") >= 2 })
			p.Write([]byte{4})
			select {
			case <-p.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("cat did not end on ^D")
			}
			if st := p.ExitStatus(); st.Code != 0 {
				t.Fatalf("cat: %v", st)
			}
		})
	}
}

func TestCtrlC(t *testing.T) {
	for _, m := range modes(t) {
		if !m.tty {
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			var out syncBuf
			p, err := Start(Spec{Argv: []string{"/bin/bash", "-c", "echo started; sleep 30"}, TTY: true, Output: &out, Helper: m.helper})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Kill(0)
			waitFor(t, func() bool { return strings.Contains(out.String(), "started") })
			time.Sleep(50 * time.Millisecond)
			p.Write([]byte{3})
			select {
			case <-p.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("^C did not interrupt")
			}
			if st := p.ExitStatus(); st.Code != 130 {
				t.Fatalf("want 130, got %v", st)
			}
		})
	}
}

// TestKillTree starts descendants that escape the process group and
// checks that none outlives the kill, and none is left a zombie.
func TestKillTree(t *testing.T) {
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			tag := fmt.Sprintf("%d.%04d", 3000+rand.IntN(1000), rand.IntN(10000))
			script := fmt.Sprintf(`setsid sleep %[1]s & (sleep %[1]s &) ; bash --norc -ic 'sleep %[1]s & disown' </dev/null >/dev/null 2>&1; setsid bash -c '(setsid sleep %[1]s &)' ; echo up; sleep %[1]s`, tag)
			var out syncBuf
			p, err := Start(Spec{Argv: []string{"/bin/bash", "-c", script}, TTY: m.tty, Output: &out, Helper: m.helper})
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, func() bool { return strings.Contains(out.String(), "up") })
			waitFor(t, func() bool { return len(procsWith(tag)) >= 5 })
			p.Kill(500 * time.Millisecond)
			waitFor(t, func() bool { return len(procsWith(tag)) == 0 })
			if z := zombieChildren(); len(z) > 0 {
				t.Fatalf("zombies left: %v %s", z, describe(z))
			}
		})
	}
}

// TestExitEndsTree: when the leader exits, its leftovers are ended too.
func TestExitEndsTree(t *testing.T) {
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			tag := fmt.Sprintf("%d.%04d", 4000+rand.IntN(1000), rand.IntN(10000))
			_, st := run(t, m, fmt.Sprintf("setsid sleep %s & sleep 0.2; exit 3", tag))
			if st.Code != 3 {
				t.Fatalf("got %v", st)
			}
			waitFor(t, func() bool { return len(procsWith(tag)) == 0 })
			if z := zombieChildren(); len(z) > 0 {
				t.Fatalf("zombies left: %v %s", z, describe(z))
			}
		})
	}
}

func TestErrors(t *testing.T) {
	if _, err := Start(Spec{}); err == nil {
		t.Fatal("empty command accepted")
	}
	_, err := Start(Spec{Argv: []string{"/bin/true"}, Dir: "/nonexistent-dir"})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent-dir") {
		t.Fatalf("missing dir: %v", err)
	}
	_, err = Start(Spec{Argv: []string{"/no/such/shell", "-c", "true"}})
	if err == nil || !strings.Contains(err.Error(), "/no/such/shell") {
		t.Fatalf("missing shell: %v", err)
	}
	p, err := Start(Spec{Argv: []string{"/bin/true"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Write([]byte("x")); err != ErrNoStdin {
		t.Fatalf("pipe write: %v", err)
	}
	<-p.Done()
}

// procsWith lists live (non-zombie) processes whose command line contains s,
// and fails on zombies left behind.
func procsWith(s string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cmd, []byte(s)) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	waitForWithin(t, 15*time.Second, cond)
}

// waitForWithin is waitFor with a bound of d.
func waitForWithin(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met in %v", d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// zombieChildren lists zombie children of the test process.
func zombieChildren() []int {
	var z []int
	self := os.Getpid()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		var state string
		var ppid int
		fmt.Sscan(string(b[i+1:]), &state, &ppid)
		if state == "Z" && ppid == self {
			var pid int
			fmt.Sscan(e.Name(), &pid)
			z = append(z, pid)
		}
	}
	return z
}

func describe(pids []int) string {
	var s []string
	for _, p := range pids {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		s = append(s, string(b[:min(len(b), 40)]))
	}
	return strings.Join(s, "; ")
}

// TestSlowExitReaped: a process of the session that takes long to die (it
// frees a lot of memory first) and was handed to us is still reaped: no
// zombie is left once the session has ended.
func TestSlowExitReaped(t *testing.T) {
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			tag := fmt.Sprintf("%d.%04d", 5000+rand.IntN(1000), rand.IntN(10000))
			script := fmt.Sprintf(`(perl -e '$|=1; $SIG{TERM}="IGNORE"; $x="x" x (1<<29); print "big\n"; sleep %[1]s' &); (perl -e '$|=1; $x="x" x (1<<29); print "big\n"; sleep %[1]s' &); (setsid perl -e '$|=1; $x="x" x (1<<29); print "big\n"; sleep %[1]s' &); echo up; sleep %[1]s`, tag)
			var out syncBuf
			p, err := Start(Spec{Argv: []string{"/bin/bash", "-c", script}, TTY: m.tty, Output: &out, Helper: m.helper})
			if err != nil {
				t.Fatal(err)
			}
			// A failure below must not leave 1.5 GiB of processes to
			// the next modes (CI as the ordinary user, on a loaded
			// machine: the first wait ran out, and every later mode
			// with it).
			t.Cleanup(func() { p.Kill(0) })
			waitForWithin(t, time.Minute, func() bool { return strings.Count(out.String(), "big") == 3 })
			p.Kill(100 * time.Millisecond)
			waitFor(t, func() bool { return len(procsWith(tag)) == 0 })
			if z := zombieChildren(); len(z) > 0 {
				t.Fatalf("zombies left: %v %s", z, describe(z))
			}
		})
	}
}

// TestSessionEndSparesNewcomerWithLeaderPid: between the leader's exit and
// the kill of what is left of its session, a new process that got the
// leader's number and made itself a session of its own (sid = that
// number, as every session leader is) must not be killed with the old
// session. The number is handed out on purpose (ns_last_pid, root only):
// with the leader still unreaped it cannot be, so the newcomer gets
// another and lives.
func TestSessionEndSparesNewcomerWithLeaderPid(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("handing a chosen pid to a new process (ns_last_pid) needs root")
	}
	var newcomer *exec.Cmd
	leaderExited = func(pid int) {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
			t.Errorf("ns_last_pid: %v", err)
			return
		}
		c := exec.Command("sleep", "30")
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := c.Start(); err != nil {
			t.Errorf("starting the newcomer: %v", err)
			return
		}
		newcomer = c
	}
	defer func() { leaderExited = nil }()
	p, err := Start(Spec{Argv: []string{"/bin/true"}})
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	leaderExited = nil
	if newcomer == nil {
		t.Fatal("the hook never ran")
	}
	defer func() { newcomer.Process.Kill(); newcomer.Wait() }()
	if state, _, _, _ := procStat(newcomer.Process.Pid); state == "Z" || state == "" {
		t.Fatalf("the newcomer (pid %d, the leader was %d) died with the old session", newcomer.Process.Pid, p.Pid())
	}
}

// TestTailNotLostAtDrainCap: when wait gives up waiting for the end of
// the output (drainCap) while the pump is slow — here the output sink
// holds it until then; on a loaded machine the scheduler does — what the
// command wrote before it exited is still delivered, its tail too.
// Before the fix the read deadline that ends the wait cut it off.
func TestTailNotLostAtDrainCap(t *testing.T) {
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			gaveUp := make(chan struct{})
			var once sync.Once
			drainGaveUp = func() { once.Do(func() { close(gaveUp) }) }
			defer func() { drainGaveUp = nil }()
			// The command writes its first line, then the rest once
			// the pump holds that line (it waits on a fifo the sink
			// opens): the rest is still in the terminal or pipe when
			// wait gives up.
			fifo := filepath.Join(t.TempDir(), "go-on")
			if err := unix.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			var out syncBuf
			first := true
			sink := writerFunc(func(b []byte) (int, error) {
				if first {
					first = false
					out.Write(b)
					f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
					if err != nil {
						return 0, err
					}
					f.Close()
					<-gaveUp // held until wait has given up on the drain
					return len(b), nil
				}
				return out.Write(b)
			})
			// Less than a terminal or pipe holds: the command exits
			// while the sink holds the pump.
			script := "echo first; read -r _ < " + fifo + "; head -c 3000 /dev/zero | tr '\\0' x; echo; echo THE-END"
			p, err := Start(Spec{Argv: []string{"/bin/bash", "-c", script}, TTY: m.tty, Output: sink, Helper: m.helper})
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-p.Done():
			case <-time.After(20 * time.Second):
				p.Kill(0)
				t.Fatal("the session did not end")
			}
			got := out.String()
			if st := p.ExitStatus(); st.Code != 0 || !strings.Contains(got, "THE-END") || strings.Count(got, "x") != 3000 {
				t.Fatalf("status %v, %d bytes, %d x's, tail %q", st, len(got), strings.Count(got, "x"), got[max(0, len(got)-40):])
			}
		})
	}
}
