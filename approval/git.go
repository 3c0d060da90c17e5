package approval

import (
	"maps"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// git runs commands that its configuration, its environment and some
// of its options name: aliases, pagers, editors, ssh, diff and merge
// drivers, filters, hooks, credential helpers, ext:: URLs, rebase --exec,
// submodule foreach, bisect run. Those a command line gives (git -c K=V,
// GIT_CONFIG_PARAMETERS, GIT_CONFIG_COUNT/KEY_n/VALUE_n, GIT_PAGER=,
// --upload-pack=, ...) are judged as scripts; computed ones, and
// configuration read from a file the line names, are unknown. A
// subcommand that is not one of git's runs an alias or a git-NAME program
// from configuration the line does not show: unknown too.

// gitCommands are git's own commands (git --list-cmds=main and those of
// later versions), which an alias cannot replace, and the common
// git-NAME programs installed beside it.
var gitCommands = []string{
	"add", "am", "annotate", "apply", "archive", "backfill", "bisect", "blame", "branch", "bugreport", "bundle",
	"cat-file", "check-attr", "check-ignore", "check-mailmap", "check-ref-format", "checkout", "checkout-index",
	"cherry", "cherry-pick", "citool", "clean", "clone", "column", "commit", "commit-graph", "commit-tree", "config",
	"count-objects", "credential", "daemon", "describe", "diagnose", "diff", "diff-files", "diff-index", "diff-pairs",
	"diff-tree", "difftool", "fast-export", "fast-import", "fetch", "fetch-pack", "filter-branch", "fmt-merge-msg",
	"for-each-ref", "for-each-repo", "format-patch", "fsck", "fsck-objects", "gc", "get-tar-commit-id", "grep",
	"gui", "hash-object", "help", "hook", "http-backend", "http-fetch", "http-push", "imap-send", "index-pack",
	"init", "init-db", "instaweb", "interpret-trailers", "last-modified", "log", "ls-files", "ls-remote", "ls-tree",
	"mailinfo", "mailsplit", "maintenance", "merge", "merge-base", "merge-file", "merge-index", "merge-octopus",
	"merge-one-file", "merge-ours", "merge-recursive", "merge-recursive-ours", "merge-recursive-theirs",
	"merge-resolve", "merge-subtree", "merge-tree", "mergetool", "mktag", "mktree", "multi-pack-index", "mv",
	"name-rev", "notes", "p4", "pack-objects", "pack-redundant", "pack-refs", "patch-id", "pickaxe", "prune",
	"prune-packed", "pull", "push", "quiltimport", "range-diff", "read-tree", "rebase", "receive-pack", "reflog",
	"refs", "remote", "repack", "replace", "replay", "repo", "request-pull", "rerere", "reset", "restore",
	"rev-list", "rev-parse", "revert", "rm", "send-email", "send-pack", "shell", "shortlog", "show", "show-branch",
	"show-index", "show-ref", "sparse-checkout", "stage", "stash", "status", "stripspace", "submodule", "subtree",
	"svn", "switch", "symbolic-ref", "tag", "unpack-file", "unpack-objects", "update-index", "update-ref",
	"update-server-info", "upload-archive", "upload-pack", "var", "verify-commit", "verify-pack", "verify-tag",
	"version", "whatchanged", "worktree", "write-tree", "cvsimport", "cvsserver", "cvsexportcommit", "archimport",
	// Programs of their own, commonly installed.
	"lfs", "annex", "flow", "crypt", "secret", "secrets", "absorb", "filter-repo", "review", "branchless",
	"machete", "town", "sizer", "imerge", "revise", "cz",
}

// isGitCommand reports whether sub is one of gitCommands, a credential
// helper, a remote helper or an internal helper (NAME--NAME).
func isGitCommand(sub string) bool {
	return slices.Contains(gitCommands, sub) || strings.HasPrefix(sub, "credential-") ||
		strings.HasPrefix(sub, "remote-") || strings.Contains(sub, "--")
}

// gitSetting is one configuration setting a git command line gives.
type gitSetting struct {
	key, value string
	computed   bool   // the value is known only when it runs
	from       string // where it is given: "-c", "GIT_CONFIG_PARAMETERS", ...
}

func parseSetting(kv string, computed bool, from string) gitSetting {
	k, v, eq := strings.Cut(kv, "=")
	if !eq {
		v = "true" // -c core.bare: a boolean
	}
	return gitSetting{key: k, value: v, computed: computed, from: from}
}

// gitKey returns a key's section, subsection and name: section and name
// in lower case, as git compares them.
func gitKey(key string) (section, sub, name string) {
	i, j := strings.IndexByte(key, '.'), strings.LastIndexByte(key, '.')
	if i < 0 {
		return strings.ToLower(key), "", ""
	}
	section, name = strings.ToLower(key[:i]), strings.ToLower(key[j+1:])
	if j > i {
		sub = key[i+1 : j]
	}
	return section, sub, name
}

// git judges what a git command line makes git run besides its
// subcommand, and the subcommand an alias stands for.
func (ps *parser) git(c Command, depth int) {
	var settings []gitSetting
	sub := -1
scan:
	for i := 1; i < len(c.Argv); {
		a := c.Argv[i]
		switch {
		case c.kind(i) != wordLiteral:
			break scan // matching treats a computed word here as any subcommand
		case a == "-c" && i+1 < len(c.Argv):
			settings = append(settings, parseSetting(c.Argv[i+1], c.kind(i+1) != wordLiteral, "-c"))
			i += 2
		case a == "--config-env" && i+1 < len(c.Argv) || strings.HasPrefix(a, "--config-env="):
			kv, ok := strings.CutPrefix(a, "--config-env=")
			if !ok {
				kv = c.Argv[i+1]
				i++
			}
			i++
			settings = append(settings, ps.configEnv(kv)...)
		case slices.Contains(gitValueOptions, a):
			i += 2
		case strings.HasPrefix(a, "-"):
			i++
		default:
			sub = i
			break scan
		}
	}
	settings = append(settings, ps.gitEnv(c)...)
	aliases := ps.gitSettings(c, settings, depth)
	for i, a := range c.Argv {
		if rest, ok := strings.CutPrefix(a, "ext::"); ok && i > 0 {
			if c.kind(i) != wordLiteral {
				ps.unknown(c, "git runs the command of a computed ext:: URL (%s)", a)
				continue
			}
			ps.ext(rest, depth)
		}
	}
	if sub < 0 {
		return
	}
	name := c.Argv[sub]
	if als, ok := aliases[strings.ToLower(name)]; ok {
		rest := c.from(sub + 1)
		for _, al := range als {
			switch {
			case al.computed:
				ps.unknown(c, "git runs the alias %s, whose definition is computed", name)
			case strings.HasPrefix(al.value, "!"):
				ps.script(al.value[1:]+" "+rest.String(), depth+1)
			default:
				argv := append(slices.Clone(c.Argv[:sub]), strings.Fields(al.value)...)
				inner := Command{Argv: append(argv, rest.Argv...), dirs: c.dirs}
				inner.kinds = make([]wordKind, len(argv), len(inner.Argv))
				inner.kinds = append(inner.kinds, rest.kinds...)
				inner.tails = make([]string, len(argv), len(inner.Argv))
				inner.tails = append(inner.tails, rest.tails...)
				ps.add(inner, depth+1)
			}
		}
		return
	}
	if !isGitCommand(name) {
		ps.unknown(c, "git %s is not a git command: an alias or a git-%s program, defined where the line does not show, decides what runs", name, name)
		return
	}
	ps.gitSubcommand(name, c, sub, depth)
}

// configEnv returns the setting of --config-env=KEY=VAR: the values the
// line gives VAR; none when it gives none (the environment's value, not
// the agent's to choose), but for an alias, which is then unknown.
func (ps *parser) configEnv(kv string) []gitSetting {
	k, v, _ := strings.Cut(kv, "=")
	vals := ps.vars[v]
	var out []gitSetting
	for _, x := range vals {
		out = append(out, gitSetting{key: k, value: x.text, computed: x.computed, from: "--config-env"})
	}
	if sec, _, _ := gitKey(k); len(vals) == 0 && sec == "alias" {
		out = append(out, gitSetting{key: k, computed: true, from: "--config-env"})
	}
	return out
}

// gitEnv returns the settings the line gives git through its environment
// (GIT_CONFIG_PARAMETERS, GIT_CONFIG_COUNT with GIT_CONFIG_KEY_n and
// GIT_CONFIG_VALUE_n), in an assignment, export or env anywhere in the
// line; configuration files it points git at are unknown.
func (ps *parser) gitEnv(c Command) []gitSetting {
	var out []gitSetting
	for _, v := range ps.vars["GIT_CONFIG_PARAMETERS"] {
		if v.computed {
			out = append(out, gitSetting{from: "GIT_CONFIG_PARAMETERS=" + v.text})
			continue
		}
		words, ok := shellWords(v.text)
		if !ok {
			out = append(out, gitSetting{from: "GIT_CONFIG_PARAMETERS=" + v.text})
			continue
		}
		for _, w := range words {
			out = append(out, parseSetting(w, false, "GIT_CONFIG_PARAMETERS"))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(ps.vars)) {
		n, ok := strings.CutPrefix(name, "GIT_CONFIG_KEY_")
		if !ok {
			continue
		}
		for _, k := range ps.vars[name] {
			if k.computed {
				out = append(out, gitSetting{from: name + "=" + k.text})
				continue
			}
			values := ps.vars["GIT_CONFIG_VALUE_"+n]
			if len(values) == 0 {
				values = []varValue{{text: "true"}}
			}
			for _, v := range values {
				out = append(out, gitSetting{key: k.text, value: v.text, computed: v.computed, from: name})
			}
		}
	}
	for _, name := range []string{"GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG", "HOME", "XDG_CONFIG_HOME"} {
		for _, v := range ps.vars[name] {
			if v.text != "/dev/null" && v.text != "" || v.computed {
				ps.unknown(c, "git reads configuration from a file %s=%s names, which cannot be read in advance", name, v.text)
			}
		}
	}
	return out
}

// shellWords splits text into words as the shell does, quotes removed.
func shellWords(text string) ([]string, bool) {
	f, err := syntax.NewParser().Parse(strings.NewReader("x "+text), "")
	if err != nil || len(f.Stmts) != 1 {
		return nil, false
	}
	call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok {
		return nil, false
	}
	var out []string
	for _, w := range call.Args[1:] {
		v, ok := wordLit(w)
		if !ok {
			return nil, false
		}
		out = append(out, v)
	}
	return out, true
}

// gitCommandKeys are the settings whose value is a command git runs with
// sh -c: section.name, or section.*.name for any subsection.
var gitCommandKeys = []string{
	"core.pager", "core.editor", "sequence.editor", "core.sshcommand", "core.alternaterefscommand", "core.askpass",
	"diff.external", "diff.*.command", "diff.*.textconv", "filter.*.clean", "filter.*.smudge", "filter.*.process",
	"merge.*.driver", "gpg.program", "gpg.*.program", "gpg.ssh.defaultkeycommand", "uploadpack.packobjectshook",
	"remote.*.uploadpack", "remote.*.receivepack", "interactive.difffilter", "difftool.*.cmd", "mergetool.*.cmd",
	"browser.*.cmd", "man.*.cmd", "sendemail.tocmd", "sendemail.cccmd", "sendemail.headercmd",
	"sendemail.sendmailcmd", "trailer.*.command", "trailer.*.cmd", "core.fsmonitor", "pager.*",
	"sendemail.*.tocmd", "sendemail.*.cccmd", "sendemail.*.headercmd", "sendemail.*.sendmailcmd",
	// git archive's filter for a format, git imap-send's tunnel, git
	// instaweb's web server, config-based hooks, git gui's tools.
	"tar.*.command", "imap.tunnel", "instaweb.httpd", "hook.*.command", "guitool.*.cmd",
	// The program of a tool, by path.
	"browser.*.path", "difftool.*.path", "mergetool.*.path", "man.*.path",
}

// gitSettings judges the settings of a git command line and returns the
// aliases they define, by lower-case name.
func (ps *parser) gitSettings(c Command, settings []gitSetting, depth int) map[string][]gitSetting {
	aliases := map[string][]gitSetting{}
	for _, s := range settings {
		if s.key == "" {
			ps.unknown(c, "git takes configuration from %s, which is computed", s.from)
			continue
		}
		section, sub, name := gitKey(s.key)
		wild := section + ".*." + name
		if sub == "" {
			wild = section + "." + name
		}
		v := s.value
		switch {
		case section == "alias":
			if _, al, ok := strings.Cut(s.key, "."); ok {
				al = strings.ToLower(al)
				aliases[al] = append(aliases[al], s)
			}
		case section == "include" && name == "path" || section == "includeif" && name == "path":
			ps.unknown(c, "git reads configuration from the file %s (%s), which cannot be read in advance", v, s.from)
		case section == "core" && name == "hookspath" || section == "init" && name == "templatedir":
			if s.computed || v != "/dev/null" && v != "" {
				ps.unknown(c, "git runs hooks from the directory %s (%s.%s), which cannot be read in advance", v, section, name)
			}
		case section == "url" && (name == "insteadof" || name == "pushinsteadof") && strings.HasPrefix(sub, "ext::"):
			ps.ext(sub[len("ext::"):], depth)
		case section == "remote" && (name == "url" || name == "pushurl") && strings.HasPrefix(v, "ext::"):
			ps.ext(v[len("ext::"):], depth)
		case section == "submodule" && name == "update":
			if s.computed {
				ps.unknown(c, "git submodule update runs a computed command (%s)", v)
			} else if cmd, ok := strings.CutPrefix(v, "!"); ok {
				ps.code(cmd, "git", depth)
			}
		case section == "credential" && name == "helper":
			switch {
			case s.computed:
				ps.unknown(c, "git runs a computed credential helper (%s)", v)
			case v == "":
			case strings.HasPrefix(v, "!"):
				ps.code(v[1:], "git", depth)
			case strings.Contains(strings.Fields(v)[0], "/"):
				ps.code(v, "git", depth)
			default:
				ps.code("git credential-"+v, "git", depth)
			}
		case section == "sendemail" && name == "smtpserver":
			// An absolute path is a sendmail-like program.
			if s.computed || strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~") {
				ps.gitCode(c, s, v, depth)
			}
		case section == "core" && name == "gitproxy":
			cmd, _, _ := strings.Cut(v, " for ")
			ps.gitCode(c, s, cmd, depth)
		case slices.Contains(gitCommandKeys, wild) || slices.Contains(gitCommandKeys, section+".*") ||
			slices.Contains(gitCommandKeys, section+"."+strings.ToLower(sub)+"."+name):
			if (section == "pager" || name == "fsmonitor") && isGitBool(v) && !s.computed {
				continue
			}
			ps.gitCode(c, s, v, depth)
		}
	}
	return aliases
}

// gitCode judges the command a setting holds.
func (ps *parser) gitCode(c Command, s gitSetting, cmd string, depth int) {
	if s.computed {
		ps.unknown(c, "git runs the command %s=%s (%s), which is computed", s.key, cmd, s.from)
		return
	}
	if strings.TrimSpace(cmd) != "" {
		ps.code(cmd, "git", depth)
	}
}

func isGitBool(v string) bool {
	switch strings.ToLower(v) {
	case "true", "false", "yes", "no", "on", "off", "1", "0", "":
		return true
	}
	return false
}

// ext judges the command of an ext:: URL (git remote-ext): words split at
// spaces, "% " a space and "%%" a percent sign; git fills in %s, %S, %G
// and %V.
func (ps *parser) ext(s string, depth int) {
	var c Command
	var b strings.Builder
	kind, started := wordLiteral, false
	flush := func() {
		if started {
			c.Argv = append(c.Argv, b.String())
			c.kinds = append(c.kinds, kind)
			c.tails = append(c.tails, "")
		}
		b.Reset()
		kind, started = wordLiteral, false
	}
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == ' ':
			flush()
			continue
		case s[i] == '%' && i+1 < len(s):
			i++
			switch s[i] {
			case ' ', '%':
				b.WriteByte(s[i])
			default:
				b.WriteString("%" + s[i:i+1])
				kind = wordOne
			}
		default:
			b.WriteByte(s[i])
		}
		started = true
	}
	flush()
	ps.add(c, depth+1)
}

// gitOption returns the values of a subcommand's option among c's words
// from word i: --long=V, --long V, -xV and -x V (x one of short).
func gitOption(c Command, i int, short string, longs ...string) []word {
	var out []word
	next := func(j int) {
		if j < len(c.Argv) {
			out = append(out, word{text: c.Argv[j], kind: c.kind(j)})
		}
	}
	for ; i < len(c.Argv); i++ {
		a := c.Argv[i]
		if c.kind(i) > wordEnv {
			continue
		}
		if a == "--" {
			break
		}
		for _, l := range longs {
			if v, ok := strings.CutPrefix(a, "--"+l+"="); ok {
				out = append(out, word{text: v, kind: c.kind(i)})
			} else if a == "--"+l {
				next(i + 1)
				i++
			}
		}
		if len(a) < 2 || a[0] != '-' || a[1] == '-' {
			continue
		}
		for j := 1; j < len(a); j++ {
			if strings.IndexByte(short, a[j]) >= 0 {
				if j < len(a)-1 {
					out = append(out, word{text: a[j+1:], kind: c.kind(i)})
				} else {
					next(i + 1)
					i++
				}
				break
			}
		}
	}
	return out
}

// gitSubcommand judges the options of a subcommand that run commands.
func (ps *parser) gitSubcommand(sub string, c Command, at, depth int) {
	from := at + 1
	code := func(what string, ws []word) {
		for _, w := range ws {
			if w.kind > wordEnv {
				ps.unknown(c, "git %s runs a computed command (%s)", what, w.text)
			} else if strings.TrimSpace(w.text) != "" {
				ps.code(w.text, "git "+sub, depth)
			}
		}
	}
	switch sub {
	case "fetch", "pull", "fetch-pack", "archive", "ls-remote", "clone":
		short := ""
		if sub == "clone" || sub == "ls-remote" {
			short = "u"
		}
		code(sub+" --upload-pack", gitOption(c, from, short, "upload-pack", "exec"))
	case "push", "send-pack":
		code(sub+" --receive-pack", gitOption(c, from, "", "receive-pack", "exec"))
	case "rebase":
		code("rebase --exec", gitOption(c, from, "x", "exec"))
	case "difftool":
		code("difftool --extcmd", gitOption(c, from, "x", "extcmd"))
	case "filter-branch":
		code("filter-branch", gitOption(c, from, "", "env-filter", "tree-filter", "index-filter", "parent-filter",
			"msg-filter", "commit-filter", "tag-name-filter", "setup"))
	case "daemon":
		code("daemon --access-hook", gitOption(c, from, "", "access-hook"))
	case "instaweb":
		code("instaweb --httpd", gitOption(c, from, "d", "httpd"))
	case "send-email":
		code("send-email", gitOption(c, from, "", "to-cmd", "cc-cmd", "header-cmd", "sendmail-cmd"))
	case "grep":
		for i := from; i < len(c.Argv) && c.Argv[i] != "--"; i++ {
			a := c.Argv[i]
			if v, ok := strings.CutPrefix(a, "--open-files-in-pager="); ok {
				code("grep -O", []word{{text: v, kind: c.kind(i)}})
			} else if v, ok := strings.CutPrefix(a, "-O"); ok && v != "" {
				code("grep -O", []word{{text: v, kind: c.kind(i)}})
			}
		}
	case "submodule":
		i := from
		for i < len(c.Argv) && strings.HasPrefix(c.Argv[i], "-") {
			i++
		}
		if i >= len(c.Argv) || c.Argv[i] != "foreach" {
			return
		}
		for i++; i < len(c.Argv) && strings.HasPrefix(c.Argv[i], "-"); i++ {
		}
		if rest := c.from(i); len(rest.Argv) > 0 {
			ps.code(strings.Join(rest.Argv, " "), "git submodule foreach", depth) // sh -c "ARGS..."
		}
	case "bisect":
		if from < len(c.Argv) && c.Argv[from] == "run" {
			ps.gitRun(c.from(from+1), "git bisect run", depth)
		}
	case "remote-ext":
		if from+1 < len(c.Argv) {
			if c.kind(from+1) > wordEnv {
				ps.unknown(c, "git remote-ext runs a computed command (%s)", c.Argv[from+1])
			} else {
				ps.ext(c.Argv[from+1], depth)
			}
		}
	case "init":
		ps.gitTemplate(c, from)
	}
	if sub == "clone" {
		ps.gitTemplate(c, from)
		var settings []gitSetting
		for _, w := range gitOption(c, from, "c", "config") {
			settings = append(settings, parseSetting(w.text, w.kind > wordEnv, "clone -c"))
		}
		ps.gitSettings(c, settings, depth)
	}
}

// gitTemplate: init and clone copy the hooks of a template directory,
// which run later.
func (ps *parser) gitTemplate(c Command, from int) {
	dirs := gitOption(c, from, "", "template")
	for _, v := range ps.vars["GIT_TEMPLATE_DIR"] {
		dirs = append(dirs, word{text: v.text})
	}
	for _, d := range dirs {
		if d.text != "" {
			ps.unknown(c, "git copies the hooks of the template directory %s, which run later and cannot be read in advance", d.text)
		}
	}
}

// gitRun judges the command words git runs as a program, or with sh -c
// when it is one word with blanks or the shell's metacharacters (bisect
// run).
func (ps *parser) gitRun(rest Command, what string, depth int) {
	switch {
	case len(rest.Argv) == 0:
	case len(rest.Argv) == 1 && rest.kind(0) > wordEnv:
		ps.unknown(rest, "%s runs a computed command (%s)", what, rest.Argv[0])
	case len(rest.Argv) == 1 && strings.ContainsAny(rest.Argv[0], " \t\n|&;<>()$`\\\"'*?[#~=%"):
		ps.code(rest.Argv[0], what, depth)
	default:
		ps.add(rest, depth+1)
	}
}
