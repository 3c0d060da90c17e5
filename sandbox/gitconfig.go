package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
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

// configBudget bounds what one survey (a plan, a look after a command)
// parses of git's configuration, whatever the number of files and their
// names: a fresh-eyes review made an 8 MiB file of harmless entries cost
// 5 s and 296 MB for every command, 32 hard links to it 152 s and 9 GB,
// and a file included a thousand times 49 s. Past it a file is left
// unread, in part or whole, and told (see unread).
type configBudget struct {
	bytes, entries int
	// reservedFiles counts the configs read from the reserve, named in
	// reservedPaths.
	reservedFiles int
	reservedPaths map[string]bool
	// owned are the repositories' own configs (see own).
	owned map[string]bool
	// unread are the files left unread, in part or whole, past the
	// budget or past maxGitConfig, each once.
	unread []string
}

// maxSurveyConfigBytes and maxSurveyConfigEntries bound what one survey
// parses of git's configuration files, rereadings of an included file
// counted by its entries (a large repository's configuration, a branch
// and a remote for each of thousands, holds some 10 000 entries).
const (
	maxSurveyConfigBytes   = 16 << 20
	maxSurveyConfigEntries = 100_000
)

// reserved reads a repository's own small config (its common directory's
// config, as the survey and the submodule search name it: see own; never
// an include, whatever its name: red team 10 spent the reserve with 1024
// included files named config) of at most maxReservedConfig bytes whole, charging the budget nothing,
// for the first maxReservedConfigs of them: a repository a command made,
// surveyed first, cannot spend the budget so as to leave the host's
// repositories' configurations unread (red team 9: the host's git remote
// add made projA's the newest, surveyed last, after the command's
// 200 000 entries). ok is false for any other file, left to the budget.
func (b *configBudget) reserved(f *os.File, path string) (out []gitEntry, ok bool) {
	if !b.owned[path] || b.reservedFiles >= maxReservedConfigs {
		return nil, false
	}
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() || info.Size() > maxReservedConfig {
		return nil, false
	}
	text, err := io.ReadAll(io.LimitReader(f, maxReservedConfig+1))
	if err != nil || len(text) > maxReservedConfig {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return []gitEntry{{tooLargeKey, "this file could not be read again: " + err.Error()}}, true
		}
		return nil, false
	}
	b.reservedFiles++
	if b.reservedPaths == nil {
		b.reservedPaths = map[string]bool{}
	}
	b.reservedPaths[path] = true
	return parseGitConfig(string(text)), true
}

// own names path as a repository's own config, which the reserve may
// read (see reserved). Nil-safe.
func (b *configBudget) own(path string) {
	if b == nil {
		return
	}
	if b.owned == nil {
		b.owned = map[string]bool{}
	}
	b.owned[path] = true
}

// maxReservedConfig and maxReservedConfigs bound the reserve (see
// configBudget.reserved): 16 MiB in all, beside the budget's own.
const (
	maxReservedConfig  = 16 << 10
	maxReservedConfigs = 1024
)

// left is what the budget lets the next file be read of.
func (b *configBudget) left() (bytes, entries int) {
	return min(maxGitConfig, maxSurveyConfigBytes-b.bytes), maxSurveyConfigEntries - b.entries
}

// spend charges n entries walked again (an included file's, read
// before); false, charging nothing, when fewer are left.
func (b *configBudget) spend(n int) bool {
	if b.entries+n > maxSurveyConfigEntries {
		return false
	}
	b.entries += n
	return true
}

// walkAgain charges the entries of path where the walker (the survey, or
// the search of the indexes' submodules) walked it before in this survey
// (a file read again for another include, worktree or gitdir: a
// fresh-eyes review walked 100 000 entries once for each of a thousand
// worktrees); false, the file recorded as unread, when too few are left.
// A walker's first walk of a file is charged when the file is parsed (see
// readGitConfig).
func (f *fence) walkAgain(walker, path string) bool {
	if f == nil {
		return true
	}
	if f.walked == nil {
		f.walked = map[string]bool{}
	}
	if k := walker + "\x00" + path; !f.walked[k] {
		f.walked[k] = true
		return true
	}
	if f.config.spend(len(f.configs[path])) {
		return true
	}
	f.config.leftUnread(path)
	return false
}

// leftUnread records that path was not read whole.
func (b *configBudget) leftUnread(path string) {
	if !slices.Contains(b.unread, path) {
		b.unread = append(b.unread, path)
	}
}

// unreadKey starts the item of a configuration file not read whole: a
// bound, told after every command while it lasts (see Unchecked), one
// item a file, so that a file a later command makes is told as well.
const unreadKey = "bound configuration "

// unreadWhy is what an unreadKey item says.
const unreadWhy = "git's configuration here was not read whole (this check reads at most 8 MiB of a file, and 16 MiB or 100 000 entries of all the files it reads for one command): what git would take from the rest — a hooks folder, a program to run — is not checked or told (read the file before running git there)"

// readGitConfig parses the configuration file at path, as much of it as
// maxGitConfig and the fence's budget let be read, and tooLargeKey for the
// rest (the file recorded as unread); nil when it cannot be read. With a
// fence, each file is parsed once a survey, whoever asks (the survey, and
// its search for the submodules an index records).
func readGitConfig(fc *fence, path string) []gitEntry {
	if fc == nil {
		return parseConfigFile(nil, path)
	}
	if e, ok := fc.configs[path]; ok {
		return e
	}
	if fc.configs == nil {
		fc.configs = map[string][]gitEntry{}
	}
	e := parseConfigFile(fc, path)
	fc.configs[path] = e
	return e
}

func parseConfigFile(fc *fence, path string) []gitEntry {
	// Read each time, not kept by the file's status: a write through a
	// shared mapping to a page already dirty moves no change time (red
	// team 26 had a survey keep a harmless reading of a config made
	// harmful so).
	f, err := fc.open(path)
	if unchecked(err) {
		// git reads it (and waits on a FIFO, or reads what a process
		// writes, or another file than this one): what it finds is not
		// known.
		var pe *os.PathError
		why := err.Error()
		if errors.As(err, &pe) {
			why = pe.Err.Error()
		}
		return []gitEntry{{tooLargeKey, "it is " + why}}
	}
	if err != nil {
		return nil
	}
	defer f.Close()
	budget := fc.budget()
	if out, ok := budget.reserved(f, path); ok {
		return out
	}
	bytes, entries := budget.left()
	if bytes <= 0 || entries <= 0 {
		budget.leftUnread(path)
		return []gitEntry{{tooLargeKey, "this file was not read: the check's bound on what it reads of git's configuration for one command was spent before it"}}
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(bytes)+1))
	if err != nil {
		return nil
	}
	cut := len(b) > bytes
	if cut {
		b = b[:bytes]
	}
	budget.bytes += len(b)
	out, more := parseGitConfigMax(string(b), entries)
	budget.entries += len(out)
	if cut || more {
		budget.leftUnread(path)
		return append(out, gitEntry{tooLargeKey, fmt.Sprintf("what this file holds past its first %d bytes and %d entries was not read", len(b), len(out))})
	}
	return out
}

// parseGitConfig reads git's configuration syntax as git's own parser
// (config.c) reads it: a byte order mark at the start skipped; section
// headers ([core], [remote "origin"], the older [branch.main], a variable
// after one on the same line); variables with or without a value; double
// quotes; the escapes \n, \t, \b (a backspace byte, not an erasure: red
// team 22 made "1;sh evil.sh #\b…\b" read as the boolean 1), \\ and \";
// continuation lines; # and ; comments; every other blank (git's isspace)
// of a value outside quotes one space, none at its ends; a key and a value
// end at a NUL, as git's C strings do. Where git refuses
// the file (a line it cannot read, an unknown escape, a quote left open),
// what was read is returned with unparsedKey, which is noteworthy: what
// git makes of it is never guessed (red team 22 hid "[core] fsmonitor"
// behind a byte order mark the skipped line swallowed).
func parseGitConfig(text string) []gitEntry {
	out, _ := parseGitConfigMax(text, -1)
	return out
}

// parseGitConfigMax is parseGitConfig reading at most max entries (any
// number where max < 0); more says there were more.
func parseGitConfigMax(text string, max int) (out []gitEntry, more bool) {
	r := configReader{s: text}
	if strings.HasPrefix(text, "\xef\xbb\xbf") {
		r.i = 3
	}
	section := ""
	refused := func() ([]gitEntry, bool) {
		return append(out, gitEntry{unparsedKey, "git's reading of this file may differ from the survey's (git may refuse it)"}), false
	}
	comment := false
	for {
		c, eof := r.next()
		switch {
		case c == '\n':
			if eof {
				return out, false
			}
			comment = false
			continue
		case comment || isSpace(c):
			continue
		case c == '#' || c == ';':
			comment = true
			continue
		case c == '[':
			h, ok := r.header()
			if !ok {
				return refused()
			}
			section = h
			continue
		case !isAlpha(c):
			return refused()
		}
		name, value, ok := r.variable(c)
		if !ok || section == "" {
			return refused()
		}
		// git keeps keys and values as C strings: a NUL (in a
		// subsection, or a value) ends them (red team 23 made
		// [remote "origin.uploadpack\0"] fetch = X git's
		// remote.origin.uploadpack).
		key := section + "." + name
		if i := strings.IndexByte(key, 0); i >= 0 {
			key = key[:i]
		}
		if i := strings.IndexByte(value, 0); i >= 0 {
			value = value[:i]
		}
		if len(out) == max {
			return out, true
		}
		out = append(out, gitEntry{key: key, value: value})
	}
}

// unparsedKey is the entry that stands for what parseGitConfig could not
// read as git does (see there); it is always noteworthy.
const unparsedKey = "unified-exec.unparsed"

// configReader reads a configuration file's text as git's get_next_char
// does: a CR before a LF is dropped, and the end reads as a LF.
type configReader struct {
	s string
	i int
}

func (r *configReader) next() (c byte, eof bool) {
	if r.i >= len(r.s) {
		return '\n', true
	}
	c = r.s[r.i]
	r.i++
	if c == '\r' && r.i < len(r.s) && r.s[r.i] == '\n' {
		r.i++
		c = '\n'
	}
	return c, false
}

// header reads a section header after its "[": "section" (lower case;
// the older [section.sub] is lower case whole) or "section.sub" for
// [section "sub"] (the subsection as written); ok is false where git
// refuses it, and where the section starts with a dot ([.x], [. "y"]):
// git reads those, but they name no setting of git's, and a key that
// starts with a dot is refused here (and so noteworthy) rather than kept
// as one no rule of the survey's expects.
func (r *configReader) header() (string, bool) {
	var name strings.Builder
	for {
		c, eof := r.next()
		switch {
		case eof:
			return "", false
		case c == ']':
			h := name.String()
			return h, h != "" && h[0] != '.'

		case isSpace(c):
			return r.subsection(&name, c)
		case !isAlnum(c) && c != '-' && c != '.':
			return "", false
		}
		name.WriteByte(lower(c))
	}
}

// subsection reads the rest of [section "sub"] after the blank c.
func (r *configReader) subsection(name *strings.Builder, c byte) (string, bool) {
	for isSpace(c) {
		if c == '\n' {
			return "", false
		}
		c, _ = r.next()
	}
	if c != '"' || name.Len() == 0 || name.String()[0] == '.' {
		return "", false
	}
	name.WriteByte('.')
	for {
		c, _ = r.next()
		if c == '\n' {
			return "", false
		}
		if c == '"' {
			break
		}
		if c == '\\' {
			if c, _ = r.next(); c == '\n' {
				return "", false
			}
		}
		name.WriteByte(c)
	}
	c, _ = r.next()
	return name.String(), c == ']'
}

// variable reads a variable whose name starts with first: its name (lower
// case) and its value ("true" for one with none, as git takes it).
func (r *configReader) variable(first byte) (name, value string, ok bool) {
	var b strings.Builder
	b.WriteByte(lower(first))
	c, eof := r.next()
	for !eof && (isAlnum(c) || c == '-') {
		b.WriteByte(lower(c))
		c, eof = r.next()
	}
	for c == ' ' || c == '\t' {
		c, _ = r.next()
	}
	if c == '\n' {
		return b.String(), "true", true
	}
	if c != '=' {
		return "", "", false
	}
	value, ok = r.value()
	return b.String(), value, ok
}

// value reads a value after its "=", to the end of its line (or of its
// continuation lines), as git's parse_value does.
func (r *configReader) value() (string, bool) {
	var b strings.Builder
	quoted, comment, spaces := false, false, 0
	for {
		c, _ := r.next()
		switch {
		case c == '\n':
			return b.String(), !quoted
		case comment:
			continue
		case isSpace(c) && !quoted:
			if b.Len() > 0 {
				spaces++
			}
			continue
		case !quoted && (c == '#' || c == ';'):
			comment = true
			continue
		}
		for ; spaces > 0; spaces-- {
			b.WriteByte(' ')
		}
		switch c {
		case '\\':
			c, _ = r.next()
			switch c {
			case '\n':
				continue // a continuation line
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'n':
				c = '\n'
			case '\\', '"':
			default:
				return "", false // git refuses an unknown escape
			}
			b.WriteByte(c)
		case '"':
			quoted = !quoted
		default:
			b.WriteByte(c)
		}
	}
}

// isSpace is git's own isspace (git-compat-util.h): space, tab, CR and
// LF only — not C's, which takes \v and \f too (red team 23: "\vtrue"
// read as the boolean true is a program's name to git).
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
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
	return key == tooLargeKey || key == unparsedKey || !harmlessGitKey(key, value)
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
			"extensions.objectformat", "extensions.worktreeconfig",
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
			"lfs.repositoryformatversion", "i18n.commitencoding", "i18n.logoutputencoding",
			"gc.auto", "gc.autodetach", "gc.autopacklimit", "gc.pruneexpire", "gc.reflogexpire",
			"gc.reflogexpireunreachable", "gc.worktreepruneexpire", "gc.writecommitgraph",
			"gc.bigpackthreshold", "gc.packrefs", "gc.cruftpacks", "maintenance.auto", "maintenance.strategy", "maintenance.repo",
			"color.ui", "color.branch", "color.diff", "color.status", "color.decorate", "color.grep",
			"color.interactive", "color.pager", "color.showbranch", "color.push", "color.remote", "color.advice":
			return true
		case "core.fsmonitor":
			return isGitBool(value) // the built-in daemon: git itself
		case "extensions.partialclone":
			return false // a remote's name (see remoteNamed), or a URL
		}
		// Hints on and off; git adds more, all booleans.
		return section == "advice" && isGitBool(value)
	}
	switch section + "." + name {
	case "branch.merge", "branch.rebase", "branch.description",
		"remote.fetch", "remote.push", "remote.tagopt", "remote.prune", "remote.prunetags", "remote.mirror",
		"remote.skipfetchall", "remote.skipdefaultupdate", "remote.promisor", "remote.partialclonefilter",
		"submodule.active", "submodule.branch", "submodule.fetchrecursesubmodules", "submodule.ignore",
		"submodule.shallow", "maintenance.enabled", "maintenance.schedule":
		return true
	case "submodule.url":
		return plainRemote(value) // cloned from: the source's hooks do not run
	case "remote.url", "remote.pushurl":
		// git push to a repository on this machine runs its
		// pre-receive, update and post-receive hooks (red team 23 pointed
		// one at a bare repository in node_modules).
		return plainRemote(value) && !localURL(value)
	case "branch.remote", "branch.pushremote":
		// A remote's name, or a URL: a name no remote has is taken for a
		// path (red team 24 named a link to a bare repository in
		// /dev/shm, whose pre-receive a push ran). The survey takes a
		// name for harmless where the same file, or the user's own
		// configuration, gives that remote a URL (remoteNamed).
		return value == "." || plainRemote(value) && !localURL(value)
	case "submodule.update":
		switch strings.ToLower(strings.TrimSpace(value)) {
		case "checkout", "rebase", "merge", "none":
			return true
		}
	}
	return false
}

// plainRemote: v is a remote's name, a path, or a URL of a transport git
// carries itself. A transport's name before "::" runs git-remote-<name>
// (ext:: runs the rest as a command line), and so does a scheme git does
// not know before "://".
func plainRemote(v string) bool {
	if strings.Contains(v, "::") || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return false
	}
	scheme, _, found := strings.Cut(v, "://")
	if !found {
		return true
	}
	switch strings.ToLower(scheme) {
	case "http", "https", "ssh", "git", "file", "ftp", "ftps", "git+ssh", "ssh+git":
		return true
	}
	return false
}

// localURL: git takes the URL v for a repository on this machine (as its
// url_is_local_not_ssh does: no colon, or a slash before the first one;
// or file://).
func localURL(v string) bool {
	if scheme, _, found := strings.Cut(v, "://"); found {
		return strings.EqualFold(scheme, "file")
	}
	colon, slash := strings.IndexByte(v, ':'), strings.IndexByte(v, '/')
	return colon < 0 || slash >= 0 && slash < colon
}

// isGitBool reports whether v is one of git's boolean spellings.
// Exactly: a value with blanks or control bytes around the word is no
// boolean to git (it runs " true" as a hook command).
func isGitBool(v string) bool {
	switch strings.ToLower(v) {
	case "", "true", "false", "yes", "no", "on", "off", "1", "0":
		return true
	}
	return false
}
