// Package unifiedexec is the engine behind the unified-exec tools: it
// starts commands in a terminal or pipes, keeps them as sessions between
// calls, and answers each call under the clamps (a yield window of
// 250 ms–30 s, 10 000 output tokens, a 1 MiB head/tail buffer, a 6-hex
// chunk id). It runs what it is given: the plan a command runs under
// ([Sandbox]) comes from the orchestrator, and how sessions start on this
// host ([Strategy]: forked from a sandboxed thread, through a helper that
// is PID 1 of a namespace of its own, or plain) is decided once in [New].
//
// [Manager.Exec] starts a session and waits for its first window;
// [Manager.Write] sends input (text, named keys, bracketed paste) and
// waits again; [Manager.Kill] ends a session's whole tree;
// [Manager.Stream] runs one command to its end on the caller's own
// streams (the wrapper). Output reaches the model cleaned: escape
// sequences interpreted or dropped, carriage-return redraws folded,
// movement bounded by the terminal's width, so the text is at most a
// constant times what the command wrote.
//
// A login command (login true, the default) does not re-run the user's
// profile each time: the login shell runs once, sandboxed as commands
// are, and its functions, aliases, options and environment are restored
// in a non-login shell (bash through BASH_ENV, zsh through ZDOTDIR, sh by
// sourcing); what the profile printed stays out of commands' output
// ([SnapshotInfo], [Manager.Snapshots]). See snapshot.go.
package unifiedexec
