package sandbox

import (
	"regexp"
	"strings"
	"syscall"
)

// DetectDenial tells whether a failed command was likely stopped by the
// sandbox, and quotes the line that says so.
//
// The rule:
//   - Only a sandboxed command that exited non-zero can be denied.
//   - Death by SIGSYS (exit 128+31) is a denial: seccomp killed it.
//   - Otherwise the output must contain an error message of the kind the
//     kernel's refusals produce — "Operation not permitted" (EPERM: seccomp,
//     Landlock on some operations), "Permission denied" (EACCES: Landlock),
//     "Read-only file system" (EROFS: protected paths), "Bad system call" —
//     in the position of a message: at the start of a line, or after ": ",
//     "] " (Python's [Errno 13]) or "(" (Java, ls), and ending there: at
//     the end of the line, or before ":", ",", ".", ")", a quote, or a
//     "(os error N)" / "(core dumped)" suffix. Our own helper's
//     "unified-exec: sandbox:" failures count too.
//
// What does not count, and why: a word inside a path ("sandbox",
// "landlock" or "seccomp" as directory names — Codex issue #18711 matched
// the bare word "sandbox" and retried compile errors); a message quoted in
// a sentence (`expected "permission denied", got nil`); a message that runs
// on into prose ("permission denied is returned when…"); a remote
// refusal that names its own cause ("Permission denied (publickey)").
// Only the last 256 KiB of output are read: errors sit at the end.
func DetectDenial(sandboxed bool, exitCode int, output string) (denied bool, why string) {
	if !sandboxed || exitCode == 0 {
		return false, ""
	}
	if exitCode == 128+int(syscall.SIGSYS) {
		return true, "killed by SIGSYS (a blocked system call)"
	}
	const window = 256 << 10
	if len(output) > window {
		output = output[len(output)-window:]
	}
	for _, line := range strings.Split(output, "\n") {
		line = strings.TrimRight(line, "\r ")
		if strings.Contains(line, "unified-exec: sandbox:") {
			return true, line
		}
		if len(line) < 10 {
			continue
		}
		if denialRe.MatchString(line) {
			return true, line
		}
	}
	return false, ""
}

var denialRe = regexp.MustCompile(`(?i)(?:^|: |\] |\()(?:operation not permitted|permission denied|read-only file system|bad system call)(?:$|[:,.)'"’]| \(os error \d+\)| \(core dumped\))`)
