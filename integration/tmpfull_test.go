//go:build linux

package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The fault "a full /tmp": the server runs in a mount namespace of its own
// whose /tmp is a 256 KiB tmpfs filled to the last block before the server
// starts. The server keeps output in memory, so nothing it answers may be
// lost; what fails is the commands' own writes to /tmp, and their error
// text and exit code must reach the client.

// tmpfullScript mounts the tiny tmpfs on /tmp, fills it, checks that it is
// full and execs the server's copy. Arguments: $1 the copy (outside /tmp),
// $2 the build's own path (under the old /tmp, which the mount hides;
// startServer appends it), then the server's arguments.
const tmpfullScript = `set -e
bin=$1; shift 2
mount -t tmpfs -o size=256k,mode=1777 tmpfs /tmp
dd if=/dev/zero of=/tmp/fill bs=4k 2>/dev/null || true
avail=$(df -k --output=avail /tmp | tail -n 1 | tr -d ' ')
[ "$avail" = 0 ] || { echo "tmpfull: /tmp still has $avail KiB free" >&2; exit 97; }
exec "$bin" "$@"`

// requireTmpfull skips (or fails under UNIFIED_EXEC_REQUIRE_SANDBOX=1) when
// this host cannot give a process a private mount namespace with a tmpfs.
func requireTmpfull(t *testing.T) {
	t.Helper()
	args := append(unshareMount(), "sh", "-c", "mount -t tmpfs -o size=256k tmpfs /tmp && df -k --output=avail /tmp >/dev/null")
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err == nil {
		return
	}
	if os.Getenv("UNIFIED_EXEC_REQUIRE_SANDBOX") == "1" {
		t.Fatalf("a private mount namespace with a tmpfs on /tmp is required but unavailable: %v %s", err, out)
	}
	t.Skipf("no private mount namespace with a tmpfs on /tmp here (unshare/mount): %v %s", err, out)
}

// unshareMount is the unshare command line that gives a private mount
// namespace: an ordinary user gets it in a user namespace mapping only
// their own uid, keeping its capabilities (to mount the tmpfs) as ambient
// ones, which unified-exec inside then uses as it would its own.
func unshareMount() []string {
	if os.Getuid() == 0 {
		return []string{"unshare", "-m", "--propagation", "private"}
	}
	return []string{"unshare", "--user", "--map-current-user", "--keep-caps", "-m", "--propagation", "private"}
}

// tmpfullServer starts the server with /tmp full and returns it with its
// workspace. Workspace, policy and binary live under /var/tmp, outside the
// tmpfs; TMPDIR is /tmp, so the server's and the commands' temporary
// directory is the full one. policy, if not empty, is written to a
// policy file passed with --policy.
func tmpfullServer(t *testing.T, policy string, env ...string) (*server, string) {
	t.Helper()
	requireTmpfull(t)
	dir, err := os.MkdirTemp("/var/tmp", "ue-tmpfull-")
	if err != nil {
		t.Skipf("no directory outside /tmp for the workspace: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "unified-exec")
	// With the program it serves through, side by side.
	if out, err := exec.Command("cp", binary, binary+"-mcp", dir).CombinedOutput(); err != nil {
		t.Fatalf("copying the programs out of /tmp: %v %s", err, out)
	}
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	o := serverOpts{
		workspace: ws,
		env:       append([]string{"TMPDIR=/tmp"}, env...),
		wrapper:   append(unshareMount(), "sh", "-c", tmpfullScript, "tmpfull", bin),
	}
	if policy != "" {
		pf := filepath.Join(dir, "policy.toml")
		if err := os.WriteFile(pf, []byte(policy), 0o644); err != nil {
			t.Fatal(err)
		}
		o.args = []string{"--policy", pf}
	}
	return startServer(t, o), ws
}

// TestTmpFull: commands run and answer, writes to /tmp report their error
// and exit code, long output keeps its tail (in one call and across
// calls), and the server then exits cleanly when its stdin closes,
// leaving no process behind.
func TestTmpFull(t *testing.T) {
	s, _ := tmpfullServer(t, "")

	// The commands see the same full tmpfs.
	if out := output(s.exec(map[string]any{"cmd": "df -k --output=avail /tmp | tail -n 1"})); strings.TrimSpace(out) != "0" {
		t.Fatalf("/tmp as the commands see it is not the full tmpfs: %q", out)
	}

	t.Run("echo", func(t *testing.T) {
		for _, tty := range []bool{false, true} {
			text := s.exec(map[string]any{"cmd": "echo hi", "tty": tty})
			if !strings.Contains(text, "Process exited with code 0") || strings.TrimSpace(output(text)) != "hi" {
				t.Errorf("tty=%v: echo hi:\n%s", tty, text)
			}
		}
	})

	t.Run("write error reported", func(t *testing.T) {
		for _, tty := range []bool{false, true} {
			// The error text and the shell's $? of a failed write.
			text := s.exec(map[string]any{"cmd": "echo x > /tmp/f; echo rc=$?", "tty": tty})
			out := output(text)
			if !strings.Contains(out, "No space left on device") || !strings.Contains(out, "rc=1") || !strings.Contains(text, "Process exited with code 0") {
				t.Errorf("tty=%v: echo to a full /tmp:\n%s", tty, text)
			}
			// The failed write is the command's exit status; it is not
			// taken for a sandbox denial (no note, no retry).
			text, isErr, res := s.call("exec_command", map[string]any{
				"cmd": "head -c 100000 /dev/zero > \"$(mktemp)\"", "tty": tty, "login": false})
			if isErr || !strings.Contains(text, "No space left on device") || !strings.Contains(text, "Process exited with code 1") {
				t.Errorf("tty=%v: mktemp and write to a full $TMPDIR (isError %v):\n%s", tty, isErr, text)
			}
			if code, ok := structured(t, res)["exit_code"].(float64); !ok || code != 1 {
				t.Errorf("tty=%v: structured exit_code %v, want 1", tty, structured(t, res)["exit_code"])
			}
			if strings.Contains(text, "sandbox") {
				t.Errorf("tty=%v: ENOSPC taken for a sandbox denial:\n%s", tty, text)
			}
		}
	})

	t.Run("long output keeps its tail", func(t *testing.T) {
		for _, tty := range []bool{false, true} {
			text := s.exec(map[string]any{"cmd": "seq 1 200000", "tty": tty, "yield_time_ms": 30000})
			out := strings.TrimRight(strings.ReplaceAll(output(text), "\r\n", "\n"), "\n")
			if !strings.Contains(text, "Process exited with code 0") || !strings.HasSuffix(out, "\n199999\n200000") || !strings.HasPrefix(out, "Total output lines:") {
				t.Errorf("tty=%v: seq 1 200000 lost its tail:\n%s", tty, text[max(0, len(text)-400):])
			}
		}
	})

	t.Run("output held between calls", func(t *testing.T) {
		// The output is produced while nobody is polling; the session
		// buffer (memory) holds it for the next call and read_log.
		id := sessionID(t, s.exec(map[string]any{"cmd": "sleep 0.5; seq 1 200000; echo end-$((6*7))", "yield_time_ms": 250}))
		time.Sleep(1500 * time.Millisecond)
		var all strings.Builder
		for i := 0; ; i++ {
			text, isErr, _ := s.call("write_stdin", map[string]any{"session_id": id, "yield_time_ms": 5000})
			if isErr {
				t.Fatalf("poll: %s", text)
			}
			all.WriteString(output(text))
			if strings.Contains(text, "Process exited with code") {
				if !strings.Contains(text, "Process exited with code 0") {
					t.Fatalf("poll: %s", text)
				}
				break
			}
			if i == 20 {
				t.Fatal("the session did not exit")
			}
		}
		if out := strings.TrimRight(all.String(), "\n"); !strings.HasSuffix(out, "\n200000\nend-42") {
			t.Errorf("polled output lost its tail: …%s", out[max(0, len(out)-200):])
		}
		text, isErr, _ := s.call("read_log", map[string]any{"session_id": id, "limit": 2})
		if isErr || !strings.Contains(text, "200000") || !strings.Contains(text, "end-42") {
			t.Errorf("read_log of the last lines (isError %v): %s", isErr, text)
		}
	})

	t.Run("responsive and clean exit on stdin close", func(t *testing.T) {
		if out := output(s.exec(map[string]any{"cmd": "echo still-serving; exit 3"})); !strings.Contains(out, "still-serving") {
			t.Fatalf("after the faults: %q", out)
		}
		// A session still running at close must go too.
		tag := fmt.Sprintf("33%d.%d", rand.IntN(1000), rand.IntN(1000))
		sessionID(t, s.exec(map[string]any{"cmd": "sleep " + tag, "yield_time_ms": 250}))
		waitFor(t, func() bool { return len(procsWith(tag)) >= 1 })
		start := time.Now()
		err := s.session.Close()
		took := time.Since(start)
		// The SDK sends SIGTERM after 5 s without an exit; a clean exit
		// comes well before.
		if took > 4*time.Second {
			t.Errorf("the server took %v to exit after stdin closed", took)
		}
		st := s.cmd.ProcessState
		if st == nil || !st.Exited() || st.ExitCode() != 0 {
			t.Errorf("exit on stdin close: %v (close error %v); stderr:\n%s", st, err, s.stderr.String())
		}
		waitFor(t, func() bool { return len(procsWith(tag)) == 0 })
	})
}

// TestTmpFullAudit: the audit log is the one file the server itself writes
// where a policy puts it; on a full /tmp, required = true refuses the
// command with an error naming the log and the cause, and required = false
// lets it run.
func TestTmpFullAudit(t *testing.T) {
	t.Run("required", func(t *testing.T) {
		s, ws := tmpfullServer(t, "[audit]\npath = \"/tmp/audit.jsonl\"\nrequired = true\n")
		text, isErr, _ := s.call("exec_command", map[string]any{"cmd": "touch ran", "login": false})
		if !isErr || !strings.Contains(text, "/tmp/audit.jsonl") || !strings.Contains(text, "no space left on device") || !strings.Contains(text, "not run") {
			t.Errorf("want a refusal naming the log and ENOSPC (isError %v): %s", isErr, text)
		}
		if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
			t.Error("the command ran although its audit line could not be written")
		}
		// Still serving: the next request gets the same clear answer.
		if text, isErr, _ := s.call("exec_command", map[string]any{"cmd": "echo hi", "login": false}); !isErr || !strings.Contains(text, "no space left on device") {
			t.Errorf("second call (isError %v): %s", isErr, text)
		}
	})
	t.Run("not required", func(t *testing.T) {
		s, ws := tmpfullServer(t, "[audit]\npath = \"/tmp/audit.jsonl\"\nrequired = false\n")
		text := s.exec(map[string]any{"cmd": "touch ran; echo hi"})
		if !strings.Contains(text, "Process exited with code 0") || strings.TrimSpace(output(text)) != "hi" {
			t.Errorf("with required = false the command must run: %s", text)
		}
		if _, err := os.Stat(filepath.Join(ws, "ran")); err != nil {
			t.Error("the command did not run")
		}
		// The lost lines are said on stderr, once.
		size := strings.TrimSpace(output(s.exec(map[string]any{"cmd": "wc -c < /tmp/audit.jsonl"})))
		s.session.Close()
		if size == "0" && strings.Count(s.stderr.String(), "events are being lost") != 1 {
			t.Errorf("audit lines were lost on the full /tmp (log size %s) and the server did not say so once:\n%s", size, s.stderr.String())
		}
	})
}

// TestTmpFullStats: UNIFIED_EXEC_STATS on the full /tmp. The server keeps
// serving after SIGUSR1 although the stats file cannot be written.
func TestTmpFullStats(t *testing.T) {
	s, _ := tmpfullServer(t, "", "UNIFIED_EXEC_STATS=/tmp/ue-stats")
	// The process started relays the signal to the serving one.
	if err := s.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	out := output(s.exec(map[string]any{"cmd": "ls -l /tmp/ue-stats; cat /tmp/ue-stats; echo served"}))
	if !strings.Contains(out, "served") {
		t.Fatalf("after SIGUSR1: %q", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.session.Ping(ctx, &mcp.PingParams{}); err != nil {
		t.Fatalf("ping after SIGUSR1: %v", err)
	}
	s.session.Close()
	if !strings.Contains(out, "goroutines") && !strings.Contains(s.stderr.String(), "stats: write /tmp/ue-stats: no space left on device") {
		t.Fatalf("the stats file could not be written on the full /tmp, and the server did not say so: %q\n%s", out, s.stderr.String())
	}
}
