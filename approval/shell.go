package approval

// ShellScript reports whether argv is a shell given a script ([bash, -lc,
// SCRIPT], [sh, -c, SCRIPT], ...) that [Parse] takes apart and judges
// command by command, and returns the script. A program [Parse] does not
// read as a shell (rbash, fish, tmux) gives false: its arguments are
// judged as one command, and nothing it runs is seen by the rules.
func ShellScript(argv []string) (string, bool) { return shellScript(argv) }

// ParsesShell reports whether [Parse] reads the scripts of the shell at
// path (judged by its base name, as [Parse] does).
func ParsesShell(path string) bool {
	_, ok := shellScript([]string{path, "-c", "true"})
	return ok
}
