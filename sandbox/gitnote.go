package sandbox

import (
	"path/filepath"
	"slices"
	"strings"
)

// A note may show only the first of the things a GitState tells (the
// orchestrator's lists at most 50): they come ranked, what is known to
// make git run a program first, and each says what kind of thing it is
// and where, so that those left out can be named by kind and file (red
// team 6: fifty aliases sorted before a planted core.fsmonitor pushed it
// into "and 2 more like them", never named).

// GitItem is one thing a GitState tells.
type GitItem struct {
	// Line is the item, for people (unescaped).
	Line string
	// Rank orders the items of a note: RankEveryday first.
	Rank int
	// One and Many name its kind, for one and for several ("an
	// executable hook", "executable hooks").
	One, Many string
	// Where is the file or folder it is in ("" where none is told).
	Where string
}

// The ranks of GitItem, first to last.
const (
	// RankEveryday: what git runs, or reads in its stead, in everyday
	// commands (git status, diff, commit, fetch) without anyone naming
	// it: hooks, core.fsmonitor, core.hooksPath, includes, the pager and
	// the editor, filters, ssh and credential helpers, a repository sent
	// elsewhere (commondir, a .git file, a path to one past the bound),
	// what a program the configuration names now holds; and any kind of
	// item not known here. No padding of another rank comes before it
	// (red team 7: a hundred pager.<name> booleans, each a kind of its
	// own ranked with the programs, left a core.fsmonitor unnamed).
	RankEveryday = iota
	// RankRuns: makes git run a program, or read what it does not
	// check, in less common commands: diff and merge drivers, tools,
	// remotes, a paused rebase, signing programs and the rest of
	// runsKey.
	RankRuns
	// RankUnchecked: what the survey could not check (a bound, a file
	// not read, a path commands cannot read), which may hide anything.
	RankUnchecked
	// RankSetting: a setting neither known harmless nor known to run a
	// program.
	RankSetting
	// RankShellAlias: an alias starting with "!", which runs a shell
	// command when git is asked for it by its name.
	RankShellAlias
	// RankAlias: any other alias (run only when asked for by its name).
	RankAlias
)

// entryAt is where a configuration entry's item comes from (see
// gitSurvey.entry): its item key is "file: key", and either may hold
// ": ", so the kind is never read back from the text.
type entryAt struct {
	file, key string
}

// SinceItems is Since, each item with its rank, kind and place: ranked
// (see RankRuns), then sorted by line.
func (s GitState) SinceItems(before GitState) []GitItem {
	var out []GitItem
	for k, v := range s.items {
		if old, ok := before.items[k]; ok && old == v {
			continue
		}
		out = append(out, s.item(k, v))
	}
	SortGitItems(out)
	return out
}

// UncheckedItems is Unchecked, each item with its rank, kind and place.
func (s GitState) UncheckedItems(baseline GitState) []GitItem {
	var out []GitItem
	for k, v := range s.items {
		if !strings.HasPrefix(k, "index ") && !strings.HasPrefix(k, "bound ") && !strings.HasPrefix(k, "unlisted ") {
			continue
		}
		if _, ok := baseline.items[k]; !ok {
			out = append(out, s.item(k, v))
		}
	}
	SortGitItems(out)
	return out
}

// SortGitItems sorts items by rank, then by line.
func SortGitItems(items []GitItem) {
	slices.SortFunc(items, func(a, b GitItem) int {
		if a.Rank != b.Rank {
			return a.Rank - b.Rank
		}
		return strings.Compare(a.Line, b.Line)
	})
}

// itemLines are the items' lines.
func itemLines(items []GitItem) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Line
	}
	return out
}

// item is the item of key k, value v.
func (s GitState) item(k, v string) GitItem {
	it := GitItem{Line: gitLine(k, v)}
	if e, ok := s.entries[k]; ok {
		it.Rank, it.One, it.Many = entryKind(e.key, v)
		it.Where = e.file
		return it
	}
	kind := func(rank int, one, many, where string) GitItem {
		it.Rank, it.One, it.Many, it.Where = rank, one, many, where
		return it
	}
	switch {
	case strings.HasPrefix(k, "hook "):
		return kind(RankEveryday, "hook", "hooks", filepath.Dir(strings.TrimPrefix(k, "hook ")))
	case strings.HasPrefix(k, "program "):
		return kind(RankEveryday, "program the configuration names", "programs the configuration names", filepath.Dir(strings.TrimPrefix(k, "program ")))
	case strings.HasPrefix(k, "legacy remote "):
		return kind(RankRuns, "remote in git's older form", "remotes in git's older form", filepath.Dir(strings.TrimPrefix(k, "legacy remote ")))
	case strings.HasPrefix(k, pausedStateKey):
		return kind(RankRuns, "file of a paused rebase or cherry-pick not checked", "files of a paused rebase or cherry-pick not checked", filepath.Dir(strings.TrimPrefix(k, pausedStateKey)))
	case strings.HasPrefix(k, "paused "):
		return kind(RankRuns, "paused rebase or cherry-pick", "paused rebases or cherry-picks", strings.TrimPrefix(k, "paused "))
	case strings.HasSuffix(k, " points to"):
		return kind(RankEveryday, "repository sent elsewhere", "repositories sent elsewhere", filepath.Dir(strings.TrimSuffix(k, " points to")))
	case strings.HasSuffix(k, " names"):
		return kind(RankEveryday, "repository named by a path not checked", "repositories named by paths not checked", filepath.Dir(strings.TrimSuffix(k, " names")))
	case strings.HasPrefix(k, foldedKey):
		return kind(RankUnchecked, "file's entries past the bound", "files' entries past the bound", strings.TrimPrefix(k, foldedKey))
	case strings.HasPrefix(k, unreadKey):
		return kind(RankUnchecked, "configuration file not read whole", "configuration files not read whole", strings.TrimPrefix(k, unreadKey))
	case strings.HasPrefix(k, boundPathKey):
		return kind(RankEveryday, "path git reads past the bound", "paths git reads past the bound", filepath.Dir(strings.TrimPrefix(k, boundPathKey)))
	case strings.HasPrefix(k, boundPausedKey):
		return kind(RankRuns, "file of a paused rebase read in part", "files of a paused rebase read in part", filepath.Dir(strings.TrimPrefix(k, boundPausedKey)))
	case strings.HasPrefix(k, "bound "):
		return kind(RankUnchecked, "bound of the check reached", "bounds of the check reached", "")
	case strings.HasPrefix(k, fencedKey):
		return kind(RankUnchecked, "path git reads that commands cannot (not read)", "paths git reads that commands cannot (not read)", filepath.Dir(strings.TrimPrefix(k, fencedKey)))
	case strings.HasPrefix(k, readerKey):
		return kind(RankUnchecked, "path each process reads as its own", "paths each process reads as its own", filepath.Dir(strings.TrimPrefix(k, readerKey)))
	case strings.HasPrefix(k, "unlisted "):
		return kind(RankUnchecked, "folder that cannot be listed", "folders that cannot be listed", strings.TrimPrefix(k, "unlisted "))
	case strings.HasPrefix(k, "index "):
		return kind(RankUnchecked, "index not read as git reads it", "indexes not read as git reads them", strings.TrimPrefix(k, "index "))
	}
	// Of no kind known here: first.
	return kind(RankEveryday, "other thing", "other things", "")
}

// entryKind ranks the configuration entry key = value and names its
// kind. A key git reads to run a program, or to read a file as
// configuration, ranks first; an alias last; the rest between. The key
// is as parseGitConfig gives it (section and name lower case).
func entryKind(key, value string) (rank int, one, many string) {
	if key == tooLargeKey || key == unparsedKey {
		return RankUnchecked, "configuration file not read", "configuration files not read"
	}
	section, sub, name := splitKey(key)
	pattern := section + "." + name
	if sub != "" {
		pattern = section + ".*." + name
	}
	switch {
	case section == "alias":
		if strings.HasPrefix(strings.TrimSpace(value), "!") {
			return RankShellAlias, "alias running a shell command", "aliases running a shell command"
		}
		return RankAlias, "alias", "aliases"
	case section == "pager":
		// pager.<command>: a boolean runs nothing of its own; the
		// command's name is no kind of its own.
		if _, ok := gitBool(value); ok {
			return RankSetting, "pager.* setting", "pager.* settings"
		}
		return RankEveryday, "pager.* setting", "pager.* settings"
	case section == "hook":
		return RankEveryday, "hook.* setting", "hook.* settings"
	case everydayKey[pattern]:
		return RankEveryday, pattern + " setting", pattern + " settings"
	case runsKey[pattern]:
		return RankRuns, pattern + " setting", pattern + " settings"
	}
	return RankSetting, pattern + " setting", pattern + " settings"
}

// everydayKey are the keys of runsKey that git's everyday commands read
// (see RankEveryday).
var everydayKey = map[string]bool{
	"core.fsmonitor": true, "core.hookspath": true, "core.sshcommand": true, "core.pager": true,
	"core.editor": true, "core.askpass": true, "core.alternaterefscommand": true, "core.worktree": true,
	"credential.helper": true, "credential.*.helper": true, "include.path": true, "includeif.*.path": true,
	"filter.*.clean": true, "filter.*.smudge": true, "filter.*.process": true, "diff.external": true,
	"diff.*.textconv": true, "sequence.editor": true, "gpg.program": true, "gpg.*.program": true,
}

// gitBool reads value as git reads a boolean (git_parse_maybe_bool).
func gitBool(value string) (bool, bool) {
	switch strings.ToLower(value) {
	case "true", "yes", "on", "1":
		return true, true
	case "false", "no", "off", "0", "":
		return false, true
	}
	return false, false
}

// runsKey are the configuration keys (the subsection as "*") git reads to
// run a program, to send a command elsewhere (a remote: git push runs a
// local repository's hooks), or to read files as configuration,
// attributes or templates. Ranking only: every key not known harmless is
// told (see noteworthy); one git adds that is not here ranks with the
// other settings, before the aliases.
var runsKey = map[string]bool{
	"core.fsmonitor": true, "core.hookspath": true, "core.sshcommand": true, "core.pager": true,
	"core.editor": true, "core.askpass": true, "core.gitproxy": true, "core.alternaterefscommand": true,
	"core.worktree": true, "core.attributesfile": true,
	"sequence.editor": true, "diff.external": true, "diff.tool": true, "merge.tool": true,
	"credential.helper": true, "credential.*.helper": true,
	"gpg.program": true, "gpg.*.program": true, "gpg.*.defaultkeycommand": true,
	"include.path": true, "includeif.*.path": true, "init.templatedir": true,
	"filter.*.clean": true, "filter.*.smudge": true, "filter.*.process": true,
	"diff.*.textconv": true, "diff.*.command": true, "merge.*.driver": true,
	"difftool.*.cmd": true, "difftool.*.path": true, "mergetool.*.cmd": true, "mergetool.*.path": true,
	"interactive.difffilter": true, "imap.tunnel": true, "uploadpack.packobjectshook": true,
	"remote.*.url": true, "remote.*.pushurl": true, "remote.*.uploadpack": true, "remote.*.receivepack": true,
	"remote.*.vcs": true, "url.*.insteadof": true, "url.*.pushinsteadof": true,
	"branch.*.remote": true, "branch.*.pushremote": true, "extensions.partialclone": true,
	"submodule.*.update": true, "submodule.*.url": true, "protocol.allow": true, "protocol.*.allow": true,
	"man.*.cmd": true, "man.*.path": true, "browser.*.cmd": true, "browser.*.path": true, "web.browser": true,
	"sendemail.smtpserver": true, "sendemail.tocmd": true, "sendemail.cccmd": true,
	"sendemail.headercmd": true, "sendemail.sendmailcmd": true, "guitool.*.cmd": true,
	"sendemail.*.smtpserver": true, "sendemail.*.tocmd": true, "sendemail.*.cccmd": true,
	"sendemail.*.headercmd": true, "sendemail.*.sendmailcmd": true,
	"trailer.*.command": true, "trailer.*.cmd": true, "instaweb.httpd": true,
	"lfs.*.path": true, "lfs.*.clean": true, "lfs.*.smudge": true,
}
