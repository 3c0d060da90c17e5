package approval

import (
	"bufio"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/unified-exec/unified-exec/policy"
)

// TestTTYPrompterIgnoresTypedAhead: keys typed before the question (while
// the command ran) do not answer it: "y" typed ahead, then "n" at the
// prompt, is a no (red team 31: typed-ahead keys could answer "run
// WITHOUT the sandbox?").
func TestTTYPrompterIgnoresTypedAhead(t *testing.T) {
	master, slave, err := pty.Open()
	if err != nil {
		t.Skipf("no PTY here: %v", err)
	}
	if _, err := master.Write([]byte("y\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the line discipline has it
	done := make(chan struct{})
	t.Cleanup(func() { master.Close(); slave.Close(); <-done })
	go func() { // owned by the test: ends when the master is closed
		defer close(done)
		r := bufio.NewReader(master)
		var seen strings.Builder
		for {
			b, err := r.ReadByte()
			if err != nil {
				return
			}
			seen.WriteByte(b)
			if strings.HasSuffix(seen.String(), "[a]bort? ") {
				master.Write([]byte("n\n"))
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	q := Question{Kind: KindRetryUnsandboxed, Request: Request{Argv: []string{"/bin/bash", "-c", "make install"}}, Sandbox: policy.ModeDangerFullAccess}
	if a, err := (&TTYPrompter{Path: slave.Name()}).Ask(ctx, q); err != nil || a != Deny {
		t.Fatalf("answer %v, %v: a key typed before the question answered it", a, err)
	}
}
