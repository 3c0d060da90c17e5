package integration

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestFullTmp: with /tmp full, the server keeps serving: commands run, a
// write to /tmp fails with its error in the response, and long output
// keeps its tail (the server holds output in memory, never in /tmp).
func TestFullTmp(t *testing.T) {
	if err := exec.Command("unshare", "-m", "true").Run(); err != nil {
		if os.Getenv("UNIFIED_EXEC_REQUIRE_SANDBOX") == "1" {
			t.Fatalf("mount namespaces required but unavailable: %v", err)
		}
		t.Skipf("no mount namespace for a private /tmp: %v", err)
	}
	ws, err := os.MkdirTemp("/var/tmp", "ue-fulltmp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(ws) })
	// The binary lives under /tmp, which is about to be covered.
	bin := ws + "/unified-exec"
	if out, err := exec.Command("cp", binary, bin).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	// A 64 KiB tmpfs on /tmp, filled up, in a mount namespace of the
	// server's own.
	fill := `mount -t tmpfs -o size=64k tmpfs /tmp && (dd if=/dev/zero of=/tmp/fill bs=4k 2>/dev/null; true) && [ "$(df --output=avail /tmp | tail -1)" -eq 0 ] && exec ` + bin + ` "$@"`
	s := startServer(t, serverOpts{wrapper: []string{"unshare", "-m", "--propagation", "private", "sh", "-c", fill}, workspace: ws})

	if out := output(s.exec(map[string]any{"cmd": "echo hi; df --output=avail /tmp | tail -1"})); !strings.HasPrefix(out, "hi\n") || strings.TrimSpace(strings.TrimPrefix(out, "hi\n")) != "0" {
		t.Fatalf("/tmp is not the full tmpfs, or echo failed: %q", out)
	}
	text := s.exec(map[string]any{"cmd": "echo x > /tmp/f; echo rc=$?; head -c 100000 /dev/zero > \"$(mktemp)\"; echo rc=$?"})
	if out := output(text); !strings.Contains(out, "No space left on device") || strings.Count(out, "rc=1") != 2 {
		t.Fatalf("writes to a full /tmp did not report their error:\n%s", text)
	}
	text = s.exec(map[string]any{"cmd": "seq 1 200000", "yield_time_ms": 20000})
	if !strings.Contains(text, "exited with code 0") || !strings.HasSuffix(strings.TrimSpace(output(text)), "\n200000") {
		t.Fatalf("long output under a full /tmp lost its tail:\n%s", text[max(0, len(text)-300):])
	}
	for _, tty := range []bool{true, false} {
		if out := output(s.exec(map[string]any{"cmd": "echo still-serving", "tty": tty})); !strings.Contains(out, "still-serving") {
			t.Fatalf("tty=%v: %q", tty, out)
		}
	}
}
