// Package policy decodes policy.toml, the file that says which commands
// an agent may run, in which sandbox, and with which environment.
//
// # Loading
//
// [Load] reads a file, [Parse] decodes bytes, and [Default] returns the
// policy embedded in the binary (the repository's policy.toml, whose
// comments document every key). Decoding starts from [Defaults], so an
// omitted key keeps its default.
//
// # Strictness
//
// A typo must never fall back silently to a default. An unknown key, a
// value of the wrong type, and a value out of its range are errors that
// name the file, the line and the key:
//
//	policy.toml:3: approval.mood: unknown key (known keys of [approval]: mode, prompt)
//	policy.toml:7: rule[1].decision: "maybe" is not one of allow, prompt, forbid
//
// Each problem is an [*Error]; [Parse] returns them all at once as
// [Errors]. Validation is a list of checks, one per key.
//
// # Tables
//
//   - [Approval] — mode ([ApprovalUntrusted], [ApprovalOnFailure],
//     [ApprovalOnRequest], [ApprovalNever]) and the prompt channel.
//   - [Sandbox] — [ModeReadOnly], [ModeWorkspaceWrite] or
//     [ModeDangerFullAccess], network, writable roots, protected and
//     unreadable paths, and what commands may change in git repositories
//     ([GitCommit] or [GitReadOnly]); see [DefaultSandbox].
//   - [Network] — the network mode ([NetworkOff], [NetworkAllowlist],
//     [NetworkOn]; [Policy.NetworkMode] also reads the old spelling,
//     [Sandbox] network) and the allow and deny host entries
//     ([ParseHostEntry]) of allowlist mode, enforced by the egress package.
//   - [Rule] — an argv prefix ([Alternatives] per word) with a decision
//     ([DecisionAllow], [DecisionPrompt], [DecisionForbid]); the approval
//     package matches them.
//   - [Env] — which variables commands inherit; [Env.Build] computes the
//     environment.
//   - [Limits] and [Audit].
package policy
