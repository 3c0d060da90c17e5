//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBadInputCatalogue: each bad input gets a clear error or a clamp —
// never a panic, a hang, or lost data.
func TestBadInputCatalogue(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "afile"), []byte("x"), 0o644)
	s := startServer(t, serverOpts{workspace: ws})
	errs := []struct {
		name string
		tool string
		args map[string]any
		want string
	}{
		{"empty cmd", "exec_command", map[string]any{"cmd": ""}, `"cmd"`},
		{"blank cmd", "exec_command", map[string]any{"cmd": "   "}, `"cmd"`},
		{"NUL in cmd", "exec_command", map[string]any{"cmd": "echo a\x00b"}, "NUL"},
		{"workdir is a file", "exec_command", map[string]any{"cmd": "true", "workdir": "afile"}, "not a directory"},
		{"missing shell", "exec_command", map[string]any{"cmd": "true", "shell": "/no/such/shell"}, "/no/such/shell"},
		{"session id wrong type", "write_stdin", map[string]any{"session_id": "abc"}, `"session_id"`},
		{"session id float", "write_stdin", map[string]any{"session_id": 1000.5}, `"session_id"`},
		{"rows out of range", "exec_command", map[string]any{"cmd": "true", "tty": true, "rows": 0}, `"rows"`},
		{"tool args not object", "list_sessions", map[string]any{"x": 1}, `"x"`},
		{"negative yield", "exec_command", map[string]any{"cmd": "echo never", "yield_time_ms": -5}, `"yield_time_ms"`},
		{"negative tokens", "exec_command", map[string]any{"cmd": "echo never", "max_output_tokens": -3}, `"max_output_tokens"`},
		{"negative poll yield", "write_stdin", map[string]any{"session_id": 1000, "yield_time_ms": -1}, `"yield_time_ms"`},
		{"negative poll tokens", "write_stdin", map[string]any{"session_id": 1000, "max_output_tokens": -1}, `"max_output_tokens"`},
	}
	for _, c := range errs {
		t.Run(c.name, func(t *testing.T) {
			text, isErr, _ := s.call(c.tool, c.args)
			if !isErr || !strings.Contains(text, c.want) {
				t.Fatalf("isError=%v %q (want %s)", isErr, text, c.want)
			}
		})
	}
	clamps := []struct {
		name string
		args map[string]any
		want string
	}{
		{"zero yield", map[string]any{"cmd": "echo clamp", "yield_time_ms": 0}, "clamp"},
		{"huge yield", map[string]any{"cmd": "echo clamp", "yield_time_ms": 1 << 40}, "clamp"},
		{"zero tokens: only the marker", map[string]any{"cmd": "echo clamp", "max_output_tokens": 0}, "…2 tokens truncated…"},
		{"huge tokens", map[string]any{"cmd": "echo clamp", "max_output_tokens": 1 << 40}, "clamp"},
		{"invalid UTF-8 in cmd", map[string]any{"cmd": "echo \xff\xfe ok"}, "ok"},
	}
	for _, c := range clamps {
		t.Run(c.name, func(t *testing.T) {
			c.args["login"] = false
			text, isErr, _ := s.call("exec_command", c.args)
			if isErr || !strings.Contains(text, "exited with code 0") || !strings.Contains(output(text), c.want) {
				t.Fatalf("%q", text)
			}
		})
	}
	t.Run("1 MiB to a child that does not read", func(t *testing.T) {
		id := sessionID(t, s.exec(map[string]any{"cmd": "sleep 30", "tty": true, "yield_time_ms": 250}))
		start := time.Now()
		text, isErr, _ := s.call("write_stdin", map[string]any{"session_id": id, "chars": strings.Repeat("y", 1<<20+10), "yield_time_ms": 1000})
		// The terminal may take it all (and echo it) or stop taking it;
		// either way the call returns within its window plus a margin.
		if isErr || time.Since(start) > 10*time.Second || !strings.Contains(text, "session ID") {
			t.Fatalf("%v %v %q", isErr, time.Since(start), text[:min(len(text), 300)])
		}
		if text, isErr, _ := s.call("kill_session", map[string]any{"session_id": id}); isErr {
			t.Fatal(text)
		}
	})
	t.Run("NUL bytes through a terminal", func(t *testing.T) {
		id := sessionID(t, s.exec(map[string]any{"cmd": "cat -v", "tty": true, "yield_time_ms": 250}))
		// Ends early once cat has printed the line and reads again.
		text, _, _ := s.call("write_stdin", map[string]any{"session_id": id, "chars": "a\x00b\n", "yield_time_ms": 20000})
		if !strings.Contains(output(text), "a^@b") {
			t.Fatalf("%q", text)
		}
		s.call("kill_session", map[string]any{"session_id": id})
	})
}

func TestBadPolicies(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"not TOML":      "this is not toml [",
		"empty pattern": "[[rule]]\npattern = []\ndecision = \"allow\"\n",
		"unknown key":   "[sandbox]\nnetwrk = true\n",
		"wrong type":    "[limits]\nmax_sessions = \"many\"\n",
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			f := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".toml")
			os.WriteFile(f, []byte(text), 0o644)
			out, code := wrap(t, []string{"--policy", f}, "true")
			if code != 125 || !strings.Contains(out, f+":") {
				t.Fatalf("exit %d: %s", code, out)
			}
		})
	}
}
