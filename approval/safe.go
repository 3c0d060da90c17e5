package approval

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// plainSafe are read-only commands safe with any arguments.
var plainSafe = []string{
	"ls", "cat", "grep", "egrep", "fgrep", "head", "tail", "wc", "pwd", "echo", "true", "false",
	"nl", "cut", "tr", "uniq", "rev", "tac", "seq", "paste", "which", "whoami", "id", "uname",
	"stat", "basename", "dirname", "realpath", "readlink", "file", "printf", "date", "cd",
	"column", "expr", "numfmt", "test", "[", "diff", "cmp", "du", "df", "tree", "type",
}

// unsafeFlags are the options that make a plainSafe command write files,
// run programs or change state.
var unsafeFlags = map[string][]string{
	"tree":   {"-o", "--fromfile"},
	"file":   {"-C", "--compile"},
	"date":   {"-s", "--set"},
	"printf": {"-v"}, // assigns a shell variable (PATH, ...)
}

// shortCluster reports whether a is a cluster of short options (-abc)
// that contains the option letter c.
func shortCluster(a string, c byte) bool {
	return len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.IndexByte(a[1:], c) >= 0
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
		bad := unsafeFlags[name]
		return !anyArg(args, func(a string) bool {
			for _, f := range bad {
				if a == f || strings.HasPrefix(a, f+"=") || (len(f) == 2 && f[0] == '-' && shortCluster(a, f[1])) {
					return true
				}
			}
			return false
		})
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
		// Only `sed -n Np [FILE...]`: with another option after the
		// script (-e, -f, -i), "Np" would become a file name and the
		// real script could execute or write (e, w commands).
		return len(args) >= 2 && args[0] == "-n" && sedPrint().MatchString(args[1]) &&
			!anyArg(args[2:], func(a string) bool { return strings.HasPrefix(a, "-") })
	case name == "sort":
		return !anyArg(args, func(a string) bool {
			return strings.HasPrefix(a, "--output") || strings.HasPrefix(a, "--compress-program") || shortCluster(a, 'o')
		})
	}
	return false
}

var sedPrint = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\d+(,\d+)?p$`) })

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
