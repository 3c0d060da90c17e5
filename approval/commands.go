package approval

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Parsed is a command line taken apart for judging.
type Parsed struct {
	// Commands are the simple commands found, each as its literal argv
	// (a non-literal word is kept as written, e.g. "$f"), with the
	// commands run by wrappers (env, xargs, timeout, nested shells) added.
	Commands [][]string
	// Opaque says why the line cannot be judged statically, or "".
	Opaque string
	// Unparsed: a script did not parse, so its commands are unknown and
	// no rule could be checked against them.
	Unparsed bool
}

var shells = []string{"bash", "sh", "zsh", "dash", "ksh"}

// interpreters run a script fed on stdin.
var interpreters = []string{"bash", "sh", "zsh", "dash", "ksh", "python", "python3", "perl", "ruby", "node", "php", "lua", "tclsh", "osascript"}

// Parse takes argv apart: [bash|sh|zsh, -c|-lc|-l -c, SCRIPT] is parsed
// with mvdan.cc/sh into its commands; anything else is one command.
func Parse(argv []string) Parsed {
	var p Parsed
	p.add(argv, 0)
	return p
}

func (p *Parsed) opaque(format string, a ...any) {
	if p.Opaque == "" {
		p.Opaque = fmt.Sprintf(format, a...)
	}
}

const maxDepth = 8

// add records argv and what it runs.
func (p *Parsed) add(argv []string, depth int) {
	if len(argv) == 0 {
		return
	}
	if depth > maxDepth {
		p.opaque("commands nested too deeply")
		return
	}
	if script, ok := shellScript(argv); ok {
		p.Commands = append(p.Commands, argv)
		p.script(script, depth+1)
		return
	}
	p.Commands = append(p.Commands, argv)
	name := filepath.Base(argv[0])
	if slices.Contains(shells, name) {
		p.opaque("%s runs a script from a file or its input, which cannot be read in advance", name)
		return
	}
	switch name {
	case "eval", "source", ".":
		p.opaque("%s runs code that cannot be read in advance", name)
	case "watch", "su", "runuser":
		// These run their command through a shell: judge it as a script.
		if script, ok := wrappedScript(name, argv[1:]); ok {
			p.script(script, depth+1)
		} else if name == "watch" {
			if inner := wrapped(name, argv[1:]); len(inner) > 0 {
				p.add(inner, depth+1)
			}
		}
	case "flock":
		if script, ok := wrappedScript(name, argv[1:]); ok {
			p.script(script, depth+1)
		} else if inner := wrapped(name, argv[1:]); len(inner) > 0 {
			p.add(inner, depth+1)
		}
	case "find":
		for i, a := range argv {
			if a == "-exec" || a == "-execdir" || a == "-ok" || a == "-okdir" {
				inner := argv[i+1:]
				for j, b := range inner {
					if b == ";" || b == "+" {
						inner = inner[:j]
						break
					}
				}
				p.add(inner, depth+1)
			}
		}
	case "exec", "command", "builtin", "nohup", "time", "nice", "ionice", "stdbuf", "setsid", "chroot", "timeout", "env", "xargs", "sudo", "doas", "parallel", "unshare", "nsenter", "strace", "ltrace", "taskset", "chrt", "caffeinate":
		if inner := wrapped(name, argv[1:]); len(inner) > 0 {
			p.add(inner, depth+1)
		}
	}
}

// valueOpts are, per wrapper, the short options that take a value as the
// next word (long options are taken as --name=value or as flags).
var valueOpts = map[string]string{
	"env":     "uCS",
	"timeout": "sk",
	"nice":    "n",
	"ionice":  "cnp",
	"stdbuf":  "ioe",
	"xargs":   "adEILnPs",
	"sudo":    "ugChpPrtUTDR",
	"doas":    "uC",
	"time":    "fo",
	"exec":    "a",
	"watch":   "nd",
	"flock":   "wEc",
	"su":      "csgG",
	"runuser": "csgGu",
	"unshare": "S",
	"nsenter": "tSGwr",
	"strace":  "eoOpPsuabEIS",
	"ltrace":  "eoplnsuaAD",
	"taskset": "",
	"chrt":    "",
}

// skipOpts returns the index of the first word after a wrapper's options.
func skipOpts(name string, args []string) int {
	vals := valueOpts[name]
	i := 0
	for i < len(args) {
		a := args[i]
		if a == "--" {
			return i + 1
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			return i
		}
		i++
		if strings.HasPrefix(a, "--") {
			continue
		}
		// A cluster such as -in1: the first option letter that takes a
		// value ends the cluster; its value is the rest or the next word.
		for j := 1; j < len(a); j++ {
			if strings.IndexByte(vals, a[j]) >= 0 {
				if j == len(a)-1 {
					i++ // the value is the next word
				}
				break
			}
		}
	}
	return i
}

// wrapped returns the command a wrapper runs, skipping its own options
// and operands.
func wrapped(name string, args []string) []string {
	i := skipOpts(name, args)
	switch name {
	case "env":
		// env -S "cmd args" splits a string into the command.
		for j := 0; j < i && j < len(args); j++ {
			a := args[j]
			split := ""
			switch {
			case a == "-S" && j+1 < len(args):
				split = args[j+1]
			case strings.HasPrefix(a, "--split-string="):
				split = strings.TrimPrefix(a, "--split-string=")
			case strings.HasPrefix(a, "-S") && len(a) > 2:
				split = a[2:]
			}
			if split != "" {
				return append(strings.Fields(split), args[i:]...)
			}
		}
		for i < len(args) && strings.Contains(args[i], "=") {
			i++ // NAME=value
		}
	case "timeout":
		i++ // the duration
	case "flock":
		i++ // the lock file
	case "chroot":
		i++ // the new root
	case "taskset":
		i++ // the mask
	case "chrt":
		i++ // the priority
	case "ionice":
		if slices.ContainsFunc(args[:i], func(a string) bool { return strings.HasPrefix(a, "-p") }) {
			return nil // ionice -p PID changes a running process
		}
	}
	if i >= len(args) {
		return nil
	}
	return args[i:]
}

// wrappedScript returns the script of a wrapper that runs a shell
// command string: su -c, runuser -c, flock -c, and watch (which joins its
// words into one sh -c string unless given -x).
func wrappedScript(name string, args []string) (string, bool) {
	n := skipOpts(name, args)
	end := n // watch: only its own options
	switch name {
	case "flock":
		end = n + 2 // flock [options] FILE -c COMMAND
	case "su", "runuser":
		end = len(args) // su [options] [-] [USER [ARGS...]]: ARGS go to the shell
	}
	for j := 0; j < end && j < len(args); j++ {
		a := args[j]
		switch {
		case (a == "-c" || a == "--command") && j+1 < len(args) && name != "watch":
			return args[j+1], true
		case strings.HasPrefix(a, "--command=") && name != "watch":
			return strings.TrimPrefix(a, "--command="), true
		case name == "watch" && (a == "-x" || a == "--exec"):
			return "", false
		}
	}
	if name == "watch" && n < len(args) {
		return strings.Join(args[n:], " "), true
	}
	return "", false
}

// shellScript recognizes a shell given a script: [shell, OPTIONS..., -c,
// OPTIONS..., SCRIPT, ARGS...] with -c alone or in a cluster (-lc, -ec),
// long options (--login, --norc, --rcfile FILE) and -o/-O OPTION anywhere
// before the script, as bash reads them.
func shellScript(argv []string) (string, bool) {
	if len(argv) < 3 || !slices.Contains(shells, filepath.Base(argv[0])) {
		return "", false
	}
	sawC := false
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--" || a == "-":
			if sawC && i+1 < len(argv) {
				return argv[i+1], true
			}
			return "", false
		case a == "--rcfile" || a == "--init-file":
			i++
		case strings.HasPrefix(a, "--"):
		case len(a) > 1 && (a[0] == '-' || a[0] == '+'):
			if strings.IndexByte(a[1:], 'c') >= 0 && a[0] == '-' {
				sawC = true
			}
			if strings.ContainsAny(a[1:], "oO") {
				i++ // -o pipefail, -O extglob
			}
		default:
			if sawC {
				return a, true
			}
			return "", false
		}
	}
	return "", false
}

// script parses a shell script and adds its commands.
func (p *Parsed) script(src string, depth int) {
	f, err := syntax.NewParser().Parse(strings.NewReader(src), "")
	if err != nil {
		p.opaque("the script does not parse: %v", err)
		p.Unparsed = true
		return
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst:
			p.opaque("command substitution $(...) runs a command whose output cannot be known")
		case *syntax.ProcSubst:
			p.opaque("process substitution <(...) runs commands inside arguments")
		case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause:
			// Arithmetic evaluates array subscripts, which can run
			// commands hidden in variables.
			p.opaque("arithmetic evaluation")
		case *syntax.ParamExp:
			name := ""
			if n.Param != nil {
				name = n.Param.Value
			}
			p.opaque("expands a variable ($%s), whose value is known only when it runs", name)
		case *syntax.DeclClause:
			variant := "declare"
			if n.Variant != nil {
				variant = n.Variant.Value
			}
			p.opaque("%s sets variables, which can change what later commands do", variant)
			p.Commands = append(p.Commands, []string{variant})
		case *syntax.CoprocClause:
			p.opaque("coproc runs a command in the background")
		case *syntax.FuncDecl:
			name := "(unnamed)"
			if n.Name != nil {
				name = n.Name.Value
			}
			p.opaque("defines a function %q", name)
		case *syntax.Stmt:
			p.redirects(n)
		case *syntax.CallExpr:
			if len(n.Assigns) > 0 {
				p.opaque("sets %s=..., which can change what commands run and how (PATH, LD_PRELOAD, GIT_*)", assignName(n.Assigns[0]))
			}
			if len(n.Args) == 0 {
				return true // assignments only
			}
			argv := make([]string, len(n.Args))
			for i, w := range n.Args {
				lit, ok := wordLit(w)
				if !ok {
					switch {
					case hasPart[*syntax.CmdSubst](w):
						p.opaque("command substitution $(...) runs a command whose output cannot be known")
					case hasPart[*syntax.ProcSubst](w):
						p.opaque("process substitution <(...) runs commands inside arguments")
					case i == 0:
						p.opaque("the command name is computed (a variable or expansion in command position)")
					default:
						p.opaque("an argument is computed (%s)", wordText(w))
					}
					lit = wordText(w)
				}
				argv[i] = lit
			}
			if unquotedMeta(n.Args[0]) {
				p.opaque("the command name %s is a pattern (glob or brace expansion)", argv[0])
			}
			p.add(argv, depth)
		}
		return true
	})
}

// redirects flags writes to files and scripts fed to interpreters.
func (p *Parsed) redirects(st *syntax.Stmt) {
	for _, r := range st.Redirs {
		target, lit := "", false
		if r.Word != nil {
			target, lit = wordLit(r.Word)
		}
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrAll, syntax.AppAll, syntax.ClbOut, syntax.RdrInOut:
			if !lit || target != "/dev/null" {
				p.opaque("writes to a file with a redirection (%s %s)", r.Op, wordText(r.Word))
			}
		case syntax.DplOut, syntax.DplIn:
			if !lit || (target != "-" && strings.Trim(target, "0123456789") != "") {
				p.opaque("redirects to %s", wordText(r.Word))
			}
		case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
			if call, ok := st.Cmd.(*syntax.CallExpr); ok && len(call.Args) > 0 {
				argv := make([]string, len(call.Args))
				for i, w := range call.Args {
					argv[i], _ = wordLit(w)
				}
				if name := runs(argv); slices.Contains(interpreters, name) {
					p.opaque("a here-document feeds a script to %s", name)
				}
			}
		}
	}
}

// runs returns the base name of the program argv finally runs, looking
// through wrappers such as env, sudo and timeout.
func runs(argv []string) string {
	for range maxDepth {
		if len(argv) == 0 {
			return ""
		}
		name := filepath.Base(argv[0])
		if _, ok := valueOpts[name]; !ok && name != "chroot" && name != "command" && name != "builtin" && name != "nohup" && name != "setsid" {
			return name
		}
		argv = wrapped(name, argv[1:])
	}
	return ""
}

// unquotedMeta reports whether a word has an unquoted glob or brace
// character, which the shell may expand into another word.
func unquotedMeta(w *syntax.Word) bool {
	for _, part := range w.Parts {
		l, ok := part.(*syntax.Lit)
		if !ok {
			continue
		}
		v := l.Value
		if strings.ContainsAny(v, "*?") {
			return true
		}
		if i := strings.IndexByte(v, '['); i >= 0 && strings.IndexByte(v[i+1:], ']') >= 0 {
			return true
		}
		if i := strings.IndexByte(v, '{'); i >= 0 {
			rest := v[i+1:]
			if j := strings.IndexByte(rest, '}'); j >= 0 && (strings.Contains(rest[:j], ",") || strings.Contains(rest[:j], "..")) {
				return true
			}
		}
	}
	return false
}

// wordLit returns the literal value of a word made of literals and
// quotes only.
func wordLit(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, part := range w.Parts {
		switch x := part.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(x.Value))
		case *syntax.SglQuoted:
			if x.Dollar && strings.Contains(x.Value, `\`) {
				return "", false // $'\x72m': escapes are not decoded
			}
			b.WriteString(x.Value)
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(l.Value)
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// hasPart reports whether a word contains a node of type T.
func hasPart[T syntax.Node](w *syntax.Word) bool {
	found := false
	syntax.Walk(w, func(n syntax.Node) bool {
		if _, ok := n.(T); ok {
			found = true
		}
		return !found
	})
	return found
}

func wordText(w *syntax.Word) string {
	if w == nil {
		return ""
	}
	var b strings.Builder
	syntax.NewPrinter().Print(&b, w)
	return b.String()
}

// Canonical renders argv as one shell-quoted line, stable for caching and
// for showing to people.
func Canonical(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = quote(a)
	}
	return strings.Join(q, " ")
}

func quote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func assignName(a *syntax.Assign) string {
	if a == nil || a.Name == nil {
		return "a variable"
	}
	return a.Name.Value
}
