// Package orchestrator takes every request of unified-exec through one
// pipeline: decide (approval.Decide against the policy) → ask when a rule
// or the approval mode says so → run under the sandbox the decision names
// → detect a sandbox denial → ask, as a question of its own that says so,
// whether to run it again without the sandbox → run again.
//
// Two front ends share it. [Orchestrator.Exec] is exec_command: the
// command becomes a session of the engine (unifiedexec), which keeps it
// between calls; a question that must go back to the host (MCP
// elicitation) returns *[NeedInput] with the request's [State], and the
// call made again with the answer resumes where it stopped, never running
// anything twice. [Orchestrator.Run] is the wrapper (`unified-exec --
// CMD`): the command runs to its end on the caller's own streams, in a
// terminal of its own when the caller's are terminals.
//
// Sessions that outlive their first call go through the orchestrator too
// ([Orchestrator.Write], [Orchestrator.Kill], [Orchestrator.List],
// [Orchestrator.Log]), so the audit log has an exit line for every
// command. A host uses this package and never the engine itself.
//
// # Git
//
// After each command (and each write_stdin), what in the git
// repositories under the writable roots would make the host's git run a
// program is compared with what was there before (sandbox.GitState): a
// hook, a setting that runs a program, a commondir that appeared is
// reported in the response, on the wrapper's stderr and in the audit log
// (event "git"), so that a person learns of it before running git there.
// The plans of later commands cover the repository it is in.
//
// # The invariant
//
// Nothing runs without the sandbox unless the policy gives every command
// of the line danger-full-access, or a person answered a question that
// said it would run without the sandbox. The pipeline's test runs every
// approval mode × rule outcome × answer × denial or not × sandbox
// available or not against it.
package orchestrator
