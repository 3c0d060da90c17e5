package unifiedexec

import (
	"fmt"
	"strings"
	"time"
)

// Response is the answer to exec_command, write_stdin and kill_session.
type Response struct {
	ChunkID  string
	WallTime time.Duration
	// ExitCode is set when the call observed the process's exit.
	ExitCode *int
	// SessionID is set (≥ 1000) while the process runs.
	SessionID          int
	OriginalTokenCount int
	Output             string
	// Notes are extra lines for the model (warnings, sandbox state),
	// printed after the status lines.
	Notes []string
}

// Text renders the response as unified-exec's text, lines joined by "\n":
//
//	Chunk ID: 3fa2c1
//	Wall time: 0.0123 seconds
//	Process exited with code 0       (or: Process running with session ID 1000)
//	Original token count: 42
//	Output:
//	<output>
func (r *Response) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Chunk ID: %s\n", r.ChunkID)
	fmt.Fprintf(&b, "Wall time: %.4f seconds\n", r.WallTime.Seconds())
	if r.ExitCode != nil {
		fmt.Fprintf(&b, "Process exited with code %d\n", *r.ExitCode)
	} else if r.SessionID != 0 {
		fmt.Fprintf(&b, "Process running with session ID %d\n", r.SessionID)
	}
	for _, n := range r.Notes {
		b.WriteString(n)
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "Original token count: %d\n", r.OriginalTokenCount)
	b.WriteString("Output:\n")
	b.WriteString(r.Output)
	return b.String()
}
