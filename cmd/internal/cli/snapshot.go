package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/unified-exec/unified-exec/orchestrator"
)

// snapshotLog is, for the server, what logs each login shell's snapshot
// (and what its profile printed, kept out of commands' output) on
// stderr; nil for the wrapper, which runs no login shell.
func snapshotLog(server bool) func(orchestrator.SnapshotInfo) {
	if !server {
		return nil
	}
	return func(s orchestrator.SnapshotInfo) {
		fmt.Fprintf(os.Stderr, "unified-exec: %s\n", s)
	}
}

// snapshotReport takes the default shell's snapshot under the policy's
// sandbox, as the server's first login command would, and says how it
// went, with what the profile printed.
func snapshotReport(o *orchestrator.Orchestrator) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := o.Snapshot(ctx)
	if err != nil && s.Shell == "" {
		return fmt.Sprintf("shell snapshot: none: %v\n", err)
	}
	return s.String() + "\n"
}
