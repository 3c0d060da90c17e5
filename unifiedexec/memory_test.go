//go:build linux

package unifiedexec

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/ptyrun"
)

// TestPeakMemory100MB runs 100 MB of output through a manager in a child
// test process and checks the child's peak RSS stays under 64 MiB.
func TestPeakMemory100MB(t *testing.T) {
	if os.Getenv("UE_PEAK_CHILD") == "1" {
		m := New(Config{Workspace: t.TempDir()})
		defer m.Close()
		r, err := m.Exec(context.Background(), ExecRequest{Cmd: `head -c 100000000 /dev/zero | tr '\0' 'z' | fold -w 120; echo LAST-LINE`, Login: noLogin, Yield: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(r.Output, "LAST-LINE\n") {
			t.Fatalf("tail lost: %q", r.Output[max(0, len(r.Output)-80):])
		}
		status, _ := os.ReadFile("/proc/self/status")
		for _, l := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(l, "VmHWM:") {
				os.Stdout.WriteString("PEAK " + strings.Fields(l)[1] + "\n")
			}
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPeakMemory100MB$", "-test.count=1")
	cmd.Env = append(os.Environ(), "UE_PEAK_CHILD=1")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := ptyrun.RunOwned(cmd) // TestMain's reaper takes other children's exits
	out := buf.Bytes()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	i := strings.Index(string(out), "PEAK ")
	if i < 0 {
		t.Fatalf("no peak in %s", out)
	}
	kb, _ := strconv.Atoi(strings.Fields(string(out[i+5:]))[0])
	t.Logf("peak RSS with 100 MB of output: %d KiB", kb)
	if kb > 64*1024 {
		t.Fatalf("peak RSS %d KiB > 64 MiB", kb)
	}
}
