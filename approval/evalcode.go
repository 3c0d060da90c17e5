package approval

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Bash runs code hidden in data in a few places besides eval: a value
// evaluated as arithmetic ($((x)), ((...)), let, [[ x -eq y ]], an
// indexed array's subscript, declare -i) is evaluated again when it names
// a variable, and a subscript a[...] in it runs the command substitutions
// it holds: x='a[$(cmd)]'; echo $((x)) runs cmd. So do a subscript in a
// variable's name (read, printf -v, test -v, unset, declare, ${!x}), and
// a value expanded as a prompt (${x@P}, PS4). Where the text is in the
// line it is judged as a script; where the line computes it (a
// substitution, read, a loop), the command is unknown.

// numericSpecial are the shell's variables that always hold a number.
var numericSpecial = []string{"#", "?", "$", "!", "RANDOM", "SRANDOM", "LINENO", "SECONDS", "EPOCHSECONDS",
	"BASHPID", "PPID", "UID", "EUID", "OPTIND", "SHLVL", "HISTCMD", "COLUMNS", "LINES"}

// unsafeVar reports whether variable name may hold text the line chose
// and computed, which evaluated as arithmetic or as a name can run a
// command: not the environment's, nor a number, nor only literals.
func (ps *parser) unsafeVar(name string) bool {
	switch {
	case slices.Contains(numericSpecial, name):
		return false
	case ps.fromEnv(name):
		return false
	case !isIdent(name) || name == "_" || slices.Contains(special, name):
		return true // $1, $_, $REPLY, ...
	}
	return ps.computed[name]
}

// computeVars works out which variables the line computes
// ([parser.computed]) from the words assigned to them: a value is safe
// when it is literal (and names no subscript with an expansion in it), a
// number, the environment's, or another safe variable's.
func (ps *parser) computeVars() {
	for changed := true; changed; {
		changed = false
		for name, ws := range ps.assigned {
			if ps.computed[name] {
				continue
			}
			for _, w := range ws {
				if w == nil || !ps.safeValue(w) {
					ps.computed[name], changed = true, true
					break
				}
			}
		}
	}
}

// safeValue reports whether an assigned word has a value that cannot run
// code when evaluated as arithmetic.
func (ps *parser) safeValue(w *syntax.Word) bool {
	for _, part := range w.Parts {
		if !ps.safePart(part) {
			return false
		}
	}
	return true
}

func (ps *parser) safePart(part syntax.WordPart) bool {
	switch x := part.(type) {
	case *syntax.Lit:
		return safeText(x.Value)
	case *syntax.SglQuoted:
		return safeText(x.Value)
	case *syntax.DblQuoted:
		for _, q := range x.Parts {
			if !ps.safePart(q) {
				return false
			}
		}
		return true
	case *syntax.ParamExp:
		if x.Length && (x.Index == nil || allIndex(x.Index)) {
			return true // ${#x}, ${#a[@]}: a number
		}
		if x.Excl && x.Index != nil && allIndex(x.Index) {
			return !ps.assoc[x.Param.Value] // ${!a[@]}: an indexed array's keys, numbers
		}
		return plainParam(x) && !ps.unsafeVar(x.Param.Value)
	case *syntax.CmdSubst:
		return numericSubst(x)
	case *syntax.ArithmExp:
		return true // a number
	}
	return false
}

// safeText: literal text that names no subscript holding an expansion.
func safeText(s string) bool {
	return !strings.Contains(s, "[") || !strings.ContainsAny(s, "$`")
}

// numericSubst reports whether a command substitution prints only a
// number: wc reading its input, nproc, date +%s, id -u, getconf, git
// rev-list --count, grep -c, stat -c %s, tput cols, or a pipeline ending
// in one.
func numericSubst(cs *syntax.CmdSubst) bool {
	if len(cs.Stmts) != 1 {
		return false
	}
	return numericStmt(cs.Stmts[0])
}

func numericStmt(st *syntax.Stmt) bool {
	if b, ok := st.Cmd.(*syntax.BinaryCmd); ok && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) {
		return numericStmt(b.Y)
	}
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) == 0 || len(call.Assigns) > 0 {
		return false
	}
	var argv []string
	for _, w := range call.Args {
		v, ok := wordLit(w)
		if !ok || !safeText(v) {
			return false
		}
		argv = append(argv, v)
	}
	args := argv[1:]
	options := !slices.ContainsFunc(args, func(a string) bool { return !strings.HasPrefix(a, "-") })
	switch filepath.Base(argv[0]) {
	case "wc":
		return options // reading its input: only the count
	case "nproc", "getconf":
		return true
	case "date":
		return len(args) == 1 && strings.HasPrefix(args[0], "+") && strings.Trim(args[0][1:], "%sNYmdHMSjuwyeklCGgVU0123456789-:. ") == ""
	case "id":
		return len(args) > 0 && strings.Trim(strings.Join(args, ""), "-ugr") == ""
	case "git":
		return len(args) > 1 && args[0] == "rev-list" && slices.Contains(args, "--count")
	case "grep", "rg":
		return slices.ContainsFunc(args, func(a string) bool { return a == "--count" || shortCluster(a, 'c') })
	case "seq":
		return !slices.ContainsFunc(args, func(a string) bool { return !isNumber(a) && a != "-w" && !isNumber(strings.TrimPrefix(a, "-")) })
	case "stat":
		// -c FORMAT of numbers only (%s, %Y, ...; not %n, a name).
		for i, a := range args {
			f, ok := strings.CutPrefix(a, "--format=")
			if !ok {
				f, ok = strings.CutPrefix(a, "-c")
			}
			if (a == "-c" || a == "--format" || a == "--printf") && i+1 < len(args) {
				f, ok = args[i+1], true
			}
			if ok && f != "" {
				return strings.Trim(strings.ReplaceAll(f, "%", ""), "abBdDfgiIhorRsStTuWXYZ \\n") == ""
			}
		}
		return false
	case "tput":
		return len(args) == 1 && (args[0] == "cols" || args[0] == "lines" || args[0] == "colors")
	}
	return false
}

// unknownCode records that the line runs code hidden in a value.
func (ps *parser) unknownCode(show, format string, a ...any) {
	c := Command{Argv: []string{show}, kinds: []wordKind{wordMany}}
	why := strings.TrimSpace(fmt.Sprintf(format, a...))
	for _, x := range ps.p.Commands {
		if x.whole == why {
			return
		}
	}
	ps.unknown(c, "%s", why)
}

// arithNode judges the arithmetic of ((...)), $((...)), let and for ((...)).
func (ps *parser) arithNode(n syntax.Node, depth int) {
	switch n := n.(type) {
	case *syntax.ArithmExp:
		ps.arith(n.X, depth)
	case *syntax.ArithmCmd:
		ps.arith(n.X, depth)
	case *syntax.LetClause:
		for _, x := range n.Exprs {
			ps.arith(x, depth)
		}
	case *syntax.CStyleLoop:
		for _, x := range []syntax.ArithmExpr{n.Init, n.Cond, n.Post} {
			ps.arith(x, depth)
		}
	}
}

// arith judges an arithmetic expression.
func (ps *parser) arith(x syntax.ArithmExpr, depth int) {
	switch x := x.(type) {
	case *syntax.BinaryArithm:
		ps.arith(x.X, depth)
		ps.arith(x.Y, depth)
	case *syntax.UnaryArithm:
		ps.arith(x.X, depth)
	case *syntax.ParenArithm:
		ps.arith(x.X, depth)
	case *syntax.Word:
		ps.arithWord(x, depth)
	}
}

// arithWord judges one word that is evaluated as arithmetic.
func (ps *parser) arithWord(w *syntax.Word, depth int) {
	if w == nil {
		return
	}
	if lit, ok := wordLit(w); ok {
		ps.arithText(lit, depth)
		return
	}
	for _, part := range w.Parts {
		ps.arithPart(part, depth)
	}
}

func (ps *parser) arithPart(part syntax.WordPart, depth int) {
	switch x := part.(type) {
	case *syntax.DblQuoted:
		for _, q := range x.Parts {
			ps.arithPart(q, depth)
		}
	case *syntax.ParamExp:
		if x.Param == nil || x.Length && x.Index == nil {
			return
		}
		if x.Index != nil && !allIndex(x.Index) {
			ps.arith(x.Index, depth)
		}
		if ps.unsafeVar(x.Param.Value) {
			ps.unknownCode("$"+x.Param.Value, "arithmetic evaluates $%s, which the line computes: a value such as a[$(cmd)] runs cmd", x.Param.Value)
		}
		if x.Exp != nil && x.Exp.Word != nil {
			for _, q := range x.Exp.Word.Parts {
				ps.arithPart(q, depth)
			}
		}
	case *syntax.CmdSubst:
		if !numericSubst(x) {
			ps.unknownCode("$(...)", "arithmetic evaluates the output of a command substitution: an output such as a[$(cmd)] runs cmd")
		}
	case *syntax.ArithmExp, *syntax.Lit, *syntax.SglQuoted:
	default:
		ps.unknownCode(fmt.Sprintf("%T", x), "arithmetic evaluates a value known only when it runs")
	}
}

// allIndex reports whether a subscript is @ or *: every element.
func allIndex(x syntax.ArithmExpr) bool {
	w, ok := x.(*syntax.Word)
	if !ok {
		return false
	}
	v, _ := wordLit(w)
	return v == "@" || v == "*"
}

// arithText judges literal text evaluated as arithmetic: a variable it
// names is evaluated in turn; an expression is parsed, its subscripts
// and substitutions judged.
func (ps *parser) arithText(lit string, depth int) {
	lit = strings.TrimSpace(lit)
	switch {
	case lit == "" || isNumber(lit):
	case isIdent(lit):
		if ps.unsafeVar(lit) {
			ps.unknownCode("$"+lit, "arithmetic evaluates %s, which the line computes: a value such as a[$(cmd)] runs cmd", lit)
		}
	case depth >= maxDepth:
		ps.unknownCode(lit, "arithmetic is nested too deeply to be read")
	default:
		ps.script("(( "+lit+" ))", depth+1)
	}
}

func isNumber(s string) bool {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	return s != "" && strings.Trim(s, "0123456789abcdefABCDEFxX#@_") == "" && s[0] >= '0' && s[0] <= '9'
}

// varName judges text used as the name of a variable (read NAME, printf
// -v NAME, test -v NAME, declare NAME=, unset NAME): bash evaluates a
// subscript in it, so a[$(cmd)] runs cmd.
func (ps *parser) varName(text string, computed bool, depth int) {
	if computed {
		ps.unknownCode(text, "the name of a variable is computed (%s), and a subscript in a name runs commands", text)
		return
	}
	i, j := strings.IndexByte(text, '['), strings.LastIndexByte(text, ']')
	if i < 0 || j < i {
		return
	}
	if sub := text[i+1 : j]; sub != "@" && sub != "*" {
		ps.arithText(sub, depth)
	}
}

// evaluated judges the parts of the syntax bash evaluates as arithmetic
// or as a name besides arithmetic itself: subscripts, slices,
// indirection, prompt expansion, the integer comparisons and -v of [[ ]].
func (ps *parser) evaluated(n syntax.Node, depth int) {
	switch n := n.(type) {
	case *syntax.ParamExp:
		if n.Param == nil {
			return
		}
		name := n.Param.Value
		if n.Exp != nil && n.Exp.Op == syntax.OtherParamOps {
			if op, _ := wordLit(n.Exp.Word); strings.Contains(op, "P") {
				ps.unknownCode("${"+name+"@P}", "${%s@P} expands a value as a prompt, which runs the command substitutions written in it", name)
			}
		}
		if n.Excl && n.Names == 0 && n.Index == nil && ps.unsafeVar(name) {
			ps.unknownCode("${!"+name+"}", "${!%s} names a variable by a value the line computes, and a subscript in a name runs commands", name)
		}
		if n.Index != nil && !ps.assoc[name] && !allIndex(n.Index) {
			ps.arith(n.Index, depth)
		}
		if n.Slice != nil {
			ps.arith(n.Slice.Offset, depth)
			ps.arith(n.Slice.Length, depth)
		}
	case *syntax.Assign:
		if n.Name == nil {
			return
		}
		if n.Index != nil && !ps.assoc[n.Name.Value] {
			ps.arith(n.Index, depth)
		}
		if n.Array != nil && !ps.assoc[n.Name.Value] {
			for _, e := range n.Array.Elems {
				if e.Index != nil {
					ps.arith(e.Index, depth)
				}
			}
		}
		if ps.intVars[n.Name.Value] && n.Value != nil {
			ps.arithWord(n.Value, depth)
		}
	case *syntax.BinaryTest:
		switch n.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			for _, x := range []syntax.TestExpr{n.X, n.Y} {
				if w, ok := x.(*syntax.Word); ok {
					ps.arithWord(w, depth)
				}
			}
		}
	case *syntax.UnaryTest:
		if w, ok := n.X.(*syntax.Word); ok && n.Op == syntax.TsVarSet {
			v, lit := wordLit(w)
			if !lit {
				v = wordText(w)
				lit = ps.safeValue(w)
			}
			ps.varName(v, !lit, depth)
		}
	}
}

// declValues judges the values of declare -n (a name) and declare -i (an
// arithmetic expression).
func (ps *parser) declValues(d *syntax.DeclClause, depth int) {
	var flags string
	for _, a := range d.Args {
		if a.Naked && a.Name == nil && a.Value != nil {
			if v, ok := wordLit(a.Value); ok && strings.HasPrefix(v, "-") {
				flags += v[1:]
				continue
			}
		}
		if a.Name == nil || a.Value == nil {
			continue
		}
		switch {
		case strings.Contains(flags, "n"):
			v, lit := wordLit(a.Value)
			if !lit {
				v, lit = wordText(a.Value), ps.safeValue(a.Value)
			}
			ps.varName(v, !lit, depth)
		case strings.Contains(flags, "i"):
			ps.arithWord(a.Value, depth)
		}
	}
}

// builtinCode judges the builtins that run code or evaluate names given
// as arguments: test -v, read, mapfile -C, printf -v, getopts, wait -p,
// unset, declare through builtin, let through builtin, complete -C, bind
// -x, enable -f and fc.
func (ps *parser) builtinCode(name string, c Command, depth int) {
	nameAt := func(i int) {
		if i < len(c.Argv) {
			ps.varName(c.Argv[i], c.kind(i) > wordEnv, depth)
		}
	}
	// valueOf finds the value of the short option letter (-C CMD, -CCMD)
	// among options where those of takes take a value.
	valueOf := func(letter byte, takes string) (string, wordKind, bool) {
		for i := 1; i < len(c.Argv); i++ {
			a := c.Argv[i]
			if c.kind(i) != wordLiteral || a == "--" || !strings.HasPrefix(a, "-") || len(a) < 2 {
				break
			}
			for j := 1; j < len(a); j++ {
				if a[j] == letter {
					if j < len(a)-1 {
						return a[j+1:], wordLiteral, true
					}
					if i+1 < len(c.Argv) {
						return c.Argv[i+1], c.kind(i + 1), true
					}
					return "", wordLiteral, false
				}
				if strings.IndexByte(takes, a[j]) >= 0 {
					if j == len(a)-1 {
						i++
					}
					break
				}
			}
		}
		return "", wordLiteral, false
	}
	codeOf := func(letter byte, takes, what string) {
		v, k, ok := valueOf(letter, takes)
		switch {
		case !ok:
		case k > wordEnv:
			ps.unknown(c, "%s runs a computed command (%s)", what, v)
		default:
			ps.code(v, what, depth)
		}
	}
	nameOf := func(letter byte, takes string) {
		if v, k, ok := valueOf(letter, takes); ok {
			ps.varName(v, k > wordEnv, depth)
		}
	}
	operands := func(takes string) int { return optSpec{short: takes}.scan(c, 1)[0] }
	switch name {
	case "test", "[":
		for i := 1; i+1 < len(c.Argv); i++ {
			if c.Argv[i] == "-v" {
				nameAt(i + 1)
			}
		}
	case "read":
		nameOf('a', "dinNptu")
		for i := operands("adinNptu"); i < len(c.Argv); i++ {
			nameAt(i)
		}
	case "mapfile", "readarray":
		codeOf('C', "dnOsuc", name+" -C")
		for i := operands("dnOsuCc"); i < len(c.Argv); i++ {
			nameAt(i)
		}
	case "printf":
		nameOf('v', "")
	case "getopts":
		nameAt(operands("") + 1)
	case "wait":
		nameOf('p', "")
	case "unset", "declare", "typeset", "local", "export", "readonly":
		if slices.ContainsFunc(c.Argv[1:], func(a string) bool { return shortCluster(a, 'f') }) {
			return // functions
		}
		for i := operands(""); i < len(c.Argv); i++ {
			n, _, eq := strings.Cut(c.Argv[i], "=")
			computed := c.kind(i) > wordEnv && (!eq || !isIdent(n))
			ps.varName(n, computed, depth)
		}
	case "let":
		for i := 1; i < len(c.Argv); i++ {
			if c.kind(i) > wordEnv {
				ps.unknownCode(c.Argv[i], "let evaluates a computed expression (%s), and a subscript in it runs commands", c.Argv[i])
				continue
			}
			ps.arithText(c.Argv[i], depth)
		}
	case "complete", "compgen":
		codeOf('C', "oAGWFXPSV", name+" -C")
	case "bind":
		v, k, ok := valueOf('x', "mqufrs")
		switch {
		case !ok:
		case k > wordEnv:
			ps.unknown(c, "bind -x runs a computed command (%s)", v)
		default:
			if _, cmd, found := strings.Cut(v, ":"); found {
				ps.code(strings.Trim(strings.TrimSpace(cmd), `"'`), "bind -x", depth)
			}
		}
	case "enable":
		if slices.ContainsFunc(c.Argv[1:], func(a string) bool { return shortCluster(a, 'f') }) {
			ps.unknown(c, "enable -f loads a shared library, whose code cannot be read in advance")
		}
	case "fc":
		if !slices.ContainsFunc(c.Argv[1:], func(a string) bool { return shortCluster(a, 'l') }) {
			ps.unknown(c, "fc runs commands from the history, which cannot be read in advance")
		}
	}
}
