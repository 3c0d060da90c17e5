// Package tracepoint prints timings when UNIFIED_EXEC_TRACE is set — of
// the start-up, and of each call's steps (planning the sandbox, the
// thread sandbox's layers, the command's run): each Mark is one line on
// stderr with the wall clock in microseconds, the pid and a name, so
// lines of the processes of one run can be merged and compared.
package tracepoint

import (
	"fmt"
	"os"
	"time"
)

var on = os.Getenv("UNIFIED_EXEC_TRACE") != ""

// Mark prints one timing line when tracing is on.
func Mark(name string) {
	if on {
		fmt.Fprintf(os.Stderr, "trace %d %d %s\n", time.Now().UnixMicro(), os.Getpid(), name)
	}
}
