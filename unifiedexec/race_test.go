//go:build linux

package unifiedexec

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestExecDuringClose: an Exec that overlaps Close fails with ErrClosed
// or has its command killed by Close; nothing it starts outlives Close.
// Close lands at varying points of the Execs (checking closed, starting
// the process, registering the session, watching its exit).
func TestExecDuringClose(t *testing.T) {
	tag := fmt.Sprintf("7%d.%d", rand.IntN(1000), rand.IntN(1000))
	t.Cleanup(func() {
		for _, p := range procsWith(tag) {
			pid, _ := strconv.Atoi(p[:strings.IndexByte(p, ':')])
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	for round := range 12 {
		m := New(Config{
			Workspace:        t.TempDir(),
			KillGrace:        100 * time.Millisecond,
			OnBackgroundExit: func(int, int, []string) {},
		})
		var execs sync.WaitGroup
		for range 3 {
			execs.Go(func() {
				_, err := m.Exec(context.Background(), ExecRequest{Cmd: "sleep " + tag, Login: noLogin, Yield: 20 * time.Millisecond})
				if err != nil && !errors.Is(err, ErrClosed) {
					t.Error(err)
				}
			})
		}
		time.Sleep(time.Duration(round) * time.Millisecond) // where Close lands, not an assertion
		m.Close()
		execs.Wait()
		if _, err := m.Exec(context.Background(), ExecRequest{Cmd: "true", Login: noLogin}); !errors.Is(err, ErrClosed) {
			t.Fatalf("Exec after Close: %v", err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for len(procsWith(tag)) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: commands outlived Close: %v", round, procsWith(tag))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
