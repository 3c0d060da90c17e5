package approval

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// aliasDef is one value the line gives a shell alias.
type aliasDef struct {
	value    string
	computed bool // known only when it runs
}

// alias records that the line defines the alias name (alias NAME=VALUE,
// BASH_ALIASES[NAME]=VALUE). Bash expands aliases in a non-interactive
// shell only after shopt -s expand_aliases, dash and sh always: a use of
// the name is judged as the value either way, wherever in the line it
// is, before or after the definition (a loop).
func (ps *parser) alias(name, value string, computed bool) {
	d := aliasDef{value, computed}
	for _, x := range ps.aliases[name] {
		if x == d {
			return
		}
	}
	ps.aliases[name] = append(ps.aliases[name], d)
}

// expandAlias judges c, whose name the line defines as an alias, as the
// alias's value followed by c's arguments: a value ending in a blank
// makes the next word an alias too, as in bash. It reports whether the
// name is an alias.
func (ps *parser) expandAlias(c Command, depth int) bool {
	name := c.Argv[0]
	defs, ok := ps.aliases[name]
	if !ok || c.kind(0) != wordLiteral || ps.expanding[name] {
		return false
	}
	ps.expanding[name] = true
	defer delete(ps.expanding, name)
	for _, d := range defs {
		if d.computed {
			ps.unknown(c, "%s is an alias whose value is computed (%s)", name, d.value)
			continue
		}
		text, rest := d.value, c.from(1)
		for range maxDepth {
			if !strings.HasSuffix(text, " ") && !strings.HasSuffix(text, "\t") || len(rest.Argv) == 0 || rest.kind(0) != wordLiteral {
				break
			}
			next := ps.aliases[rest.Argv[0]]
			if len(next) != 1 || next[0].computed || ps.expanding[rest.Argv[0]] {
				break // expanded (or found unknown) when the command is added
			}
			text += next[0].value
			rest = rest.from(1)
		}
		ps.script(text+" "+rest.String(), depth+1)
	}
	return true
}

// aliasArgs records the aliases of `alias NAME=VALUE ...` before the line
// is walked, so that a use before the definition (in a loop) is judged
// too; [parser.add] records those of an alias command reached otherwise
// (eval, builtin alias).
func (ps *parser) aliasArgs(args []*syntax.Word) {
	for _, w := range args {
		v, ok := wordLit(w)
		name, value, def := strings.Cut(v, "=")
		if ok && def {
			ps.alias(name, value, false)
			continue
		}
		// alias g=$x: the name is known, the value is not.
		if lit, ok := w.Parts[0].(*syntax.Lit); ok {
			if name, _, def := strings.Cut(lit.Value, "="); def && isIdentish(name) {
				ps.alias(name, wordText(w), true)
			}
		}
	}
}

// bashAliases records an assignment to BASH_ALIASES, which defines
// aliases: BASH_ALIASES[g]=git, BASH_ALIASES=([g]=git). It reports false
// when a name or value is computed.
func (ps *parser) bashAliases(a *syntax.Assign) bool {
	record := func(index syntax.ArithmExpr, value *syntax.Word) bool {
		iw, ok := index.(*syntax.Word)
		if !ok || value == nil {
			return false
		}
		name, ok := wordLit(iw)
		if !ok {
			return false
		}
		v, ok := wordLit(value)
		ps.alias(name, v, !ok)
		if !ok {
			ps.aliases[name][len(ps.aliases[name])-1].value = wordText(value)
		}
		return true
	}
	if a.Array != nil {
		all := true
		for _, e := range a.Array.Elems {
			all = record(e.Index, e.Value) && all
		}
		return all
	}
	if a.Index == nil {
		return a.Value == nil || a.Naked
	}
	return record(a.Index, a.Value)
}

// isIdentish reports whether s can be an alias name: anything but
// blanks, quotes and the shell's metacharacters.
func isIdentish(s string) bool {
	return s != "" && !strings.ContainsAny(s, " \t\n'\"`$&|;<>()\\=/")
}
