package sandbox

import (
	"regexp"
	"strings"
	"sync"
)

// DetectDenial tells whether a failed command was likely stopped by the
// sandbox, and quotes the line that says so. It is a pure function of
// its arguments.
//
// The rule:
//
//  1. Only a sandboxed command that exited non-zero can be denied.
//  2. Exit 128+SIGSYS (159) is a denial: a blocked system call killed it.
//  3. Otherwise some line of the output (the last 256 KiB; errors come
//     last) must carry a refusal message in the place where libc, shells,
//     coreutils, Python, Go, Node, Rust, Java and git put the message:
//     - the message is one of "Operation not permitted" (EPERM: seccomp,
//     scoping), "Permission denied" (EACCES: Landlock), "Read-only file
//     system" (EROFS: protected paths), "Device or resource busy" (EBUSY:
//     a pinned folder or a protected file, a mount point, which git config
//     meets when it renames its lock over .git/config), "Invalid
//     cross-device link" (EXDEV: Landlock refusing a rename or link), "Bad
//     system call";
//     - it starts the line (after indentation) or follows ": ", "] "
//     (Python's "[Errno 13] "), " - " (bash's kill) or "(" (Java, apt);
//     - it ends the line or is followed by one of : , . ; ) ' " ’ or by
//     " (os error N)" (Rust) or " (core dumped)";
//     - it is not inside a double-quoted string (an odd number of " before
//     it on the line).
//     Python's repr, "(13, 'Permission denied')", counts too.
//  4. So do explicit sandbox messages: "blocked/denied/refused/killed by
//     seccomp/Landlock", "seccomp-bpf failure", and the helper's own
//     "unified-exec: sandbox:" failures.
//
// What does not count, and why: a word inside a path or a name ("sandbox",
// "landlock", "seccomp" as directories: Codex issue #18711 matched the
// bare word "sandbox" and retried compile errors; the bare words are
// never matched here); a message quoted in a sentence (`expected
// "permission denied", got nil`, `+ grep "Permission denied" docs`); a
// message that runs on into prose ("permission denied is returned
// when…", "Got permission denied while trying to connect"); remote
// refusals that name their own cause ("Permission denied (publickey)",
// "Permission denied, please try again."); output of a command that
// exited 0. A network failure that does not print the errno (curl's
// "Couldn't connect to server" alone) is not recognised.
// sigSYS is SIGSYS on Linux, where seccomp kills with it.
const sigSYS = 31

func DetectDenial(sandboxed bool, exitCode int, output string) (denied bool, why string) {
	if !sandboxed || exitCode == 0 {
		return false, ""
	}
	if exitCode == 128+sigSYS {
		return true, "killed by SIGSYS (a blocked system call)"
	}
	const window = 256 << 10
	if len(output) > window {
		output = output[len(output)-window:]
	}
	for _, line := range strings.Split(output, "\n") {
		line = strings.TrimSpace(line)
		if deniedLine(line) {
			if len(line) > 300 {
				line = line[:300] + "…"
			}
			return true, line
		}
	}
	return false, ""
}

var (
	errnoRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)(?:^|: |\] | - |\()(?:operation not permitted|permission denied|read-only file system|device or resource busy|invalid cross-device link|bad system call)(?:$|[:,.;)'"’]| \(os error \d+\)| \(core dumped\))`)
	})
	reprRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\(\d+, '(?:Operation not permitted|Permission denied|Read-only file system)'\)`)
	})
	namedRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(?:blocked|denied|refused|killed|prevented) by (?:the )?(?:seccomp|landlock)\b|\bseccomp-bpf failure\b`)
	})
	// remoteRe are refusals by a remote peer, which name their own cause.
	remoteRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)permission denied(?: \(publickey|, please try again)`)
	})
)

// deniedLine applies rules 3 and 4 to one trimmed line.
func deniedLine(line string) bool {
	if strings.Contains(line, "unified-exec: sandbox:") {
		return true
	}
	if namedRe().MatchString(line) || reprRe().MatchString(line) {
		return true
	}
	if remoteRe().MatchString(line) {
		return false
	}
	for _, loc := range errnoRe().FindAllStringIndex(line, -1) {
		if strings.Count(line[:loc[0]], `"`)%2 == 0 {
			return true
		}
	}
	return false
}
