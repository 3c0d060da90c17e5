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
// # The invariant
//
// Nothing runs without the sandbox unless the policy gives every command
// of the line danger-full-access, or a person answered a question that
// said it would run without the sandbox. The pipeline's test runs every
// approval mode × rule outcome × answer × denial or not × sandbox
// available or not against it.
package orchestrator
