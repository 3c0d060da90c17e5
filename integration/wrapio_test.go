//go:build linux

package integration

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// wrapIO runs `unified-exec --workspace ws -- argv...` with stdin from in
// (nil: the test's /dev/null) and returns stdout, stderr and the exit code
// apart.
func wrapIO(t *testing.T, ws string, in *os.File, argv ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"--workspace", ws, "--"}, argv...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if in != nil {
		cmd.Stdin = in
	}
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return stdout.String(), stderr.String(), ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), 0
}

// TestWrapStreams: the wrapper is transparent to the three streams: what
// is piped in reaches the command byte for byte, a redirected file too,
// stdout and stderr stay apart, and binary data (every byte value, no
// newline at the end) comes out as it went in.
func TestWrapStreams(t *testing.T) {
	requireSandbox(t)
	ws := t.TempDir()

	// A pipe: echo data | unified-exec -- cat
	cmd := exec.Command("sh", "-c", `printf 'data\n' | "$0" --workspace "$1" -- cat`, binary, ws)
	out, err := cmd.Output()
	if err != nil || string(out) != "data\n" {
		t.Fatalf("piped stdin: %q %v", out, err)
	}

	// A file: unified-exec -- wc -c < file
	var all bytes.Buffer
	for i := 0; i < 256; i++ {
		all.WriteByte(byte(i))
	}
	all.WriteString("end without newline")
	file := filepath.Join(ws, "bytes.bin")
	if err := os.WriteFile(file, all.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := wrapIO(t, ws, f, "wc", "-c")
	f.Close()
	if code != 0 || strings.TrimSpace(stdout) != "275" {
		t.Fatalf("wc -c < file: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	f, _ = os.Open(file)
	stdout, _, code = wrapIO(t, ws, f, "cat")
	f.Close()
	if code != 0 || stdout != all.String() {
		t.Fatalf("cat < binary file: exit %d, %d bytes back of %d", code, len(stdout), all.Len())
	}

	// stdout and stderr apart.
	stdout, stderr, code = wrapIO(t, ws, nil, "sh", "-c", "echo out; echo err >&2; printf tail >&2; exit 3")
	if code != 3 || stdout != "out\n" || stderr != "err\ntail" {
		t.Fatalf("streams: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	// 2>/dev/null silences the command's stderr, not its stdout.
	cmd = exec.Command("sh", "-c", `"$0" --workspace "$1" -- sh -c 'echo err >&2; echo out' 2>/dev/null`, binary, ws)
	out, err = cmd.Output()
	if err != nil || string(out) != "out\n" {
		t.Fatalf("2>/dev/null: %q %v", out, err)
	}

	// A closed stdin: the command reads nothing and does not hang.
	cmd = exec.Command("sh", "-c", `"$0" --workspace "$1" -- sh -c 'cat; echo "read: $?"' <&-`, binary, ws)
	out, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "read: ") {
		t.Fatalf("closed stdin: %q %v", out, err)
	}
}
