package approval

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// plainSafe are read-only commands safe with any arguments.
var plainSafe = []string{
	"ls", "cat", "grep", "egrep", "fgrep", "head", "tail", "wc", "pwd", "echo", "true", "false",
	"nl", "cut", "tr", "uniq", "rev", "tac", "seq", "paste", "which", "whoami", "id", "uname",
	"stat", "basename", "dirname", "realpath", "readlink", "file", "printf", "date", "cd",
	"column", "expr", "numfmt", "test", "[", "diff", "cmp", "du", "df", "tree", "type",
}

// IsKnownSafe reports whether one command only reads: the commands of
// plainSafe, and git, find, rg, sed and sort without their writing or
// executing flags. argv[0] is matched by its base name.
func IsKnownSafe(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	name := filepath.Base(argv[0])
	args := argv[1:]
	switch {
	case slices.Contains(plainSafe, name):
		return true
	case name == "git":
		return safeGit(args)
	case name == "find":
		return !anyArg(args, func(a string) bool {
			return slices.Contains([]string{"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fls", "-fprint", "-fprint0", "-fprintf"}, a)
		})
	case name == "rg":
		return !anyArg(args, func(a string) bool {
			return a == "--pre" || strings.HasPrefix(a, "--pre=") || strings.HasPrefix(a, "--pre-glob") ||
				a == "-z" || a == "--search-zip" || strings.HasPrefix(a, "--hostname-bin") ||
				(strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "z"))
		})
	case name == "sed":
		return len(args) >= 2 && args[0] == "-n" && sedPrint.MatchString(args[1])
	case name == "sort":
		return !anyArg(args, func(a string) bool {
			return a == "-o" || strings.HasPrefix(a, "--output") || strings.HasPrefix(a, "--compress-program") ||
				(strings.HasPrefix(a, "-o") && !strings.HasPrefix(a, "--"))
		})
	}
	return false
}

var sedPrint = regexp.MustCompile(`^\d+(,\d+)?p$`)

func anyArg(args []string, f func(string) bool) bool {
	return slices.ContainsFunc(args, f)
}

// safeGit: status, log, diff, show, and branch listings, with no option
// that runs programs or writes files.
func safeGit(args []string) bool {
	// Global options before the subcommand: only -C DIR and --no-pager.
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		switch args[i] {
		case "-C":
			i += 2
		case "--no-pager":
			i++
		default:
			return false // -c, --exec-path, --git-dir, ...
		}
	}
	if i >= len(args) {
		return false
	}
	sub, rest := args[i], args[i+1:]
	bad := func(a string) bool {
		for _, p := range []string{"--output", "--ext-diff", "--textconv", "--exec", "-c", "--config", "--upload-pack", "--receive-pack"} {
			if a == p || strings.HasPrefix(a, p+"=") {
				return true
			}
		}
		return false
	}
	switch sub {
	case "status", "log", "diff", "show":
		return !anyArg(rest, bad)
	case "branch":
		for _, a := range rest {
			if !slices.Contains([]string{"-a", "-r", "-v", "-vv", "--list", "--all", "--remotes", "--show-current", "--verbose", "--no-color"}, a) {
				return false
			}
		}
		return true
	}
	return false
}
