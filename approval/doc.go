// Package approval decides whether a command may run: it runs unasked
// ([Skip]), a person must approve it first ([NeedsApproval]), or it never
// runs ([Forbidden]). It also remembers "approve for the session" answers
// and asks people.
//
// # Deciding
//
// [Decide] is a pure function of a [Request] and a [policy.Policy]: no
// I/O, no state, table-tested. It returns a [Decision] saying what, who
// decided (a rule, the known-safe list or the approval mode), why, and the
// sandbox mode the command runs in.
//
// A shell line such as `bash -lc "git status && make test | tee log"` is
// parsed with mvdan.cc/sh into its simple commands ([Parse]), looking into
// pipelines, lists, subshells, loops, nested `bash -c` scripts, `find
// -exec` and wrappers such as env, sudo, xargs, timeout and nice; each
// command is judged and the strictest matching [policy.Rule] wins (forbid >
// prompt > allow). A rule's first word matches by base name, so a rule on
// "rm" also matches /bin/rm ([Match]).
//
// What cannot be judged statically — command or process substitution,
// eval and source, variables (in any position), variable assignments,
// arithmetic, globs or braces in command position, redirections that
// write files, here-documents fed to an interpreter, scripts piped into a
// shell, parse errors — is never known-safe ([Parsed.Opaque] says why).
// Rules still apply to every command that could be extracted.
//
// The known-safe list ([IsKnownSafe]) follows Codex's: read-only tools
// such as ls, cat, grep, head, wc, and git status|log|diff|show, find, rg,
// sed -n Np and sort without their flags that write files or run
// programs.
//
// # Modes
//
// How the verdict follows from the approval mode is documented on
// [Decide]; in short: untrusted asks for all but known-safe and allowed
// commands, on-failure and on-request run everything in the sandbox, an
// escalation request (run without the sandbox) is always asked, and never
// turns every would-be question into a refusal that says so.
//
// # Caching
//
// [Cache] remembers [ApproveForSession] answers by what the question
// showed: the exact [Canonical] command (shell and flags included), the
// cwd, the tty flag, the escalation flag and the sandbox it was to run
// in. Approving a command for the session in the sandbox never approves
// running it without the sandbox; nothing else is cached, and a denial is
// never remembered.
//
// # Showing
//
// [Question.Text] (the terminal prompt and the MCP elicitation message),
// [Display] and [RefusalMessage] pass everything they quote — command,
// shell, justification, the blocked line of output — through [Escape], so
// an escape sequence cannot redraw the question. A question names the
// shell, and says so in its first line when the command would run without
// the sandbox.
//
// # Asking
//
// A [Prompter] asks a [Question] and returns an [Answer]: [TTYPrompter]
// asks on /dev/tty (wrap mode) and fails with [ErrNoTerminal] where there is
// none; [DenyPrompter] refuses everything and [RefusalMessage] tells the
// user which rule asked and how to allow the command in policy.toml;
// [Scripted] answers from a list, for tests and programmatic hosts. The
// MCP server adds a prompter that asks the client by elicitation.
//
// # Limitations
//
// Known-safe means "does not write or execute by its arguments", not "does
// nothing": git reads the repository's own config, so a hostile
// .git/config (core.fsmonitor, diff drivers) can still run programs on git
// status or git diff. Known-safe commands therefore still run in the
// policy's sandbox. Wrapper options are read from tables of the common
// ones; an unknown option that takes a value can hide the wrapped command
// from the rules (never from the untrusted mode, where wrappers are not
// known-safe).
package approval
