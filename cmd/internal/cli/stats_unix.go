//go:build unix

package cli

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"
)

// serveStats frees unused memory and writes "goroutines N" to file on
// each SIGUSR1, for soak and
// leak checks from outside the process. Off unless UNIFIED_EXEC_STATS is set.
func serveStats(file string) (stop func()) {
	if file == "" {
		return func() {}
	}
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGUSR1)
	done := make(chan struct{})
	go func() {
		// Owner: cmdServe; it ends when stop is called.
		for {
			select {
			case <-c:
				// Return freed memory first, so RSS readings show leaks,
				// not a lazy collector.
				debug.FreeOSMemory()
				if err := os.WriteFile(file, []byte(fmt.Sprintf("goroutines %d\n", runtime.NumGoroutine())), 0o600); err != nil {
					errorf("stats: %v", err)
				}
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(c); close(done) }
}
