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
	switch name {
	case "eval", "source", ".":
		p.opaque("%s runs code that cannot be read in advance", name)
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
	case "exec", "command", "builtin", "nohup", "time", "nice", "ionice", "stdbuf", "setsid", "chroot", "timeout", "env", "xargs", "sudo", "doas", "su", "watch", "parallel", "flock":
		if inner := wrapped(name, argv[1:]); len(inner) > 0 {
			p.add(inner, depth+1)
		}
	}
}

// wrapped returns the command a wrapper runs, skipping its own options.
func wrapped(name string, args []string) []string {
	i := 0
	switch name {
	case "env":
		for i < len(args) && (strings.HasPrefix(args[i], "-") || strings.Contains(args[i], "=")) {
			if args[i] == "-u" || args[i] == "-C" || args[i] == "-S" {
				i++
			}
			i++
		}
	case "timeout":
		for i < len(args) && strings.HasPrefix(args[i], "-") {
			if args[i] == "-s" || args[i] == "-k" {
				i++
			}
			i++
		}
		i++ // the duration
	case "nice", "ionice":
		for i < len(args) && strings.HasPrefix(args[i], "-") {
			if args[i] == "-n" || args[i] == "-c" {
				i++
			}
			i++
		}
	case "xargs", "sudo", "doas", "stdbuf", "watch", "parallel", "flock", "setsid", "nohup", "time", "command", "builtin", "exec":
		for i < len(args) && strings.HasPrefix(args[i], "-") {
			i++
		}
		if name == "flock" {
			i++ // the lock file
		}
	case "su":
		return nil
	case "chroot":
		i = 1
	}
	if i >= len(args) {
		return nil
	}
	return args[i:]
}

// shellScript recognizes [shell, (-l) -c|-lc|-cl, SCRIPT, ...].
func shellScript(argv []string) (string, bool) {
	if len(argv) < 3 || !slices.Contains(shells, filepath.Base(argv[0])) {
		return "", false
	}
	for i := 1; i < len(argv)-1; i++ {
		a := argv[i]
		if !strings.HasPrefix(a, "-") || strings.HasPrefix(a, "--") {
			return "", false
		}
		if strings.Contains(a, "c") {
			return argv[i+1], true
		}
	}
	return "", false
}

// script parses a shell script and adds its commands.
func (p *Parsed) script(src string, depth int) {
	f, err := syntax.NewParser().Parse(strings.NewReader(src), "")
	if err != nil {
		p.opaque("the script does not parse: %v", err)
		return
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst:
			p.opaque("command substitution $(...) runs a command whose output cannot be known")
		case *syntax.ProcSubst:
			p.opaque("process substitution <(...) runs commands inside arguments")
		case *syntax.ArithmExp:
			p.opaque("arithmetic expansion")
		case *syntax.FuncDecl:
			p.opaque("defines a function %q", n.Name.Value)
		case *syntax.Stmt:
			p.redirects(n)
		case *syntax.CallExpr:
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
			if len(n.Assigns) > 0 {
				for _, a := range n.Assigns {
					if a.Value != nil {
						if _, ok := wordLit(a.Value); !ok {
							p.opaque("an environment assignment is computed")
						}
					}
				}
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
				name, _ := wordLit(call.Args[0])
				if slices.Contains(interpreters, filepath.Base(name)) {
					p.opaque("a here-document feeds a script to %s", name)
				}
			}
		}
	}
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
			if x.Dollar {
				return "", false
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
