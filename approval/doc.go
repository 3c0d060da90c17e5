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
// parsed with mvdan.cc/sh into its simple commands ([Parse]), with quotes,
// escapes, ANSI-C strings and brace expansion undone, looking into
// pipelines, lists, subshells, loops, nested scripts of the shells whose
// language is sh's (bash, sh, dash, rbash, ash, zsh, ksh, ...; a script
// for fish, csh or pwsh cannot be read), eval of a literal
// string, trap strings, here-documents fed to a shell, `find -exec` (with
// {} standing for each starting point), and wrappers such as env (-S, -i,
// -u), sudo, xargs, timeout, nice, stdbuf, ionice, setpriv, prlimit,
// script -c, sg, tmux, screen, terminal emulators' -e, entr, bwrap,
// systemd-run, uv run and npx -c, long options and options with values
// included. Each [Command] is judged and the strictest matching
// [policy.Rule] wins (forbid > prompt > allow).
//
// An alias the line defines (alias g=git, BASH_ALIASES[g]=git) is judged
// where its name is used, anywhere in the line, as its value followed by
// the arguments: bash expands aliases only after shopt -s expand_aliases,
// dash always, and either way counts. git is judged with what its
// command line makes it run: aliases and the settings that hold commands
// (pager, editor, ssh, fsmonitor, diff and merge drivers, filters,
// credential helpers, ...) given by -c, --config-env, GIT_CONFIG_PARAMETERS
// or GIT_CONFIG_COUNT/KEY_n/VALUE_n (as a prefix, exported or through env
// anywhere in the line), ext:: URLs, --upload-pack, rebase --exec,
// submodule foreach, bisect run, difftool --extcmd, filter-branch
// filters; git-push and /usr/lib/git-core/git-push are git push. A
// variable that holds a command for programs to run (PAGER, EDITOR,
// GIT_SSH_COMMAND, GIT_EXTERNAL_DIFF, LESSOPEN, PROMPT_COMMAND, ...) is
// judged as a script wherever the line sets it. So is text bash runs as
// code besides eval: a subscript a[$(cmd)] that arithmetic, [[ -eq ]],
// test -v, read, printf -v, declare, unset or ${!x} evaluates, and the
// callbacks of mapfile -C, complete -C and bind -x.
//
// allow rules match a command as written ([Match]): a prefix, word for
// word, the first word by base name. forbid and prompt rules match
// whatever the spelling ([Matcher]): git's global options skipped, options
// anywhere and in any form (-rf, -f -r, --recursive --force, --rec),
// operands in order, paths cleaned and the home directory in any spelling
// ([Request.Home]: `unified-exec -- rm -rf ~` arrives with the path spelled
// out). Widening is safe for rules that stop or ask, never for a rule that
// lets a command through.
//
// What cannot be judged before it runs — a computed command name ($x,
// $(...), ${IFS}, a glob), eval of a computed string, source, a shell
// reading a script file or its input, an argument the line computes, words
// xargs adds, BASH_ENV, ENV for an interactive shell, an alias or a git
// setting with a computed value, a git subcommand that is not one of
// git's (an alias or program from configuration the line does not show),
// configuration files the line points git at (GIT_CONFIG_GLOBAL,
// include.path, core.hooksPath, --template), a value the line computes
// that bash evaluates as arithmetic or as a name ($((n)) after n=$(cat
// f)), ${x@P} and prompt strings with escapes, enable -f, fc, expect's
// Tcl, tmux send-keys, screen -X stuff — needs approval in every mode when a forbid or
// prompt rule [CouldMatch] it, and is refused under never
// ([Decision.Unjudged] says why; so do the question and the refusal). A
// variable the line never sets comes from the environment unified-exec
// gives the command, which the agent does not choose: it is compared as
// written. Anything of that kind, and variables, assignments, arithmetic,
// redirections that write files and parse errors, is never known-safe
// ([Parsed.Opaque] says why).
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
// an escape sequence cannot redraw the question, and neither a long run
// of spaces (shown as ␠×N) nor a character that looks blank (shown as
// \uXXXX) can hide part of a command. A question names the
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
// Rules guard the commands the agent writes, not what programs do once
// they run: interpreters running their own code (python3 -c, node -e, awk's
// system(), make, expect, a script on disk run as ./x.sh, a program named
// by GIT_SSH or core.askPass), settings and hooks in git's configuration
// files (a repository's .git/config runs core.fsmonitor or a diff driver
// on git status or git diff; only an alias needs a subcommand git does not
// have, which is asked about), programs that take commands from a socket
// or a file (a tmux server's configuration), a cd that changes what a
// relative path names, and aliases of the user's own rc files are beyond
// them. The wrapper and shell tables cover the common programs, not every
// one. The sandbox is the boundary.
//
// Known-safe means "does not write or execute by its arguments", not "does
// nothing": git reads the repository's own config, so a hostile
// .git/config (core.fsmonitor, diff drivers) can still run programs on git
// status or git diff. Known-safe commands therefore still run in the
// policy's sandbox. Wrapper options are read from tables of the common
// ones; an unknown long option is read both with and without a value, an
// unknown short one as a flag.
package approval
