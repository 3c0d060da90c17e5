package approval

import (
	"path/filepath"
	"slices"
)

// ShellScript reports whether argv is a shell given a script ([bash, -lc,
// SCRIPT], [sh, -c, SCRIPT], ...) that [Parse] takes apart and judges
// command by command, and returns the script. A program [Parse] does not
// read as a shell (tmux, python) gives false: its arguments are judged as
// one command, and what it runs only as far as [Parse] knows the program.
func ShellScript(argv []string) (string, bool) { return shellScript(argv) }

// ParsesShell reports whether [Parse] reads the scripts of the shell at
// path (judged by its base name, as [Parse] does) as that shell runs
// them: bash, sh, dash, zsh, ksh, mksh, yash, posh; not rbash (which
// restricts what a script may do), fish or csh, whose language is not
// sh's.
func ParsesShell(path string) bool {
	_, ok := shellScript([]string{path, "-c", "true"})
	return ok && slices.Contains(lineShells, filepath.Base(path))
}

// lineShells are the shells a command line may be given to.
var lineShells = []string{"bash", "sh", "dash", "zsh", "ksh", "mksh", "yash", "posh"}
