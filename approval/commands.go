package approval

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Parsed is a command line taken apart for judging.
type Parsed struct {
	// Commands are the simple commands found, with the commands run by
	// wrappers (env, xargs, timeout, sudo), by nested shells (bash -c,
	// su -c, script -c), by eval, trap and aliases, and by git aliases
	// added.
	Commands []Command
	// Opaque says why the line cannot be judged statically, or "".
	Opaque string
	// Unparsed: a script did not parse, so its commands are unknown and
	// no rule could be checked against them.
	Unparsed bool
	// Reads are the files the line's input redirections read (< FILE),
	// relative to its working directory or to a directory a cd of the
	// line leads to; "" for one known only when it runs.
	Reads []string
}

// Command is one simple command of a line.
type Command struct {
	// Argv is the command's words with the shell's quoting, escapes,
	// ANSI-C strings and brace expansion undone; a word known only when
	// the command runs ($x, $(...)) is kept as written. $HOME and
	// ${HOME} are kept as written and count as literal: matching knows
	// them.
	Argv []string

	kinds []wordKind // per word of Argv; nil when every word is literal
	tails []string   // per computed word, its literal end ("/out" of "$dir/out")
	more  string     // who adds words when it runs, and how ("xargs adds arguments read from its input"), or ""
	whole string     // why what runs is unknown altogether, or ""
	stdin *string    // the script a literal here-document feeds it, if any
	// dirs are the directories it may run in, relative to the line's
	// working directory (nil: that one): a cd anywhere in the line may
	// have led there. "" is a directory known only when it runs.
	dirs []string
	// unset: the command as it is when the environment's variables it
	// expands are unset; only forbid and prompt rules judge it.
	unset bool
}

// wordKind is how much is known of a word before the command runs.
type wordKind uint8

const (
	wordLiteral wordKind = iota
	wordEnv              // a variable of the environment: literal, but not as a command or script
	wordOne              // computed, exactly one word ("$x")
	wordMany             // computed, any number of words ($x, $(...))
	wordPattern          // a glob in command position: any number of words
)

func (c Command) kind(i int) wordKind {
	if i >= len(c.kinds) {
		return wordLiteral
	}
	return c.kinds[i]
}

func (c Command) tail(i int) string {
	if i >= len(c.tails) {
		return ""
	}
	return c.tails[i]
}

// from returns the command that starts at word i (what a wrapper runs).
func (c Command) from(i int) Command {
	d := c
	d.Argv = c.Argv[i:]
	d.kinds = c.kinds[min(i, len(c.kinds)):]
	d.tails = c.tails[min(i, len(c.tails)):]
	return d
}

// in returns the command run in directory d (computed: known only when
// it runs), relative to the directories c may run in.
func (c Command) in(d string, computed bool) Command {
	dirs := c.dirs
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	c.dirs = nil
	for _, from := range dirs {
		to := ""
		switch {
		case computed || from == "":
		case strings.HasPrefix(d, "/") || strings.HasPrefix(d, "~"):
			to = d
		default:
			to = path.Join(from, d)
		}
		if !slices.Contains(c.dirs, to) {
			c.dirs = append(c.dirs, to)
		}
	}
	return c
}

// upTo returns the command's first n words.
func (c Command) upTo(n int) Command {
	d := c
	d.Argv = c.Argv[:n]
	d.kinds = c.kinds[:min(n, len(c.kinds))]
	d.tails = c.tails[:min(n, len(c.tails))]
	return d
}

// String shows the command: literal words quoted as the shell needs,
// computed ones as written.
func (c Command) String() string {
	q := make([]string, len(c.Argv))
	for i, a := range c.Argv {
		if c.kind(i) == wordLiteral {
			q[i] = quote(a)
		} else {
			q[i] = a
		}
	}
	return strings.Join(q, " ")
}

// Unknown says why part of the command is known only when it runs, or
// "" when all of it is written out.
func (c Command) Unknown() string {
	if c.whole != "" {
		return c.whole
	}
	if c.more != "" && c.kind(0) == wordLiteral {
		return c.more
	}
	for i, k := range c.kinds {
		switch {
		case k == wordPattern:
			return fmt.Sprintf("the command name %s is a pattern (glob), which names whatever files match when it runs", c.Argv[i])
		case k != wordLiteral && i == 0:
			return fmt.Sprintf("the command name is computed (%s)", c.Argv[i])
		case k > wordEnv:
			return fmt.Sprintf("an argument is computed (%s)", c.Argv[i])
		}
	}
	for _, a := range c.Argv {
		if rest, ok := strings.CutPrefix(a, "~-"); ok && (rest == "" || rest[0] == '/') {
			return a + " names the previous directory ($OLDPWD), known only when it runs"
		}
	}
	if slices.Contains(c.dirs, "") {
		return "it may run in a directory a cd computes, so its relative paths are known only when it runs"
	}
	return ""
}

// shells run a script given with -c, from a file or their input.
var shells = []string{"bash", "sh", "zsh", "dash", "ksh", "mksh", "yash", "posh", "fish", "rbash", "ash", "ksh93",
	"lksh", "oksh", "pdksh", "tcsh", "csh", "nu", "elvish", "xonsh"}

// shShells are the shells whose language is sh's (or bash's), which
// [Parse] reads; a script for another (fish, csh, nu) cannot be read.
var shShells = []string{"bash", "sh", "zsh", "dash", "ksh", "mksh", "yash", "posh", "rbash", "ash", "ksh93", "lksh", "oksh", "pdksh"}

// interpreters run a script fed on stdin.
var interpreters = append(slices.Clone(shells), "pwsh", "powershell", "python", "python3", "perl", "ruby", "node", "php", "lua",
	"tclsh", "wish", "expect", "osascript")

// Parse takes argv apart: [bash|sh|zsh, -c|-lc|-l -c, SCRIPT] is parsed
// with mvdan.cc/sh into its commands; anything else is one command.
func Parse(argv []string) Parsed {
	ps := newParser()
	ps.add(Command{Argv: argv}, 0)
	return *ps.p
}

// parser holds the state of one Parse.
type parser struct {
	p *Parsed
	// stdin holds the literal scripts that here-documents and
	// here-strings feed to a command.
	stdin map[*syntax.CallExpr]*string
	// bound are the variables the scripts of the line set, true for
	// those only ever set to $(mktemp ...) ([parser.bindings]).
	bound map[string]bool
	// dirs are the directories the line's cd commands may lead to.
	dirs []string
	// cdSearch: a cd of a relative directory may go elsewhere (the line
	// sets CDPATH or cdable_vars), so where it leads is unknown.
	cdSearch bool

	// aliases are the shell aliases the line defines ([parser.alias]);
	// expanding those being expanded, which bash does not expand again.
	aliases   map[string][]aliasDef
	expanding map[string]bool
	// vars are the values the line gives variables, by any means
	// ([parser.setVar]), for what reads them later: git's configuration
	// in GIT_CONFIG_*, ENV for an interactive shell.
	vars map[string][]varValue
	// computed are the variables some script of the line sets to a
	// value known only when it runs ([parser.computedVars]); assoc those
	// declared associative arrays, intVars those declared integers.
	computed, assoc, intVars map[string]bool
	// assigned are the words the line assigns to each variable (nil:
	// set by read, a loop, ...), from which computed is worked out.
	assigned map[string][]*syntax.Word
}

func newParser() *parser {
	return &parser{
		p:         &Parsed{},
		stdin:     map[*syntax.CallExpr]*string{},
		bound:     map[string]bool{},
		aliases:   map[string][]aliasDef{},
		expanding: map[string]bool{},
		vars:      map[string][]varValue{},
		computed:  map[string]bool{},
		assoc:     map[string]bool{},
		intVars:   map[string]bool{},
		assigned:  map[string][]*syntax.Word{},
	}
}

// varValue is one value the line gives a variable.
type varValue struct {
	text     string
	computed bool // known only when it runs
}

// setVar records that the line gives name a value.
func (ps *parser) setVar(name, text string, computed bool) {
	v := varValue{text, computed}
	if !slices.Contains(ps.vars[name], v) {
		ps.vars[name] = append(ps.vars[name], v)
	}
}

// maxDirs bounds the directories followed; beyond, one is unknown.
const maxDirs = 16

// chdir records that the line may change to directory t ("" unknown).
func (ps *parser) chdir(t string) {
	add := func(d string) {
		if len(ps.dirs) >= maxDirs {
			d = ""
		}
		if !slices.Contains(ps.dirs, d) {
			ps.dirs = append(ps.dirs, d)
		}
	}
	if len(ps.dirs) == 0 {
		ps.dirs = []string{"."}
	}
	switch {
	case t == "" || strings.HasPrefix(t, "/") || strings.HasPrefix(t, "~"):
		add(t)
	case ps.cdSearch && t != "." && t != ".." && !strings.HasPrefix(t, "./") && !strings.HasPrefix(t, "../"):
		add("") // CDPATH or cdable_vars may lead anywhere
	default:
		for _, d := range slices.Clone(ps.dirs) {
			if d != "" {
				add(path.Join(d, t))
			}
		}
	}
}

// cd records where a cd or pushd may lead.
func (ps *parser) cd(args []*syntax.Word) {
	for _, w := range args {
		v, ok := wordLit(w)
		switch {
		case ok && (v == "-" || strings.HasPrefix(v, "+")):
			return // back to a directory already followed
		case ok && strings.HasPrefix(v, "-") && v != "--":
			continue // -L, -P, -e, -@, -n
		case ok && v == "--":
			continue
		case ok:
			ps.chdir(v)
		default:
			// "$HOME/src" is a literal path under ~; anything else computed.
			if x := ps.evalWord(w, false); x.kind == wordLiteral {
				for _, h := range []string{"$HOME", "${HOME}"} {
					if x.text == h || strings.HasPrefix(x.text, h+"/") {
						x.text = "~" + x.text[len(h):]
					}
				}
				ps.chdir(x.text)
			} else {
				ps.chdir("")
			}
		}
		return
	}
	ps.chdir("~") // cd alone: home
}

func (ps *parser) opaque(format string, a ...any) {
	if ps.p.Opaque == "" {
		ps.p.Opaque = fmt.Sprintf(format, a...)
	}
}

// unknown records that c runs code that cannot be seen before it runs.
func (ps *parser) unknown(c Command, format string, a ...any) {
	why := fmt.Sprintf(format, a...)
	ps.opaque("%s", why)
	ps.p.Commands = append(ps.p.Commands, Command{Argv: c.Argv, kinds: c.kinds, tails: c.tails, whole: why})
}

const (
	maxDepth    = 8
	maxCommands = 1024
)

// add records c and what it runs.
func (ps *parser) add(c Command, depth int) {
	if len(c.Argv) == 0 {
		return
	}
	if len(ps.p.Commands) >= maxCommands {
		if last := ps.p.Commands[len(ps.p.Commands)-1]; last.whole == "" {
			ps.unknown(c, "the line holds too many commands to judge")
		}
		return
	}
	if depth > maxDepth {
		ps.opaque("commands nested too deeply")
		ps.unknown(c, "commands are nested too deeply to be read")
		return
	}
	ps.p.Commands = append(ps.p.Commands, c)
	if c.kind(0) != wordLiteral {
		return // a computed name: whatever it is, matching treats it so
	}
	ps.expandAlias(c, depth)
	name := filepath.Base(c.Argv[0])
	if slices.Contains(shells, name) && len(ps.vars["ENV"]) > 0 && slices.ContainsFunc(c.Argv[1:], func(a string) bool {
		return shortCluster(a, 'i') || a == "--interactive"
	}) {
		ps.unknown(c, "ENV makes an interactive %s run a file first, which cannot be read in advance", name)
	}
	if i, ok := shellScriptAt(c.Argv); ok {
		if !slices.Contains(shShells, name) {
			ps.unknown(c, "%s -c runs a script in %s's language, which the rules do not read", name, name)
			return
		}
		if c.kind(i) != wordLiteral {
			ps.unknown(c, "the script of %s -c is computed (%s)", name, c.Argv[i])
			return
		}
		ps.script(c.Argv[i], depth+1)
		return
	}
	if slices.Contains(shells, name) {
		ps.shell(name, c, depth)
		return
	}
	switch name {
	case "test", "[", "read", "mapfile", "readarray", "printf", "getopts", "wait", "unset", "declare", "typeset",
		"local", "export", "readonly", "let", "complete", "compgen", "bind", "enable", "fc":
		ps.builtinCode(name, c, depth)
	case "eval":
		ps.opaque("eval runs code that cannot be read in advance")
		args := c.from(1)
		if args.Unknown() != "" {
			ps.unknown(c, "eval runs a computed string (%s)", strings.Join(args.Argv, " "))
			return
		}
		ps.script(strings.Join(args.Argv, " "), depth+1)
	case "source", ".":
		file := "a file"
		if len(c.Argv) > 1 {
			file = c.Argv[1]
		}
		ps.unknown(c, "%s runs the commands of %s, which cannot be read in advance", name, file)
	case "trap":
		ps.trap(c, depth)
	case "alias":
		for i, a := range c.Argv[1:] {
			if n, v, ok := strings.Cut(a, "="); ok {
				if c.kind(i+1) != wordLiteral {
					if isIdentish(n) {
						ps.alias(n, a, true)
					} else {
						ps.unknown(c, "alias defines a computed command (%s)", a)
					}
					continue
				}
				ps.alias(n, v, false)
				ps.script(v, depth+1)
			}
		}
	case "hash":
		if slices.Contains(c.Argv[1:], "-p") {
			ps.unknown(c, "hash -p makes a command name run another program")
		}
	case "git":
		ps.git(c, depth)
	case "find":
		ps.find(c, depth)
	default:
		if sub, ok := strings.CutPrefix(name, "git-"); ok && isGitCommand(sub) {
			// git-push, /usr/lib/git-core/git-push: git push.
			d := c.from(1)
			d.Argv = append([]string{"git", sub}, d.Argv...)
			if d.kinds != nil {
				d.kinds = append([]wordKind{wordLiteral, wordLiteral}, d.kinds...)
				d.tails = append([]string{"", ""}, d.tails...)
			}
			ps.add(d, depth+1)
		}
		if w, ok := wrappers[name]; ok {
			ps.unwrap(name, w, c, depth)
		}
		if f := program(name); f != nil {
			f(ps, name, c, depth)
		}
		if r, ok := runners[name]; ok {
			ps.runCommand(name, r, c, depth)
		}
		ps.argCode(name, c, depth)
	}
}

// shell judges a shell that is not given -c: it reads its script from a
// file or from its input, unless a literal here-document feeds it.
func (ps *parser) shell(name string, c Command, depth int) {
	for i := 1; i < len(c.Argv); i++ {
		a := c.Argv[i]
		switch {
		case c.kind(i) != wordLiteral:
			ps.unknown(c, "%s runs a script named by a computed word (%s), which cannot be read in advance", name, a)
			return
		case a == "--":
			if i+1 < len(c.Argv) {
				ps.unknown(c, "%s runs the script file %s, which cannot be read in advance", name, c.Argv[i+1])
				return
			}
		case a == "-o" || a == "-O" || a == "+o" || a == "+O" || a == "--rcfile" || a == "--init-file":
			i++
		case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+"):
		default:
			ps.unknown(c, "%s runs the script file %s, which cannot be read in advance", name, a)
			return
		}
	}
	if c.stdin != nil && slices.Contains(shShells, name) {
		ps.opaque("a here-document feeds a script to %s", name)
		ps.script(*c.stdin, depth+1)
		return
	}
	ps.unknown(c, "%s reads its script from its input, which cannot be read in advance", name)
}

// trap: the action is a script run later.
func (ps *parser) trap(c Command, depth int) {
	for i := 1; i < len(c.Argv); i++ {
		a := c.Argv[i]
		if c.kind(i) != wordLiteral {
			ps.unknown(c, "trap sets a computed action (%s)", a)
			return
		}
		if a == "--" || a == "-p" || a == "-l" || a == "-P" {
			continue
		}
		if a != "-" {
			ps.script(a, depth+1)
		}
		return
	}
}

// gitValueOptions are git's global options that take the next word as
// their value.
var gitValueOptions = []string{"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env", "--attr-source", "--shallow-file", "--list-cmds"}

// find judges the commands of -exec, -execdir, -ok and -okdir, with {}
// standing for each starting point (the first path find passes).
func (ps *parser) find(c Command, depth int) {
	i := 1
	for i < len(c.Argv) {
		a := c.Argv[i]
		if a == "-H" || a == "-L" || a == "-P" || strings.HasPrefix(a, "-O") {
			i++
		} else if a == "-D" {
			i += 2
		} else {
			break
		}
	}
	var starts []int
	for ; i < len(c.Argv); i++ {
		a := c.Argv[i]
		if c.kind(i) == wordLiteral && (strings.HasPrefix(a, "-") || a == "(" || a == "!" || a == ",") {
			break
		}
		starts = append(starts, i)
	}
	for j, a := range c.Argv {
		if a != "-exec" && a != "-execdir" && a != "-ok" && a != "-okdir" {
			continue
		}
		inner := c.from(j + 1)
		for k, b := range inner.Argv {
			if b == ";" || b == "+" {
				inner = inner.upTo(k)
				break
			}
		}
		if !slices.ContainsFunc(inner.Argv, func(w string) bool { return strings.Contains(w, "{}") }) {
			ps.add(inner, depth+1)
			continue
		}
		if len(starts) == 0 {
			ps.add(substitute(inner, ".", wordLiteral), depth+1)
		}
		for _, s := range starts[:min(len(starts), 8)] {
			ps.add(substitute(inner, c.Argv[s], c.kind(s)), depth+1)
		}
	}
}

// substitute replaces {} in c's words with a path of kind k.
func substitute(c Command, path string, k wordKind) Command {
	d := Command{Argv: make([]string, len(c.Argv)), kinds: make([]wordKind, len(c.Argv)), tails: c.tails, more: c.more}
	for i, w := range c.Argv {
		d.Argv[i] = strings.ReplaceAll(w, "{}", path)
		d.kinds[i] = c.kind(i)
		if strings.Contains(w, "{}") {
			d.kinds[i] = max(d.kinds[i], k)
		}
	}
	return d
}

// shellScriptAt recognizes a shell given a script: [shell, OPTIONS..., -c,
// OPTIONS..., SCRIPT, ARGS...] with -c alone or in a cluster (-lc, -ec),
// long options (--login, --norc, --rcfile FILE) and -o/-O OPTION anywhere
// before the script, as bash reads them. It returns the script's index.
func shellScriptAt(argv []string) (int, bool) {
	if len(argv) < 3 || !slices.Contains(shells, filepath.Base(argv[0])) {
		return 0, false
	}
	sawC := false
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--" || a == "-":
			if sawC && i+1 < len(argv) {
				return i + 1, true
			}
			return 0, false
		case a == "--rcfile" || a == "--init-file":
			i++
		case a == "--command" && filepath.Base(argv[0]) == "fish":
			sawC = true
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
				return i, true
			}
			return 0, false
		}
	}
	return 0, false
}

// shellScript returns the script of a shell given one with -c.
func shellScript(argv []string) (string, bool) {
	i, ok := shellScriptAt(argv)
	if !ok {
		return "", false
	}
	return argv[i], true
}

// script parses a shell script and adds its commands.
func (ps *parser) script(src string, depth int) {
	f, err := syntax.NewParser().Parse(strings.NewReader(src), "")
	if err != nil {
		ps.opaque("the script does not parse: %v", err)
		ps.p.Unparsed = true
		return
	}
	ps.bindings(f)
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst:
			ps.opaque("command substitution $(...) runs a command whose output cannot be known")
		case *syntax.ProcSubst:
			ps.opaque("process substitution <(...) runs commands inside arguments")
		case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause, *syntax.CStyleLoop:
			// Arithmetic evaluates array subscripts, which can run
			// commands hidden in variables.
			ps.opaque("arithmetic evaluation")
			ps.arithNode(n, depth)
		case *syntax.BinaryTest, *syntax.UnaryTest, *syntax.Assign:
			ps.evaluated(n, depth)
		case *syntax.ParamExp:
			ps.evaluated(n, depth)
			name := ""
			if n.Param != nil {
				name = n.Param.Value
			}
			ps.opaque("expands a variable ($%s), whose value is known only when it runs", name)
		case *syntax.DeclClause:
			variant := "declare"
			if n.Variant != nil {
				variant = n.Variant.Value
			}
			ps.opaque("%s sets variables, which can change what later commands do", variant)
			ps.p.Commands = append(ps.p.Commands, Command{Argv: []string{variant}})
			for _, a := range n.Args {
				ps.assign(a, depth)
			}
			ps.declValues(n, depth)
		case *syntax.CoprocClause:
			ps.opaque("coproc runs a command in the background")
		case *syntax.FuncDecl:
			name := "(unnamed)"
			if n.Name != nil {
				name = n.Name.Value
			}
			ps.opaque("defines a function %q", name)
		case *syntax.Stmt:
			ps.redirects(n)
		case *syntax.CallExpr:
			for _, a := range n.Assigns {
				ps.assign(a, depth)
			}
			if len(n.Assigns) > 0 {
				ps.opaque("sets %s=..., which can change what commands run and how (PATH, LD_PRELOAD, GIT_*)", assignName(n.Assigns[0]))
			}
			if len(n.Args) == 0 {
				return true // assignments only
			}
			c := Command{stdin: ps.stdin[n], dirs: ps.dirs}
			computed := false
			for i, w := range n.Args {
				if _, ok := wordLit(w); !ok {
					switch {
					case hasPart[*syntax.CmdSubst](w):
						ps.opaque("command substitution $(...) runs a command whose output cannot be known")
					case hasPart[*syntax.ProcSubst](w):
						ps.opaque("process substitution <(...) runs commands inside arguments")
					case i == 0:
						ps.opaque("the command name is computed (a variable or expansion in command position)")
					default:
						ps.opaque("an argument is computed (%s)", wordText(w))
					}
				}
				for _, x := range ps.words(w, i == 0) {
					c.Argv = append(c.Argv, x.text)
					c.kinds = append(c.kinds, x.kind)
					c.tails = append(c.tails, x.tail)
					computed = computed || x.kind != wordLiteral
				}
			}
			if unquotedMeta(n.Args[0]) {
				ps.opaque("the command name %s is a pattern (glob or brace expansion)", wordText(n.Args[0]))
				if hasGlob(n.Args[0]) && c.kinds[0] == wordLiteral {
					c.kinds[0] = wordPattern
					computed = true
				}
			}
			if !computed {
				c.kinds, c.tails = nil, nil
			}
			ps.add(c, depth)
			if alt, ok := ps.unsetForm(n.Args); ok {
				alt.stdin, alt.dirs = c.stdin, c.dirs
				ps.addUnset(alt, depth)
			}
		}
		return true
	})
}

// unsetForm returns the command args make when every variable of the
// environment they expand ([parser.fromEnv], but HOME) is unset: an
// unquoted word that then has nothing left disappears, glued pieces drop
// out, a quoted "$X" stays an empty word. ok is false when args expand
// no such variable.
func (ps *parser) unsetForm(args []*syntax.Word) (c Command, ok bool) {
	var drop func(parts []syntax.WordPart, quoted bool) []syntax.WordPart
	drop = func(parts []syntax.WordPart, quoted bool) []syntax.WordPart {
		var out []syntax.WordPart
		for _, part := range parts {
			switch x := part.(type) {
			case *syntax.ParamExp:
				if plainParam(x) && !isHomeParam(x) && ps.fromEnv(x.Param.Value) {
					ok = true
					continue
				}
			case *syntax.DblQuoted:
				q := *x
				q.Parts = drop(x.Parts, true)
				out = append(out, &q)
				continue
			}
			out = append(out, part)
		}
		return out
	}
	var ws []*syntax.Word
	for _, w := range args {
		parts := drop(w.Parts, false)
		if len(parts) == 0 {
			continue // an unquoted $X alone: no word at all
		}
		ws = append(ws, &syntax.Word{Parts: parts})
	}
	if !ok || len(ws) == 0 {
		return Command{}, false
	}
	computed := false
	for i, w := range ws {
		for _, x := range ps.words(w, i == 0) {
			c.Argv = append(c.Argv, x.text)
			c.kinds = append(c.kinds, x.kind)
			c.tails = append(c.tails, x.tail)
			computed = computed || x.kind != wordLiteral
		}
	}
	if !computed {
		c.kinds, c.tails = nil, nil
	}
	return c, true
}

// addUnset adds c, the form of a command with its environment's
// variables unset ([parser.unsetForm]), and what it runs: judged by the
// forbid and prompt rules only.
func (ps *parser) addUnset(c Command, depth int) {
	n := len(ps.p.Commands)
	ps.add(c, depth)
	for i := n; i < len(ps.p.Commands); i++ {
		ps.p.Commands[i].unset = true
	}
}

// redirects flags writes to files and scripts fed to interpreters, and
// notes the literal scripts that here-documents feed to a command.
func (ps *parser) redirects(st *syntax.Stmt) {
	call, _ := st.Cmd.(*syntax.CallExpr)
	for _, r := range st.Redirs {
		target, lit := "", false
		if r.Word != nil {
			target, lit = wordLit(r.Word)
		}
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrAll, syntax.AppAll, syntax.RdrClob, syntax.RdrInOut:
			if !lit || target != "/dev/null" {
				ps.opaque("writes to a file with a redirection (%s %s)", r.Op, wordText(r.Word))
			}
		case syntax.DplOut, syntax.DplIn:
			if !lit || (target != "-" && strings.Trim(target, "0123456789") != "") {
				ps.opaque("redirects to %s", wordText(r.Word))
			}
		case syntax.RdrIn:
			if call != nil {
				delete(ps.stdin, call) // input from a file
			}
			ps.reads(r.Word)
		case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
			if call == nil || len(call.Args) == 0 {
				continue
			}
			body := r.Hdoc
			if r.Op == syntax.WordHdoc {
				body = r.Word
			}
			if s, ok := hdocLit(body); ok && (r.N == nil || r.N.Value == "0") {
				ps.stdin[call] = &s
			} else {
				delete(ps.stdin, call)
			}
			argv := make([]string, len(call.Args))
			for i, w := range call.Args {
				argv[i], _ = wordLit(w)
			}
			if name := runs(Command{Argv: argv}); slices.Contains(interpreters, name) {
				ps.opaque("a here-document feeds a script to %s", name)
			}
		}
	}
}

// reads records the file an input redirection reads.
func (ps *parser) reads(w *syntax.Word) {
	x := ps.evalWord(w, false)
	if x.kind > wordEnv {
		ps.p.Reads = append(ps.p.Reads, "")
		return
	}
	dirs := ps.dirs
	if len(dirs) == 0 || path.IsAbs(x.text) || strings.HasPrefix(x.text, "~") || strings.HasPrefix(x.text, "$HOME") || strings.HasPrefix(x.text, "${HOME}") {
		dirs = []string{"."}
	}
	for _, d := range dirs {
		switch {
		case d == "":
			ps.p.Reads = append(ps.p.Reads, "")
		case d == ".":
			ps.p.Reads = append(ps.p.Reads, x.text)
		default:
			ps.p.Reads = append(ps.p.Reads, path.Join(d, x.text))
		}
	}
}

// hdocLit returns the text of a here-document body or here-string with
// nothing to expand.
func hdocLit(w *syntax.Word) (string, bool) {
	if w == nil {
		return "", true
	}
	if s, ok := wordLit(w); ok {
		return s, true
	}
	return "", false
}

// runs returns the base name of the program c finally runs, looking
// through wrappers such as env, sudo and timeout.
func runs(c Command) string {
	for range maxDepth {
		if len(c.Argv) == 0 {
			return ""
		}
		name := filepath.Base(c.Argv[0])
		w, ok := wrappers[name]
		if !ok || w.special && name != "env" {
			return name
		}
		starts := w.opts.scan(c, 1)
		i := starts[0] + w.operands
		if name == "env" {
			for i < len(c.Argv) && (strings.Contains(c.Argv[i], "=") || c.Argv[i] == "-") {
				i++
			}
		}
		if i >= len(c.Argv) {
			return ""
		}
		c = c.from(i)
	}
	return ""
}

// word is one word a shell word becomes.
type word struct {
	text string
	kind wordKind
	tail string // of a computed word, its literal end
}

// maxBraces bounds the words one brace expansion may make before the word
// counts as computed.
const maxBraces = 64

// words returns the words w becomes: brace expansion may make several.
// name says w is in command position.
func (ps *parser) words(w *syntax.Word, name bool) []word {
	cp := *w
	if !syntax.SplitBraces(&cp) {
		return []word{ps.evalWord(w, name)}
	}
	var out []word
	for x, err := range expand.BracesSeq(nil, &cp) {
		if err != nil || len(out) == maxBraces {
			return []word{{wordText(w), wordMany, ""}}
		}
		out = append(out, ps.evalWord(x, name))
	}
	return out
}

// evalWord returns w's literal value, or w as written with how much it
// may become when it is computed.
func (ps *parser) evalWord(w *syntax.Word, name bool) word {
	e := evaluator{ps: ps, name: name}
	kind := wordLiteral
	for _, part := range w.Parts {
		kind = max(kind, e.part(part, false))
	}
	if e.env && kind == wordLiteral {
		kind = wordEnv
		if strings.Contains(e.b.String(), "..") {
			kind = wordOne // $TMPDIR/../..: a path from anywhere to anywhere
			if !e.quoted {
				kind = wordMany
			}
		}
	}
	if kind == wordEnv {
		return word{e.b.String(), kind, ""}
	}
	if kind != wordLiteral {
		tail, _ := literalTail(w.Parts, false)
		return word{wordText(w), kind, tail}
	}
	return word{e.b.String(), kind, ""}
}

// literalTail returns the literal text at the end of parts, after the
// last part that is computed, and whether there is such a part.
func literalTail(parts []syntax.WordPart, quoted bool) (string, bool) {
	tail := ""
	for i := len(parts) - 1; i >= 0; i-- {
		switch x := parts[i].(type) {
		case *syntax.Lit:
			if quoted {
				tail = x.Value + tail
			} else {
				tail = unescape(x.Value) + tail
			}
		case *syntax.SglQuoted:
			if x.Dollar {
				return tail, true
			}
			tail = x.Value + tail
		case *syntax.DblQuoted:
			t, stopped := literalTail(x.Parts, true)
			tail = t + tail
			if stopped {
				return tail, true
			}
		default:
			return tail, true
		}
	}
	return tail, false
}

// evaluator evaluates the parts of one word.
type evaluator struct {
	ps   *parser
	name bool // the word is in command position
	b    strings.Builder
	// env: the word holds a variable of the environment, kept as
	// written; quoted: every such variable is quoted.
	env, quoted bool
}

// part writes the value of one part and returns how much is known of it.
func (e *evaluator) part(part syntax.WordPart, quoted bool) wordKind {
	computed := wordMany
	if quoted {
		computed = wordOne
	}
	switch x := part.(type) {
	case *syntax.Lit:
		if quoted {
			e.b.WriteString(x.Value)
		} else {
			e.b.WriteString(unescape(x.Value))
		}
	case *syntax.SglQuoted:
		if !x.Dollar {
			e.b.WriteString(x.Value)
			break
		}
		s, err := expand.Literal(nil, &syntax.Word{Parts: []syntax.WordPart{x}})
		if err != nil {
			return computed
		}
		e.b.WriteString(s)
	case *syntax.DblQuoted:
		kind := wordLiteral
		for _, q := range x.Parts {
			kind = max(kind, e.part(q, true))
		}
		return kind
	case *syntax.ParamExp:
		if isHomeParam(x) {
			e.b.WriteString("$HOME")
			break
		}
		if x.Index != nil || x.Param != nil && (x.Param.Value == "@" || x.Param.Value == "*") {
			return wordMany // "$@", "${a[@]}"
		}
		if !e.name && plainParam(x) && e.ps.fromEnv(x.Param.Value) {
			e.keep(x, quoted)
			break
		}
		return computed
	case *syntax.CmdSubst:
		if !e.name && isMktemp(x) {
			e.keep(x, quoted) // a new file's name: never / nor ~
			break
		}
		return computed
	case *syntax.ArithmExp, *syntax.ProcSubst:
		return wordOne
	default: // extended globs, unexpanded braces
		return computed
	}
	return wordLiteral
}

// keep writes an expansion as written: its value is not the agent's to
// choose (a variable of the environment that the line never sets), so it
// is compared as the text it is, like the literal it will be.
func (e *evaluator) keep(n syntax.Node, quoted bool) {
	if !e.env {
		e.quoted = true
	}
	e.env, e.quoted = true, e.quoted && quoted
	syntax.NewPrinter().Print(&e.b, n)
}

// plainParam reports whether x is $NAME or ${NAME}, nothing more.
func plainParam(x *syntax.ParamExp) bool {
	return x.Param != nil && !x.Excl && !x.Length && !x.Width &&
		x.Index == nil && x.Slice == nil && x.Repl == nil && x.Exp == nil && x.Names == 0
}

// special are variables the shell sets itself, and the arguments: their
// values follow the line (cd sets PWD, set -- sets $1).
var special = []string{"PWD", "OLDPWD", "REPLY", "MAPFILE", "DIRSTACK", "COPROC", "BASH_REMATCH", "BASH_ARGV",
	"BASH_ARGC", "BASH_SOURCE", "BASH_COMMAND", "BASH_EXECUTION_STRING", "FUNCNAME", "PIPESTATUS", "IFS", "OPTARG", "CDPATH"}

// fromEnv reports whether the variable name takes its value from the
// environment unified-exec gives the command, which the agent does not
// choose: an ordinary name that no script of the line sets, or one only
// ever set to a new temporary file's name.
func (ps *parser) fromEnv(name string) bool {
	if !isIdent(name) || name == "_" || slices.Contains(special, name) {
		return false
	}
	fresh, bound := ps.bound[name]
	return !bound || fresh
}

func isIdent(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// isMktemp reports whether a command substitution is only `mktemp ...`.
func isMktemp(cs *syntax.CmdSubst) bool {
	if len(cs.Stmts) != 1 || len(cs.Stmts[0].Redirs) > 0 {
		return false
	}
	call, ok := cs.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) == 0 || len(call.Assigns) > 0 {
		return false
	}
	name, ok := wordLit(call.Args[0])
	return ok && filepath.Base(name) == "mktemp"
}

// binders are the builtins that set the variables named by their
// arguments.
// readers are the binders that set a variable to what they read.
var readers = []string{"read", "mapfile", "readarray", "getopts", "wait", "compgen"}

var binders = []string{"read", "mapfile", "readarray", "printf", "getopts", "wait", "unset", "export", "declare", "local", "typeset", "readonly", "let", "compgen"}

// bindings records the variables a script sets, by any means, before its
// words are evaluated: a variable set anywhere, even after its use (a
// loop), is not the environment's.
func (ps *parser) bindings(f *syntax.File) {
	ps.cdSearch = ps.cdSearch || searchesCd(f)
	bind := func(name string, fresh bool) {
		if was, ok := ps.bound[name]; ok {
			fresh = fresh && was
		}
		ps.bound[name] = fresh
	}
	bindArith := func(x syntax.ArithmExpr) {
		if w, ok := x.(*syntax.Word); ok {
			if v, ok := wordLit(w); ok {
				bind(v, false)
			}
		}
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Assign:
			if n.Name != nil {
				bind(n.Name.Value, n.Value != nil && mktempValue(n.Value) && !n.Append && n.Index == nil)
			}
			ps.recordAssign(n)
		case *syntax.DeclClause:
			ps.declare(n)
		case *syntax.WordIter:
			if n.Name != nil {
				bind(n.Name.Value, false)
				ps.assigned[n.Name.Value] = append(ps.assigned[n.Name.Value], n.Items...)
				if len(n.Items) == 0 {
					ps.assigned[n.Name.Value] = append(ps.assigned[n.Name.Value], nil) // "$@"
				}
			}
		case *syntax.BinaryArithm:
			switch n.Op {
			case syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn, syntax.QuoAssgn, syntax.RemAssgn,
				syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn, syntax.ShlAssgn, syntax.ShrAssgn,
				syntax.AndBoolAssgn, syntax.OrBoolAssgn, syntax.XorBoolAssgn, syntax.PowAssgn:
				bindArith(n.X)
			}
		case *syntax.UnaryArithm:
			if n.Op == syntax.Inc || n.Op == syntax.Dec {
				bindArith(n.X)
			}
		case *syntax.ParamExp:
			if n.Param != nil && n.Exp != nil && (n.Exp.Op == syntax.AssignUnset || n.Exp.Op == syntax.AssignUnsetOrNull) {
				bind(n.Param.Value, false)
				ps.assigned[n.Param.Value] = append(ps.assigned[n.Param.Value], n.Exp.Word)
			}
		case *syntax.CallExpr:
			if len(n.Args) == 0 {
				break
			}
			name, _ := wordLit(n.Args[0])
			args := n.Args[1:]
			if (name == "builtin" || name == "command") && len(args) > 0 {
				name, _ = wordLit(args[0])
				args = args[1:]
			}
			switch name {
			case "cd", "pushd":
				ps.cd(args)
			case "alias":
				ps.aliasArgs(args)
			}
			if slices.Contains(binders, filepath.Base(name)) {
				for i, w := range n.Args[1:] {
					if v, ok := wordLit(w); ok {
						v, _, _ = strings.Cut(v, "=")
						if i := strings.IndexByte(v, '['); i > 0 {
							v = v[:i]
						}
						if !isIdent(v) {
							continue
						}
						bind(v, false)
						prev, _ := wordLit(n.Args[i])
						if slices.Contains(readers, filepath.Base(name)) || name == "printf" && prev == "-v" {
							ps.assigned[v] = append(ps.assigned[v], nil) // what it reads: computed
						}
					}
				}
			}
		}
		return true
	})
	ps.computeVars()
}

// searchesCd reports whether a script makes cd look for a relative
// directory elsewhere: it sets CDPATH or shopt -s cdable_vars.
func searchesCd(f *syntax.File) bool {
	found := false
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Assign:
			found = found || n.Name != nil && n.Name.Value == "CDPATH"
		case *syntax.CallExpr:
			for _, w := range n.Args {
				if v, _ := wordLit(w); v == "cdable_vars" || v == "CDPATH" || strings.HasPrefix(v, "CDPATH=") {
					found = true
				}
			}
		}
		return !found
	})
	return found
}

// mktempValue reports whether an assigned value is only $(mktemp ...).
func mktempValue(w *syntax.Word) bool {
	parts := w.Parts
	if len(parts) == 1 {
		if dq, ok := parts[0].(*syntax.DblQuoted); ok {
			parts = dq.Parts
		}
	}
	if len(parts) != 1 {
		return false
	}
	cs, ok := parts[0].(*syntax.CmdSubst)
	return ok && isMktemp(cs)
}

// isHomeParam reports whether x is $HOME or ${HOME}, nothing more.
func isHomeParam(x *syntax.ParamExp) bool {
	return x.Param != nil && x.Param.Value == "HOME" && !x.Excl && !x.Length && !x.Width &&
		x.Index == nil && x.Slice == nil && x.Repl == nil && x.Exp == nil && x.Names == 0
}

// unquotedMeta reports whether a word has an unquoted glob or brace
// character, which the shell may expand into another word.
func unquotedMeta(w *syntax.Word) bool {
	if hasGlob(w) {
		return true
	}
	for _, part := range w.Parts {
		l, ok := part.(*syntax.Lit)
		if !ok {
			continue
		}
		v := l.Value
		if i := strings.IndexByte(v, '{'); i >= 0 {
			rest := v[i+1:]
			if j := strings.IndexByte(rest, '}'); j >= 0 && (strings.Contains(rest[:j], ",") || strings.Contains(rest[:j], "..")) {
				return true
			}
		}
	}
	return false
}

// hasGlob reports whether a word has an unquoted glob character.
func hasGlob(w *syntax.Word) bool {
	for _, part := range w.Parts {
		if _, ok := part.(*syntax.ExtGlob); ok {
			return true
		}
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
			if s[i] == '\n' {
				continue // a line continuation
			}
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
