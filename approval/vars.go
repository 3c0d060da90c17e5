package approval

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// commandVars are the variables whose value is a command that programs
// run: pagers, editors, git's ssh, proxy, askpass and external diff,
// less's input filter, bash's PROMPT_COMMAND. Whoever reads one runs it,
// with arguments of its own, so a value the line gives one is judged as
// a script.
var commandVars = []string{
	"PAGER", "GIT_PAGER", "MANPAGER", "SYSTEMD_PAGER", "GH_PAGER", "BAT_PAGER", "DELTA_PAGER",
	"EDITOR", "VISUAL", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "SUDO_EDITOR", "FCEDIT", "GH_EDITOR",
	"GIT_SSH_COMMAND", "GIT_SSH", "GIT_ASKPASS", "SSH_ASKPASS", "SUDO_ASKPASS", "GIT_PROXY_COMMAND",
	"GIT_EXTERNAL_DIFF", "LESSOPEN", "LESSCLOSE", "PROMPT_COMMAND", "BROWSER", "RSYNC_RSH", "CVS_RSH",
}

// promptVars are expanded as prompts: backslash escapes decoded, then
// command substitutions run (PS4 with set -x, PS0-PS2 in an interactive
// shell).
var promptVars = []string{"PS0", "PS1", "PS2", "PS3", "PS4"}

// assign judges an assignment where it runs: what the variable makes
// programs do later ([parser.setting]), a subscript in its name, and a
// literal value holding a command substitution, which may be expanded
// later (eval "$v"), judged as a script.
func (ps *parser) assign(a *syntax.Assign, depth int) {
	if a == nil {
		return
	}
	name, value, computed, ok := assignParts(a)
	switch {
	case !ok && a.Naked && a.Value != nil && !strings.HasPrefix(wordText(a.Value), "-") && !strings.HasPrefix(wordText(a.Value), "+"):
		ps.unknown(Command{Argv: []string{wordText(a.Value)}}, "the name of the variable %s sets is computed, and a subscript in a name runs commands", wordText(a.Value))
		return
	case !ok:
		return
	}
	if i := strings.IndexByte(name, '['); i >= 0 && a.Name == nil {
		ps.varName(name, false, depth) // declare 'a[$(cmd)]=1'
		name = name[:i]
	}
	if a.Name != nil && a.Name.Value == "BASH_ALIASES" || name == "BASH_ALIASES" {
		if a.Name == nil || !ps.bashAliases(a) {
			ps.unknown(Command{Argv: []string{"BASH_ALIASES=" + value}}, "BASH_ALIASES defines aliases by a computed name or value")
		}
		return
	}
	if (a.Value == nil && a.Array == nil) || a.Naked && a.Name != nil {
		return
	}
	ps.setting(name, value, computed, depth)
	if !computed && (strings.Contains(value, "$(") || strings.Contains(value, "`")) {
		ps.script(value, depth+1)
	}
}

// assignParts returns an assignment's name and value: its value as text,
// literal or as written when computed. A quoted declare 'N=V' is parsed;
// ok is false for a declare's options and for a computed name.
func assignParts(a *syntax.Assign) (name, value string, computed, ok bool) {
	if a.Name != nil {
		name = a.Name.Value
		if a.Value != nil {
			var lit bool
			if value, lit = wordLit(a.Value); !lit {
				value, computed = wordText(a.Value), true
			}
		}
		if a.Array != nil {
			value, computed = "", false
			for _, e := range a.Array.Elems {
				if e.Value == nil {
					continue
				}
				v, lit := wordLit(e.Value)
				if !lit {
					v, computed = wordText(e.Value), true
				}
				value += v + " "
			}
		}
		return name, value, computed, true
	}
	if !a.Naked || a.Value == nil {
		return "", "", false, false
	}
	lit, isLit := wordLit(a.Value)
	if !isLit {
		// "NAME=$x": the name is literal, the value computed.
		if l, ok := a.Value.Parts[0].(*syntax.Lit); ok {
			if n, _, eq := strings.Cut(l.Value, "="); eq && isIdent(n) {
				_, v, _ := strings.Cut(wordText(a.Value), "=")
				return n, v, true, true
			}
		}
		return "", "", false, false
	}
	if strings.HasPrefix(lit, "-") || strings.HasPrefix(lit, "+") {
		return "", "", false, false
	}
	name, value, _ = strings.Cut(lit, "=")
	return name, value, false, true
}

// setting judges what giving variable name a value makes programs do.
func (ps *parser) setting(name, value string, computed bool, depth int) {
	show := Command{Argv: []string{name + "=" + value}}
	switch {
	case name == "BASH_ENV":
		ps.unknown(show, "BASH_ENV makes bash run a file first, which cannot be read in advance")
	case name == "BASH_CMDS":
		ps.unknown(show, "BASH_CMDS makes a command name run another program")
	case slices.Contains(promptVars, name):
		if computed || strings.Contains(value, `\`) {
			ps.unknown(show, "%s is expanded as a prompt, whose escapes and command substitutions run commands that cannot be read in advance", name)
		}
	case slices.Contains(commandVars, name):
		if computed {
			ps.unknown(show, "%s holds a command that programs run, and it is computed", name)
			return
		}
		ps.commandVar(name, value, depth)
	}
}

// commandVar judges the command a variable of commandVars holds.
func (ps *parser) commandVar(name, value string, depth int) {
	switch name {
	case "LESSOPEN", "LESSCLOSE":
		value = strings.TrimLeft(strings.TrimPrefix(value, "-"), "|")
		value = strings.ReplaceAll(value, "%s", "file")
	case "BROWSER":
		for _, b := range strings.Split(value, ":") {
			ps.code(strings.ReplaceAll(b, "%s", "url"), "the browser", depth)
		}
		return
	}
	if strings.TrimSpace(value) == "" {
		return
	}
	ps.code(value, "whoever reads "+name, depth)
}

// code judges a command string that a program runs with sh -c, adding
// arguments of its own (who says which program): its last command may
// get any.
func (ps *parser) code(src, who string, depth int) {
	n := len(ps.p.Commands)
	ps.script(src, depth+1)
	if len(ps.p.Commands) > n {
		if last := &ps.p.Commands[len(ps.p.Commands)-1]; last.more == "" && last.whole == "" {
			last.more = who + " adds arguments when it runs it"
		}
	}
}

// recordAssign records, before the line is walked, the value an
// assignment gives its variable ([parser.vars]), the words that may
// compute it ([parser.assigned]) and the aliases BASH_ALIASES defines.
func (ps *parser) recordAssign(a *syntax.Assign) {
	name, value, computed, ok := assignParts(a)
	if !ok {
		return
	}
	if i := strings.IndexByte(name, '['); i >= 0 {
		name = name[:i]
	}
	if name == "BASH_ALIASES" && a.Name != nil {
		ps.bashAliases(a)
		return
	}
	if a.Naked && a.Name != nil {
		return // declare -x NAME: no value
	}
	ps.setVar(name, value, computed)
	switch {
	case a.Array != nil:
		for _, e := range a.Array.Elems {
			ps.assigned[name] = append(ps.assigned[name], e.Value)
		}
	case a.Value != nil && a.Name != nil:
		ps.assigned[name] = append(ps.assigned[name], a.Value)
	case computed:
		ps.assigned[name] = append(ps.assigned[name], nil)
	default:
		ps.assigned[name] = append(ps.assigned[name], litWord(value))
	}
}

func litWord(s string) *syntax.Word {
	return &syntax.Word{Parts: []syntax.WordPart{&syntax.SglQuoted{Value: s}}}
}

// declare records the names a declare (local, typeset, export) makes
// associative arrays (-A), integers (-i) or references (-n).
func (ps *parser) declare(d *syntax.DeclClause) {
	var flags string
	for _, a := range d.Args {
		if a.Naked && a.Name == nil && a.Value != nil {
			if v, ok := wordLit(a.Value); ok && strings.HasPrefix(v, "-") {
				flags += v[1:]
				continue
			}
		}
		name, _, _, ok := assignParts(a)
		if !ok {
			continue
		}
		if strings.Contains(flags, "A") {
			ps.assoc[name] = true
		}
		if strings.Contains(flags, "i") {
			ps.intVars[name] = true
		}
	}
}
