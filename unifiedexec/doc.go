// Package unifiedexec is the unified-exec engine: it runs commands in
// sessions and returns their output in windows, under the unified-exec
// clamps, with responses byte-compatible with Codex's unified exec.
//
// # Sessions and windows
//
// [Manager.Exec] starts a command (through ptyrun: a terminal with tty, or
// pipes) and waits for its first window of output; [Manager.Write] types
// into a terminal (chars, [EncodeKeys] names, bracketed paste), resizes it
// (rows and cols: the foreground job gets SIGWINCH) and waits for the next
// window; [Manager.Kill] ends a session's whole tree. A window ends at the
// yield deadline (clamped to [MinYield]–[MaxYield]), when the command
// exits (after its output drained), or when a terminal program is back
// waiting for input ([WaitingNote]): its foreground job is blocked reading
// the terminal with no timeout or a long one, nothing typed is pending,
// and everything it printed has been delivered — a program about to act on
// its own (vim on its way out) is not waiting, so what is typed next is
// never swallowed. A call whose context ends during its window returns the
// context's error and consumes nothing: the next call has the output and
// the exit; [ExecRequest.Started] tells the caller the session first.
//
// # Output
//
// Output is cleaned as a reader of the screen would see it (escape
// sequences dropped, redraws collapsed, terminal queries answered, a
// partial line handed out once and continued, never repeated, UTF-8 kept
// whole across reads), kept in a head/tail buffer of [Config.BufferBytes]
// that counts what it drops and every line, and cut to the call's budget
// by [Truncate]: a "Total output lines" header with the exact count, the
// head and the tail cut at line ends within reach, and the
// "…N tokens truncated…" marker on a line of its own. [Manager.Log] reads
// the newest 1 MiB of a session's transcript by lines, also after it
// exited.
//
// # Screens
//
// While a full-screen program holds the screen — the alternate screen, or
// a full clear in application cursor-key mode (top) — a response shows
// the rendered screen after what was printed before: a header naming the
// size and the cursor, then the rows, trailing blanks trimmed. A terminal
// emulator (charmbracelet/x/vt) keeps it only while the program holds the
// screen; back on the main screen, the stream resumes.
//
// # Limits
//
// [Config.MaxOutputTokens] is the default budget and the ceiling (a larger
// ask is lowered, and the response says so; 0 gives the marker alone);
// [Config.MaxSessions] caps the sessions kept, forgetting exited ones
// first, then closing the least recently used running one, never one of
// the most recently used; [Config.SessionTimeout] ends running sessions no
// call used for that long; [ExecRequest.Timeout] ends a command's tree
// once it ran that long; exited sessions stay readable for
// [Config.ExitedTTL]. A response that reports an exit the engine caused
// says why.
//
// # Ownership
//
// Each [ptyrun.Process] owns its pump and reaper. The manager owns one
// janitor goroutine (timeouts, expiry) and the kills it starts; a screen
// owns the goroutine that reads its emulator's answers, ended when the
// session lets go of the screen. [Manager.Close] kills every session and
// waits for all of them. Locks are never held while waiting on I/O.
//
// # What it is given
//
// It runs what it is given: the plan a command runs under ([Sandbox])
// comes from the orchestrator, and how sessions start on this host
// ([Strategy]: forked from a sandboxed thread, through a helper that is
// PID 1 of a namespace of its own, or plain) is decided once in [New].
// [Manager.Stream] runs one command to its end on the caller's own
// streams (the wrapper), in a terminal of its own mirrored to the
// caller's when those are terminals. A login command (login true, the
// default) does not re-run the user's profile each time: the login shell
// runs once, sandboxed as commands are, and its functions, aliases,
// options and environment are restored in a non-login shell; what the
// profile printed stays out of commands' output ([SnapshotInfo]).
package unifiedexec
