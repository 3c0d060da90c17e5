package ptyrun

import (
	"encoding/json"
	"io"
	"os"
)

// Helper makes [Start] launch the command through a re-executed copy of the
// current binary (the "helper"). Inside the helper, [MaybeRunHelper] calls
// the apply function with Payload (the sandbox plan, opaque to ptyrun)
// before the command is executed, so restrictions apply to the command and
// everything it starts, never to the calling process.
type Helper struct {
	// Exe is the binary to re-execute; empty means /proc/self/exe.
	Exe string
	// Payload is handed to the apply function inside the helper. It travels
	// on an inherited pipe, never in argv or the environment.
	Payload []byte
	// Thread, when set and Isolate is not, replaces the re-executed
	// helper: it is called with Payload and the session's terminal ("" for
	// pipes) on the OS thread that then forks the command, which inherits
	// what it applied (a thread sandbox). That thread is never reused.
	Thread func(payload []byte, tty string) error
	// Enter, when set, is called first on the OS thread that forks the
	// helper or the command, which inherits what it changed (the egress
	// network namespace); that thread is never reused.
	Enter func() error
	// Files are given to the re-executed helper only, as descriptors
	// HelperFileFD(0), HelperFileFD(1), …, for what applies Payload
	// there; the command never inherits them. Unused by Thread.
	Files []*os.File
	// Isolate runs the helper as PID 1 of a new PID and mount namespace with
	// its own /proc: the command cannot see or signal processes outside its
	// session, and killing the helper kills every descendant.
	Isolate bool
}

// HelperFileFD is the descriptor of Helper.Files[i] in the helper (after
// its header and status pipes, 3 and 4).
func HelperFileFD(i int) int { return 5 + i }

// helperArg0 is argv[0] of a re-executed helper; [MaybeRunHelper] looks
// for it. The payload itself never travels in argv or the environment.
const helperArg0 = "unified-exec-helper"

// helperInstalled is set by MaybeRunHelper: only then is re-executing the
// binary known to reach the helper and not the program's main.
var helperInstalled bool

// helperHeader is what the helper reads on fd 3.
type helperHeader struct {
	Argv    []string `json:"argv"`
	Isolate bool     `json:"isolate"`
	TTY     bool     `json:"tty"`
	Payload []byte   `json:"payload,omitempty"`
	// TerminalFD, when not 0, is a socket on which the helper sends the
	// master of the terminal it opens for the command in a terminal
	// instance of its own (sized Rows×Cols), and the terminal's name.
	TerminalFD int    `json:"terminal_fd,omitempty"`
	Rows       uint16 `json:"rows,omitempty"`
	Cols       uint16 `json:"cols,omitempty"`
}

func writeHeader(w io.Writer, h helperHeader) error {
	return json.NewEncoder(w).Encode(h)
}

// Apply is called inside the helper with Helper.Payload, before the
// command runs; an error aborts the command (exit 126, message on its
// output).
type Apply func(payload []byte) error

// MaybeRunHelper must be called at the very start of main (and of
// TestMain in tests that start helpers). In a helper process it applies
// the payload with apply, runs the command and exits; elsewhere it only
// records that the helper is installed and returns.
//
// In both, it first marks every inherited descriptor above 2
// close-on-exec: nothing the caller of the program left open reaches a
// command (a TCP connection would be the network, a file opened for
// writing a write outside the sandbox), on either spawn path.
func MaybeRunHelper(apply Apply) {
	closeInheritedOnExec()
	helperInstalled = true
	if len(os.Args) == 0 || os.Args[0] != helperArg0 {
		return
	}
	os.Exit(runHelper(apply))
}
