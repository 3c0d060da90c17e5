package sandbox

import (
	"io"
	"os"
	"strings"
)

// gitEntry is one variable of a git configuration file: its key with the
// section and the name lowercased ("core.hookspath", "alias.st",
// "filter.lfs.clean"; a subsection keeps its case) and its value.
type gitEntry struct {
	key, value string
}

// maxGitConfig bounds what is read of one configuration file.
const maxGitConfig = 8 << 20

// tooLargeKey is the entry that stands for what a configuration file
// holds past maxGitConfig: git reads the whole file, and what it holds
// there may make git run a program (red team 18 put core.fsmonitor past
// the 1 MiB read then); it is always noteworthy.
const tooLargeKey = "unified-exec.unread"

// readGitConfig parses the configuration file at path (its first
// maxGitConfig bytes, and tooLargeKey for the rest); nil when it cannot
// be read.
func readGitConfig(path string) []gitEntry {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxGitConfig+1))
	if err != nil {
		return nil
	}
	if len(b) > maxGitConfig {
		entries := parseGitConfig(string(b[:maxGitConfig]))
		return append(entries, gitEntry{tooLargeKey, "what this file holds past 8 MiB was not read"})
	}
	return parseGitConfig(string(b))
}

// parseGitConfig reads git's configuration syntax leniently: section
// headers ([core], [remote "origin"], the older [branch.main]),
// variables with or without a value, double quotes, backslash escapes and
// continuation lines, and # or ; comments. What it cannot read is
// skipped, as git itself would refuse the file.
func parseGitConfig(text string) []gitEntry {
	var out []gitEntry
	section := ""
	for i := 0; i < len(text); {
		// Skip blank space and comments between items.
		c := text[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			i++
			continue
		case c == '#' || c == ';':
			for i < len(text) && text[i] != '\n' {
				i++
			}
			continue
		case c == '[':
			end := strings.IndexByte(text[i:], ']')
			if end < 0 {
				return out
			}
			section = parseSection(text[i+1 : i+end])
			i += end + 1
			continue
		}
		// A variable: a name, then optionally "= value".
		start := i
		for i < len(text) && (isAlnum(text[i]) || text[i] == '-') {
			i++
		}
		name := strings.ToLower(text[start:i])
		if name == "" {
			// Not a name: skip the line.
			for i < len(text) && text[i] != '\n' {
				i++
			}
			continue
		}
		for i < len(text) && (text[i] == ' ' || text[i] == '\t') {
			i++
		}
		value := "true"
		if i < len(text) && text[i] == '=' {
			i++
			value, i = parseValue(text, i)
		} else {
			for i < len(text) && text[i] != '\n' {
				i++
			}
		}
		if section != "" {
			out = append(out, gitEntry{key: section + "." + name, value: value})
		}
	}
	return out
}

// parseSection turns a header's inside into "section" or
// "section.subsection"; "" for a header with no section name (git
// refuses ["x"], and no key of git's starts with a dot).
func parseSection(h string) string {
	h = strings.TrimSpace(h)
	if h == "" || h[0] == '.' || h[0] == '"' {
		return ""
	}
	if q := strings.IndexByte(h, '"'); q >= 0 {
		name := strings.ToLower(strings.TrimSpace(h[:q]))
		var sub strings.Builder
		for j := q + 1; j < len(h); j++ {
			if h[j] == '\\' && j+1 < len(h) {
				j++
				sub.WriteByte(h[j])
				continue
			}
			if h[j] == '"' {
				break
			}
			sub.WriteByte(h[j])
		}
		return name + "." + sub.String()
	}
	// [section.subsection] is the older spelling, lowercased whole.
	return strings.ToLower(h)
}

// parseValue reads a value from text[i:] to the end of its line (or of
// its continuation lines) and returns it with the index after it.
func parseValue(text string, i int) (string, int) {
	var b strings.Builder
	quoted := false
	pending := "" // blank space kept only if more of the value follows
	for i < len(text) {
		c := text[i]
		switch {
		case c == '\n':
			return b.String(), i + 1
		case !quoted && (c == '#' || c == ';'):
			for i < len(text) && text[i] != '\n' {
				i++
			}
			return b.String(), i
		case c == '"':
			quoted = !quoted
			b.WriteString(pending)
			pending = ""
		case c == '\\' && i+1 < len(text):
			i++
			b.WriteString(pending)
			pending = ""
			switch text[i] {
			case '\n':
				// a continuation line
			case '\r':
				if i+1 < len(text) && text[i+1] == '\n' {
					i++
				}
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'b':
				s := b.String()
				if s != "" {
					b.Reset()
					b.WriteString(s[:len(s)-1])
				}
			default:
				b.WriteByte(text[i])
			}
		case !quoted && (c == ' ' || c == '\t' || c == '\r'):
			if b.Len() > 0 {
				pending += string(c)
			}
		default:
			b.WriteString(pending)
			pending = ""
			b.WriteByte(c)
		}
		i++
	}
	return b.String(), i
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// splitKey splits "filter.lfs.clean" into section, subsection and name.
func splitKey(key string) (section, sub, name string) {
	first := strings.IndexByte(key, '.')
	last := strings.LastIndexByte(key, '.')
	if first < 0 {
		return key, "", ""
	}
	section, name = key[:first], key[last+1:]
	if last > first {
		sub = key[first+1 : last]
	}
	return section, sub, name
}

// noteworthy reports whether a configuration entry is to be reported: every
// one but those known to make git run nothing of the repository's (see
// harmlessGitKey). Listing the settings that run a program fell behind
// git (red team 21 ran programs through submodule.<name>.update,
// ext:: remotes, gpg.ssh.defaultKeyCommand and
// core.alternateRefsCommand, none listed), and git adds more: what is not
// known harmless is told.
func noteworthy(key, value string) bool {
	return key == tooLargeKey || !harmlessGitKey(key, value)
}

// harmlessGitKey reports whether key = value is one of the settings git
// itself writes in everyday work (init, clone, remote, branch, submodule,
// sparse-checkout, maintenance) or people set for themselves, and that
// make git run no program, read no file as configuration, and send
// nothing elsewhere. Keys are as parseGitConfig gives them: the section
// and the name lower case, the subsection as written.
func harmlessGitKey(key, value string) bool {
	section, sub, name := splitKey(key)
	if sub == "" {
		switch section + "." + name {
		case "core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates",
			"core.ignorecase", "core.precomposeunicode", "core.symlinks", "core.autocrlf", "core.safecrlf",
			"core.eol", "core.quotepath", "core.abbrev", "core.untrackedcache", "core.splitindex",
			"core.commitgraph", "core.multipackindex", "core.preloadindex", "core.checkstat",
			"core.trustctime", "core.sparsecheckout", "core.sparsecheckoutcone", "core.fscache",
			"core.longpaths", "core.compression", "core.loosecompression", "core.bigfilethreshold",
			"core.whitespace", "core.fsmonitorhookversion",
			"extensions.objectformat", "extensions.worktreeconfig", "extensions.partialclone",
			"user.name", "user.email", "user.signingkey", "user.useconfigonly",
			"author.name", "author.email", "committer.name", "committer.email",
			"init.defaultbranch", "pull.rebase", "pull.ff",
			"push.default", "push.autosetupremote", "push.followtags", "push.recursesubmodules",
			"fetch.prune", "fetch.prunetags", "fetch.recursesubmodules", "fetch.writecommitgraph", "fetch.parallel",
			"submodule.recurse", "submodule.active", "submodule.fetchjobs", "submodule.propagatebranches",
			"index.version", "index.sparse", "index.skiphash", "feature.manyfiles",
			"splitindex.maxpercentchange", "splitindex.sharedindexexpire",
			"rerere.enabled", "rerere.autoupdate", "status.showuntrackedfiles", "status.submodulesummary",
			"diff.renames", "diff.algorithm", "diff.submodule", "diff.colormoved", "diff.noprefix",
			"merge.conflictstyle", "merge.ff", "merge.renamelimit", "merge.log",
			"rebase.autostash", "rebase.autosquash", "rebase.updaterefs",
			"commit.verbose", "commit.cleanup", "tag.sort", "worktree.guessremote",
			"lfs.repositoryformatversion", "color.ui", "i18n.commitencoding", "i18n.logoutputencoding":
			return true
		case "core.fsmonitor":
			return isGitBool(value) // the built-in daemon: git itself
		}
		switch section {
		case "gc", "maintenance", "advice", "color":
			return true // git's own housekeeping, and how it shows things
		}
		return false
	}
	switch section + "." + name {
	case "branch.remote", "branch.merge", "branch.rebase", "branch.description", "branch.pushremote",
		"remote.fetch", "remote.push", "remote.tagopt", "remote.prune", "remote.prunetags", "remote.mirror",
		"remote.skipfetchall", "remote.skipdefaultupdate", "remote.promisor", "remote.partialclonefilter",
		"submodule.active", "submodule.branch", "submodule.fetchrecursesubmodules", "submodule.ignore",
		"submodule.shallow", "maintenance.enabled", "maintenance.schedule", "color.branch", "color.diff",
		"color.status", "color.decorate", "color.grep", "color.interactive":
		return true
	case "remote.url", "remote.pushurl", "submodule.url":
		// A transport's name before "::" runs git-remote-<name> (ext::
		// runs the rest as a command line).
		return !strings.Contains(value, "::")
	case "submodule.update":
		switch strings.ToLower(strings.TrimSpace(value)) {
		case "checkout", "rebase", "merge", "none":
			return true
		}
	}
	return false
}

// isGitBool reports whether v is one of git's boolean spellings.
func isGitBool(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "true", "false", "yes", "no", "on", "off", "1", "0":
		return true
	}
	return false
}
