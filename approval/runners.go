package approval

import (
	"slices"
	"strings"
)

// The programs here run a command given as their arguments, or as a
// string they hand to a shell, in ways a [wrapper] entry cannot say:
// subcommands (tmux new, uv run, npm exec), options before and after an
// operand (setarch), options with several values (bwrap), code in an
// option (hyperfine --prepare, nix-shell --run). A command they run is
// judged like one written in the line; one they read from somewhere the
// line does not show (expect's Tcl, at reading its input, tmux
// send-keys) is unknown.

// program returns the code that finds what the program name runs, or
// nil.
func program(name string) func(ps *parser, name string, c Command, depth int) {
	switch name {
	case "tmux":
		return (*parser).tmux
	case "screen":
		return (*parser).screen
	case "entr":
		return (*parser).entr
	case "bwrap":
		return (*parser).bwrap
	case "capsh":
		return (*parser).capsh
	case "setarch", "linux32", "linux64":
		return (*parser).setarch
	case "hyperfine":
		return (*parser).hyperfine
	case "nix-shell":
		return (*parser).nixShell
	case "nix":
		return (*parser).nix
	case "gdb":
		return (*parser).gdb
	case "start-stop-daemon":
		return (*parser).startStopDaemon
	case "pwsh", "powershell", "pwsh-preview":
		return (*parser).pwsh
	case "at", "batch":
		return (*parser).at
	case "expect":
		return func(ps *parser, name string, c Command, depth int) {
			ps.unknown(c, "expect runs a Tcl script, which the rules cannot read")
		}
	}
	if slices.Contains(terminals, name) {
		return (*parser).terminal
	}
	return nil
}

// terminals are terminal emulators: -e PROGRAM ARGS..., and -- ARGS...
// or -x for those of GNOME's kind, whose -e takes a string.
var terminals = []string{"xterm", "uxterm", "urxvt", "rxvt", "rxvt-unicode", "st", "alacritty", "konsole",
	"x-terminal-emulator", "lxterminal", "qterminal", "terminology", "sakura", "mlterm", "gnome-terminal",
	"mate-terminal", "xfce4-terminal", "terminator", "tilix", "kgx", "ptyxis", "wezterm"}

// runner is a program whose subcommand runs a command: uv run CMD.
type runner struct {
	subs []string
	opts optSpec
	// operands are the words between the options and the command
	// (direnv exec DIR CMD).
	operands int
	// code is a short option whose value is a script for sh -c (npx -c).
	code byte
	// join: the command's words are joined into a script for sh -c
	// (pueue add).
	join bool
	// pid are short options that make it act on a running process.
	pid string
}

// runners are the programs that run a command after a subcommand, or
// (no subs) after their options.
var runners = map[string]runner{
	"poetry": {subs: []string{"run"}}, "pipenv": {subs: []string{"run"}}, "pdm": {subs: []string{"run"}},
	"rye": {subs: []string{"run"}}, "hatch": {subs: []string{"run"}}, "pixi": {subs: []string{"run", "exec"},
		opts: optSpec{short: "e", long: []string{"manifest-path", "environment"}}},
	"uv": {subs: []string{"run"}, opts: optSpec{short: "p", long: []string{"with", "with-editable", "with-requirements",
		"python", "package", "env-file", "extra", "group", "only-group", "no-group", "index", "default-index", "index-url",
		"extra-index-url", "find-links", "directory", "project", "config-file", "cache-dir", "python-platform",
		"prerelease", "resolution", "index-strategy", "exclude-newer", "link-mode", "color", "config-setting"}}},
	"conda":      {subs: []string{"run"}, opts: optSpec{short: "np", long: []string{"name", "prefix", "cwd"}}},
	"mamba":      {subs: []string{"run"}, opts: optSpec{short: "np", long: []string{"name", "prefix", "cwd"}}},
	"micromamba": {subs: []string{"run"}, opts: optSpec{short: "np", long: []string{"name", "prefix", "cwd"}}},
	"bundle":     {subs: []string{"exec"}, opts: optSpec{long: []string{"gemfile"}}},
	"direnv":     {subs: []string{"exec"}, operands: 1},
	"mise":       {subs: []string{"exec", "x"}, opts: optSpec{short: "Cjc", long: []string{"cd", "jobs", "command"}}, code: 'c'},
	"asdf":       {subs: []string{"exec"}}, "rbenv": {subs: []string{"exec"}}, "pyenv": {subs: []string{"exec"}},
	"nodenv": {subs: []string{"exec"}}, "goenv": {subs: []string{"exec"}}, "jenv": {subs: []string{"exec"}},
	"opam": {subs: []string{"exec"}, opts: optSpec{long: []string{"switch", "root", "set-switch"}}},
	"npm":  {subs: []string{"exec", "x"}, opts: optSpec{short: "pcw", long: []string{"package", "call", "workspace"}}, code: 'c'},
	"npx":  {opts: optSpec{short: "pcw", long: []string{"package", "call", "workspace"}}, code: 'c'},
	"pnpm": {subs: []string{"exec", "dlx"}, opts: optSpec{short: "Cc", long: []string{"dir", "filter", "package"}}, code: 'c'},
	"pnpx": {opts: optSpec{long: []string{"package"}}}, "bunx": {opts: optSpec{long: []string{"package"}}},
	"yarn": {subs: []string{"exec", "dlx"}, opts: optSpec{short: "p", long: []string{"package"}}},
	"pueue": {subs: []string{"add"}, opts: optSpec{short: "wdgalo", long: []string{"working-directory", "delay", "group",
		"after", "label", "priority"}}, join: true},
	"perf": {subs: []string{"stat", "record", "trace", "top", "sched", "lock", "kvm"},
		opts: optSpec{short: "eoptCrIGxFcmsuLjDgM", long: []string{"event", "output", "pid", "tid", "cpu", "repeat",
			"interval-print", "cgroup", "field-separator", "freq", "count", "mmap-pages", "uid", "call-graph", "delay"}},
		pid: "pt"},
	"ts": {opts: optSpec{short: "LDNEW"}}, "tsp": {opts: optSpec{short: "LDNEW"}}, "nq": {opts: optSpec{short: "c"}},
}

// runCommand judges the command of a runner.
func (ps *parser) runCommand(name string, r runner, c Command, depth int) {
	i := 1
	if len(r.subs) > 0 {
		i = r.opts.scan(c, 1)[0]
		if i >= len(c.Argv) || !slices.Contains(r.subs, c.Argv[i]) {
			return
		}
		i++
	}
	if r.code != 0 {
		if v, vi, ok := r.opts.value(c, i, len(c.Argv), r.code); ok {
			if c.kind(vi) > wordEnv {
				ps.unknown(c, "%s -%c runs a computed script (%s)", name, r.code, v)
			} else {
				ps.code(v, name, depth)
			}
			return
		}
	}
	for _, s := range r.opts.scan(c, i) {
		if r.pid != "" && slices.ContainsFunc(c.Argv[i:s], func(a string) bool {
			return len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsAny(a[1:], r.pid)
		}) {
			continue
		}
		s += r.operands
		if s >= len(c.Argv) {
			continue
		}
		rest := c.from(s)
		if r.join {
			ps.joined(name, rest, depth)
			continue
		}
		ps.add(rest, depth+1)
	}
}

// joined judges words a program joins with blanks into a script for sh
// -c (watch, pueue add, tmux new).
func (ps *parser) joined(name string, rest Command, depth int) {
	if len(rest.Argv) == 0 {
		return
	}
	if rest.Unknown() != "" {
		ps.unknown(rest, "%s runs a computed script (%s)", name, strings.Join(rest.Argv, " "))
		return
	}
	ps.code(strings.Join(rest.Argv, " "), name, depth)
}

// argvOrScript judges the words a program runs: one word with blanks or
// the shell's metacharacters is a script for sh -c, several a command.
func (ps *parser) argvOrScript(name string, rest Command, depth int) {
	switch {
	case len(rest.Argv) == 0:
	case len(rest.Argv) == 1 && rest.kind(0) > wordEnv:
		ps.unknown(rest, "%s runs a computed command (%s)", name, rest.Argv[0])
	case len(rest.Argv) == 1 && strings.ContainsAny(rest.Argv[0], " \t\n|&;<>()$`\\\"'*?[#~=%"):
		ps.code(rest.Argv[0], name, depth)
	default:
		ps.add(rest, depth+1)
	}
}

// scriptAt judges word i of c, a script for sh -c.
func (ps *parser) scriptAt(what string, c Command, i, depth int) {
	switch {
	case i >= len(c.Argv):
	case c.kind(i) > wordEnv:
		ps.unknown(c, "%s runs a computed script (%s)", what, c.Argv[i])
	default:
		ps.code(c.Argv[i], what, depth)
	}
}

// pwsh: -Command (any abbreviation, or -c) runs the rest of its words as
// a PowerShell script, -EncodedCommand an encoded one, -File or an operand
// a file, and without any its input: none of which the rules read, but
// -Version, -Help and the like, which run nothing.
func (ps *parser) pwsh(name string, c Command, depth int) {
	valued := []string{"-executionpolicy", "-ex", "-ep", "-inputformat", "-inp", "-if", "-outputformat", "-o", "-of",
		"-configurationname", "-config", "-workingdirectory", "-wd", "-wo", "-settingsfile", "-settings", "-windowstyle", "-w",
		"-custompipename"}
	for _, a := range c.Argv[1:] {
		switch strings.ToLower(a) {
		case "-version", "-v", "-help", "-h", "-?", "/?":
			return
		}
	}
	for i := 1; i < len(c.Argv); i++ {
		a := strings.ToLower(c.Argv[i])
		if strings.HasPrefix(a, "/") {
			a = "-" + a[1:]
		}
		switch {
		case c.kind(i) > wordEnv:
			ps.unknown(c, "%s runs a script named by a computed word (%s)", name, c.Argv[i])
			return
		case slices.Contains(valued, a):
			i++
		case a == "-c" || len(a) >= 3 && strings.HasPrefix("-command", a) || a == "-cwa" || len(a) > 8 && strings.HasPrefix("-commandwithargs", a):
			ps.unknown(c, "%s -Command runs a script in PowerShell's language, which the rules do not read", name)
			return
		case strings.HasPrefix(a, "-e") && strings.HasPrefix("-encodedcommand", a) || a == "-ec":
			ps.unknown(c, "%s -EncodedCommand runs an encoded script, which cannot be read in advance", name)
			return
		case strings.HasPrefix(a, "-"):
		default:
			ps.unknown(c, "%s runs the script file %s, which cannot be read in advance", name, c.Argv[i])
			return
		}
	}
	ps.unknown(c, "%s reads its script from its input, which cannot be read in advance", name)
}

// at runs a script later, read from its input or a file: a literal
// here-document is judged.
func (ps *parser) at(name string, c Command, depth int) {
	for _, a := range c.Argv[1:] {
		if a == "-V" || shortCluster(a, 'l') || shortCluster(a, 'r') || shortCluster(a, 'd') || shortCluster(a, 'c') {
			return // lists, removes or shows jobs
		}
	}
	if c.stdin != nil && !slices.ContainsFunc(c.Argv[1:], func(a string) bool { return shortCluster(a, 'f') }) {
		ps.opaque("a here-document feeds a script to %s", name)
		ps.script(*c.stdin, depth+1)
		return
	}
	ps.unknown(c, "%s runs a script it reads from its input or a file, which cannot be read in advance", name)
}

// tmux: the commands given in its words (split at ";"), and -c.
func (ps *parser) tmux(name string, c Command, depth int) {
	i := 1
	for i < len(c.Argv) && strings.HasPrefix(c.Argv[i], "-") && c.kind(i) <= wordEnv {
		a := c.Argv[i]
		i++
		if a == "--" {
			break
		}
		for j := 1; j < len(a); j++ {
			if strings.IndexByte("cfLST", a[j]) < 0 {
				continue
			}
			v, vi := a[j+1:], i-1
			if v == "" && i < len(c.Argv) {
				v, vi = c.Argv[i], i
				i++
			}
			if a[j] == 'c' {
				ps.argvOrScript("tmux -c", Command{Argv: []string{v}, kinds: []wordKind{c.kind(vi)}}, depth)
			}
			break
		}
	}
	ps.tmuxCommands(c.from(i), depth)
}

// tmuxShell are tmux's commands that run a shell command given as their
// last words, with the short options that take a value.
var tmuxShell = map[string]string{
	"new-session": "cefFnstxy", "new": "cefFnstxy", "new-window": "ceFnt", "neww": "ceFnt",
	"split-window": "celtFp", "splitw": "celtFp", "respawn-pane": "cet", "respawnp": "cet",
	"respawn-window": "cet", "respawnw": "cet", "run-shell": "dt", "run": "dt",
	"display-popup": "bcdehsStTwxy", "popup": "bcdehsStTwxy", "pipe-pane": "t", "pipep": "t",
	"if-shell": "t", "if": "t",
}

// tmuxCommands judges tmux commands separated by ";" words.
func (ps *parser) tmuxCommands(c Command, depth int) {
	start := 0
	for k := 0; k <= len(c.Argv); k++ {
		if k < len(c.Argv) && c.Argv[k] != ";" && !(strings.HasSuffix(c.Argv[k], ";") && !strings.HasSuffix(c.Argv[k], `\;`)) {
			continue
		}
		cmd := c.from(start).upTo(k - start)
		if k < len(c.Argv) && c.Argv[k] != ";" {
			cmd = c.from(start).upTo(k - start + 1)
			cmd.Argv = slices.Clone(cmd.Argv)
			cmd.Argv[len(cmd.Argv)-1] = strings.TrimSuffix(cmd.Argv[len(cmd.Argv)-1], ";")
		}
		ps.tmuxCommand(cmd, depth)
		start = k + 1
	}
}

func (ps *parser) tmuxCommand(c Command, depth int) {
	if len(c.Argv) == 0 {
		return
	}
	if c.kind(0) > wordEnv {
		ps.unknown(c, "tmux runs a computed command (%s)", c.Argv[0])
		return
	}
	for i, a := range c.Argv {
		if strings.Contains(a, "#(") || c.kind(i) > wordEnv && i > 0 && strings.HasPrefix(c.Argv[0], "set") {
			ps.unknown(c, "tmux runs the shell commands of a format (#(...)), or sets an option to a computed value")
			return
		}
	}
	name := c.Argv[0]
	takes, ok := tmuxShell[name]
	switch {
	case ok:
	case slices.Contains([]string{"send-keys", "send", "source-file", "source", "bind-key", "bind", "set-hook",
		"command-prompt", "confirm-before", "display-menu", "menu"}, name):
		ps.unknown(c, "tmux %s types or runs commands that cannot be read in advance", name)
		return
	case strings.HasPrefix(name, "set") && slices.ContainsFunc(c.Argv[1:], func(a string) bool {
		return strings.Contains(a, "command") || strings.Contains(a, "shell")
	}):
		ps.unknown(c, "tmux %s sets a command it runs later", name)
		return
	default:
		return
	}
	i := optSpec{short: takes}.scan(c, 1)[0]
	if (name == "run-shell" || name == "run") && slices.ContainsFunc(c.Argv[1:i], func(a string) bool { return shortCluster(a, 'C') }) {
		ps.unknown(c, "tmux run-shell -C runs a tmux command given as a string")
		return
	}
	rest := c.from(i)
	if name == "if-shell" || name == "if" {
		if len(rest.Argv) == 0 {
			return
		}
		if !slices.ContainsFunc(c.Argv[1:i], func(a string) bool { return shortCluster(a, 'F') }) {
			ps.argvOrScript("tmux if-shell", rest.upTo(1), depth)
		}
		for j := 1; j < len(rest.Argv); j++ {
			words, ok := shellWords(rest.Argv[j])
			if !ok || rest.kind(j) > wordEnv {
				ps.unknown(c, "tmux if-shell runs a tmux command that cannot be read (%s)", rest.Argv[j])
				continue
			}
			ps.tmuxCommands(Command{Argv: words}, depth+1)
		}
		return
	}
	ps.joined("tmux "+name, rest, depth)
}

// screen: the command after its options (-X: a screen command sent to a
// session).
func (ps *parser) screen(name string, c Command, depth int) {
	i := 1
	for i < len(c.Argv) && c.kind(i) <= wordEnv && strings.HasPrefix(c.Argv[i], "-") {
		a := c.Argv[i]
		i++
		switch a {
		case "--":
			ps.add(c.from(i), depth+1)
			return
		case "-ls", "-list", "-wipe", "-r", "-R", "-x", "-RR", "-Dr", "-dr", "-d", "-D", "-Q", "-v", "-version":
			if a != "-d" && a != "-D" {
				return // attaches or lists: no new command
			}
			continue
		case "-Logfile":
			i++
			continue
		}
		for j := 1; j < len(a); j++ {
			switch {
			case a[j] == 'X':
				ps.screenCommand(c.from(i), depth)
				return
			case strings.IndexByte("cehpSsTt", a[j]) >= 0:
				v, vi := a[j+1:], i-1
				if v == "" && i < len(c.Argv) {
					v, vi = c.Argv[i], i
					i++
				}
				if a[j] == 's' {
					ps.add(Command{Argv: []string{v}, kinds: []wordKind{c.kind(vi)}}, depth+1) // the shell of new windows
				}
			default:
				continue
			}
			break
		}
	}
	if i < len(c.Argv) {
		ps.add(c.from(i), depth+1)
	}
}

// screenCommand judges a screen command sent with -X.
func (ps *parser) screenCommand(c Command, depth int) {
	if len(c.Argv) == 0 {
		return
	}
	switch c.Argv[0] {
	case "screen", "exec":
		i := 1
		for i < len(c.Argv) && strings.HasPrefix(c.Argv[i], "-") {
			i++
		}
		ps.add(c.from(i), depth+1)
	case "stuff", "paste", "eval", "source", "register", "readbuf", "bind", "bindkey", "shell", "defshell", "logfile", "at":
		ps.unknown(c, "screen -X %s types or runs commands that cannot be read in advance", c.Argv[0])
	}
}

// entr [-acdnprsz] UTILITY [ARGS]; -s: UTILITY is a script for sh -c.
func (ps *parser) entr(name string, c Command, depth int) {
	i, shell := 1, false
	for i < len(c.Argv) && strings.HasPrefix(c.Argv[i], "-") && c.kind(i) <= wordEnv {
		shell = shell || shortCluster(c.Argv[i], 's')
		i++
		if c.Argv[i-1] == "--" {
			break
		}
	}
	if shell && i < len(c.Argv) {
		ps.scriptAt("entr -s", c, i, depth)
		return
	}
	if i < len(c.Argv) {
		ps.add(c.from(i), depth+1)
	}
}

// bwrap's options, by how many values they take.
var bwrapValues = map[string]int{
	"--bind": 2, "--bind-try": 2, "--dev-bind": 2, "--dev-bind-try": 2, "--ro-bind": 2, "--ro-bind-try": 2,
	"--symlink": 2, "--setenv": 2, "--file": 2, "--bind-data": 2, "--ro-bind-data": 2, "--chmod": 2, "--overlay": 3,
	"--args": 1, "--argv0": 1, "--uid": 1, "--gid": 1, "--hostname": 1, "--chdir": 1, "--unsetenv": 1,
	"--lock-file": 1, "--sync-fd": 1, "--remount-ro": 1, "--exec-label": 1, "--file-label": 1, "--proc": 1,
	"--dev": 1, "--tmpfs": 1, "--mqueue": 1, "--dir": 1, "--seccomp": 1, "--add-seccomp-fd": 1, "--block-fd": 1,
	"--userns-block-fd": 1, "--info-fd": 1, "--json-status-fd": 1, "--cap-add": 1, "--cap-drop": 1, "--userns": 1,
	"--userns2": 1, "--pidns": 1, "--perms": 1, "--size": 1, "--overlay-src": 1, "--tmp-overlay": 1, "--ro-overlay": 1,
}

func (ps *parser) bwrap(name string, c Command, depth int) {
	i := 1
	for i < len(c.Argv) && c.kind(i) <= wordEnv && strings.HasPrefix(c.Argv[i], "--") {
		a := c.Argv[i]
		i += 1 + bwrapValues[a]
		if a == "--" {
			break
		}
	}
	if i < len(c.Argv) {
		ps.add(c.from(i), depth+1)
	}
}

// capsh [OPTIONS] -- ARGS: ARGS are bash's (or --shell's).
func (ps *parser) capsh(name string, c Command, depth int) {
	shell := "/bin/bash"
	for i, a := range c.Argv[1:] {
		if v, ok := strings.CutPrefix(a, "--shell="); ok {
			shell = v
		}
		if a == "--" || a == "==" {
			prog := shell
			if a == "==" {
				prog = c.Argv[0]
			}
			rest := c.from(i + 2)
			rest.Argv = append([]string{prog}, rest.Argv...)
			if rest.kinds != nil {
				rest.kinds = append([]wordKind{wordLiteral}, rest.kinds...)
				rest.tails = append([]string{""}, rest.tails...)
			}
			ps.add(rest, depth+1)
			return
		}
	}
}

// setarch ARCH [OPTIONS] [PROGRAM [ARGS]], linux32 [OPTIONS] PROGRAM.
func (ps *parser) setarch(name string, c Command, depth int) {
	i := 1
	skip := func() {
		for i < len(c.Argv) && strings.HasPrefix(c.Argv[i], "-") && c.kind(i) <= wordEnv {
			i++
			if c.Argv[i-1] == "--" {
				break
			}
		}
	}
	skip()
	if name == "setarch" && i < len(c.Argv) {
		i++ // the architecture
		skip()
	}
	if i < len(c.Argv) {
		ps.add(c.from(i), depth+1)
	} else {
		ps.unknown(c, "%s without a command starts a shell that reads its input, which cannot be read in advance", name)
	}
}

// hyperfine runs each operand, and --setup, --prepare, --conclude and
// --cleanup, with sh -c.
func (ps *parser) hyperfine(name string, c Command, depth int) {
	code := map[string]bool{"-s": true, "--setup": true, "-p": true, "--prepare": true, "-c": true, "--cleanup": true, "-C": true, "--conclude": true}
	values := map[string]int{"-w": 1, "--warmup": 1, "-m": 1, "--min-runs": 1, "-M": 1, "--max-runs": 1, "-r": 1,
		"--runs": 1, "-P": 3, "--parameter-scan": 3, "-D": 1, "--parameter-step-size": 1, "-L": 2, "--parameter-list": 2,
		"-S": 1, "--shell": 1, "--style": 1, "--sort": 1, "-u": 1, "--time-unit": 1, "-n": 1, "--command-name": 1,
		"--export-asciidoc": 1, "--export-csv": 1, "--export-json": 1, "--export-markdown": 1, "--export-orgmode": 1,
		"--output": 1, "--input": 1, "--reference": 1}
	for i := 1; i < len(c.Argv); i++ {
		a, _, eq := strings.Cut(c.Argv[i], "=")
		switch {
		case c.kind(i) > wordEnv:
			ps.unknown(c, "hyperfine runs a computed command (%s)", c.Argv[i])
		case code[a] || a == "--reference":
			if eq {
				_, v, _ := strings.Cut(c.Argv[i], "=")
				ps.code(v, name, depth)
			} else if i+1 < len(c.Argv) {
				i++
				ps.argvOrScript(name, c.from(i).upTo(1), depth)
			}
		case values[a] > 0:
			if !eq {
				i += values[a]
			}
		case strings.HasPrefix(a, "-"):
		default:
			ps.argvOrScript(name, c.from(i).upTo(1), depth)
		}
	}
}

// nix-shell --run/--command CMD.
func (ps *parser) nixShell(name string, c Command, depth int) {
	for i := 1; i+1 < len(c.Argv); i++ {
		if c.Argv[i] == "--run" || c.Argv[i] == "--command" {
			ps.scriptAt(name+" "+c.Argv[i], c, i+1, depth)
		}
	}
}

// nix develop|shell ... --command|-c CMD ARGS.
func (ps *parser) nix(name string, c Command, depth int) {
	for i := 1; i+1 < len(c.Argv); i++ {
		if c.Argv[i] == "--command" || c.Argv[i] == "-c" {
			ps.add(c.from(i+1), depth+1)
			return
		}
	}
}

// gdb --args PROGRAM ARGS, and the shell commands of -ex (shell, !,
// pipe); a command file or Python cannot be read.
func (ps *parser) gdb(name string, c Command, depth int) {
	for i := 1; i < len(c.Argv); i++ {
		a := strings.TrimPrefix(c.Argv[i], "-")
		switch a {
		case "-args", "args":
			ps.add(c.from(i+1), depth+1)
			return
		case "ex", "-ex", "iex", "-iex", "eval-command", "-eval-command", "init-eval-command", "-init-eval-command":
			if i+1 >= len(c.Argv) {
				return
			}
			i++
			v := strings.TrimSpace(c.Argv[i])
			switch {
			case c.kind(i) > wordEnv:
				ps.unknown(c, "gdb runs a computed command (%s)", v)
			case strings.HasPrefix(v, "shell ") || strings.HasPrefix(v, "!"):
				ps.code(strings.TrimPrefix(strings.TrimPrefix(v, "!"), "shell "), name, depth)
			case strings.HasPrefix(v, "pipe ") || strings.HasPrefix(v, "|") || strings.HasPrefix(v, "python") ||
				strings.HasPrefix(v, "source") || strings.HasPrefix(v, "py ") || strings.HasPrefix(v, "guile"):
				ps.unknown(c, "gdb runs code that cannot be read in advance (%s)", v)
			}
		case "x", "-x", "command", "-command", "ix", "-ix", "init-command", "-init-command":
			ps.unknown(c, "gdb runs the commands of a file, which cannot be read in advance")
			return
		}
	}
}

// start-stop-daemon --exec|--startas PROGRAM ... -- ARGS.
func (ps *parser) startStopDaemon(name string, c Command, depth int) {
	prog, at := "", -1
	for i := 1; i < len(c.Argv); i++ {
		a := c.Argv[i]
		if a == "--" {
			at = i
			break
		}
		for _, o := range []string{"--exec", "--startas", "-x", "-a"} {
			if v, ok := strings.CutPrefix(a, o+"="); ok {
				prog = v
			} else if a == o && i+1 < len(c.Argv) {
				prog = c.Argv[i+1]
			}
		}
	}
	if prog == "" {
		return
	}
	argv := []string{prog}
	if at > 0 {
		argv = append(argv, c.Argv[at+1:]...)
	}
	ps.add(Command{Argv: argv}, depth+1)
}

// terminal judges the command a terminal emulator runs: -e PROGRAM
// ARGS (one word with blanks: a script), -x/--execute/-- ARGS, and for
// GNOME's kind -e/--command STRING.
func (ps *parser) terminal(name string, c Command, depth int) {
	stringE := slices.Contains([]string{"gnome-terminal", "mate-terminal", "xfce4-terminal", "terminator", "tilix"}, name)
	for i := 1; i < len(c.Argv); i++ {
		a := c.Argv[i]
		switch {
		case a == "--" || a == "-x" || a == "--execute":
			ps.add(c.from(i+1), depth+1)
			return
		case stringE && (a == "-e" || a == "--command"):
			ps.scriptAt(name+" "+a, c, i+1, depth)
			return
		case stringE && (strings.HasPrefix(a, "--command=") || strings.HasPrefix(a, "-e") && len(a) > 2 && a[2] != '-'):
			v := strings.TrimPrefix(strings.TrimPrefix(a, "--command="), "-e")
			ps.code(v, name, depth)
			return
		case a == "-e" || a == "--command" && name == "alacritty":
			ps.argvOrScript(name+" -e", c.from(i+1), depth)
			return
		}
	}
}
