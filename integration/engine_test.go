//go:build linux

package integration

import (
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

var limitNote = regexp.MustCompile(`(?m)^No process limit on this host \(.*\): \[limits\] max_processes is not enforced\.\n`)

var header = regexp.MustCompile(`^Chunk ID: ([0-9a-f]{6})\nWall time: \d+\.\d{4} seconds\n`)

func TestMCPEchoHi(t *testing.T) {
	s := startServer(t, serverOpts{})
	text, _, res := s.call("exec_command", map[string]any{"cmd": "echo hi", "login": false})
	m := header.FindStringSubmatch(text)
	// Where sessions get no process limit (an ordinary user without a
	// delegated cgroup), the first response says so once.
	text = limitNote.ReplaceAllString(text, "")
	if m == nil || !strings.HasSuffix(text, "Process exited with code 0\nOriginal token count: 1\nOutput:\nhi\n") || strings.Contains(text, "session ID") {
		t.Fatalf("text:\n%s", text)
	}
	st := structured(t, res)
	if st["chunk_id"] != m[1] || st["exit_code"] != float64(0) || st["output"] != "hi\n" || st["session_id"] != nil {
		t.Fatalf("structured: %v", st)
	}
	text2 := s.exec(map[string]any{"cmd": "echo hi"})
	if header.FindStringSubmatch(text2)[1] == m[1] {
		t.Fatal("same chunk id twice")
	}
}

func TestMCPSessionLifecycle(t *testing.T) {
	s := startServer(t, serverOpts{})
	text := s.exec(map[string]any{"cmd": "sleep 0.8; echo ready", "yield_time_ms": 1})
	id := sessionID(t, text)
	if id < 1000 {
		t.Fatalf("session id %d", id)
	}
	var got string
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(got, "Process exited with code 0") {
		if time.Now().After(deadline) {
			t.Fatalf("never exited: %s", got)
		}
		text, isErr, _ := s.call("write_stdin", map[string]any{"session_id": id, "yield_time_ms": 2000})
		if isErr {
			t.Fatal(text)
		}
		got += text
	}
	if !strings.Contains(got, "ready") {
		t.Fatalf("no output: %s", got)
	}
	text, isErr, _ := s.call("write_stdin", map[string]any{"session_id": id, "chars": "x"})
	if !isErr || !strings.Contains(text, "exited") {
		t.Fatalf("write after exit: %v %s", isErr, text)
	}
	text, isErr, _ = s.call("read_log", map[string]any{"session_id": id})
	if isErr || !strings.Contains(text, "ready") {
		t.Fatalf("read_log: %s", text)
	}
	text, isErr, _ = s.call("write_stdin", map[string]any{"session_id": 99999})
	if !isErr || !strings.Contains(text, "99999") || !strings.Contains(text, "list_sessions") {
		t.Fatalf("unknown session: %s", text)
	}
}

func TestMCPInteractive(t *testing.T) {
	s := startServer(t, serverOpts{})
	// Long windows: both calls end early at python's prompt ("waiting for
	// input"); on a loaded machine the window is there to wait out the start.
	id := sessionID(t, s.exec(map[string]any{"cmd": "python3 -i -q", "tty": true, "yield_time_ms": 20000}))
	text, _, _ := s.call("write_stdin", map[string]any{"session_id": id, "chars": "print(40+2)\n", "yield_time_ms": 20000})
	if !strings.Contains(output(text), "42") {
		t.Fatalf("python: %s", text)
	}
	text, _, _ = s.call("list_sessions", map[string]any{})
	if !strings.Contains(text, fmt.Sprint(id)) || !strings.Contains(text, "python3") {
		t.Fatalf("list: %s", text)
	}
	text, isErr, _ := s.call("kill_session", map[string]any{"session_id": id})
	if isErr || !strings.Contains(text, "Process exited with code") {
		t.Fatalf("kill: %s", text)
	}
}

func TestMCPBadArguments(t *testing.T) {
	s := startServer(t, serverOpts{})
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"exec_command", map[string]any{"cmd": "true", "bogus": 1}, `"bogus"`},
		{"exec_command", map[string]any{"cmd": 5}, `"cmd"`},
		{"exec_command", map[string]any{}, `"cmd"`},
		{"exec_command", map[string]any{"cmd": "true", "yield_time_ms": "soon"}, `"yield_time_ms"`},
		{"exec_command", map[string]any{"cmd": "true", "sandbox_permissions": "root"}, `"sandbox_permissions"`},
		{"exec_command", map[string]any{"cmd": "true", "workdir": "missing-dir"}, `missing-dir`},
		{"exec_command", map[string]any{"cmd": "true", "shell": "/bin/nope"}, `/bin/nope`},
		{"write_stdin", map[string]any{"session_id": "1000"}, `"session_id"`},
		{"write_stdin", map[string]any{}, `"session_id"`},
		{"write_stdin", map[string]any{"session_id": 1000, "keys": []string{"Hyper-Q"}}, `Hyper-Q`},
		{"read_log", map[string]any{"session_id": 1000, "limit": 0}, `"limit"`},
		{"kill_session", map[string]any{"session_id": 4444}, `4444`},
	}
	for _, c := range cases {
		text, isErr, _ := s.call(c.tool, c.args)
		if !isErr || !strings.Contains(text, c.want) {
			t.Errorf("%s %v: isError=%v %q (want mention of %s)", c.tool, c.args, isErr, text, c.want)
		}
	}
}

// TestMCPEOFKillsSessions: when the client goes away, no child survives.
func TestMCPEOFKillsSessions(t *testing.T) {
	s := startServer(t, serverOpts{})
	tag := fmt.Sprintf("31%d.%d", rand.IntN(1000), rand.IntN(1000))
	s.exec(map[string]any{"cmd": "setsid sleep " + tag + " & sleep " + tag, "yield_time_ms": 300})
	waitFor(t, func() bool { return len(procsWith(tag)) >= 2 })
	s.session.Close()
	waitFor(t, func() bool { return len(procsWith(tag)) == 0 })
}

func TestWrapExitCode(t *testing.T) {
	out, code := wrap(t, nil, "bash", "-c", "echo out; echo err >&2; exit 7")
	if code != 7 || !strings.Contains(out, "out") || !strings.Contains(out, "err") {
		t.Fatalf("code %d out %q", code, out)
	}
}

func procsWith(s string) []string {
	var found []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), s) {
			found = append(found, e.Name())
		}
	}
	return found
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	waitWithin(t, 15*time.Second, cond)
}

// waitWithin is waitFor with its own bound (a loaded machine may take
// long to end what a test started; the bound only keeps a hang finite).
func waitWithin(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServerKill9: when the server dies hard, every descendant dies too.
func TestServerKill9(t *testing.T) {
	s := startServer(t, serverOpts{})
	tag := fmt.Sprintf("32%d.%d", rand.IntN(1000), rand.IntN(1000))
	s.exec(map[string]any{"cmd": "setsid sleep " + tag + " & (sleep " + tag + " &); sleep " + tag, "yield_time_ms": 300})
	s.exec(map[string]any{"cmd": "bash --norc -ic 'sleep " + tag + " & sleep " + tag + "' </dev/null", "tty": true, "yield_time_ms": 300})
	waitFor(t, func() bool { return len(procsWith(tag)) >= 5 })
	s.cmd.Process.Kill()
	waitFor(t, func() bool { return len(procsWith(tag)) == 0 })
}
