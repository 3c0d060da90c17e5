package sandbox

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"hash/fnv"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/unified-exec/unified-exec/policy"
)

// Git repositories inside the writable roots.
//
// What git writes for everyday work — the index, objects, refs, logs,
// HEAD, the state of a merge, a rebase or a stash — is data. What makes
// the host's git run a program is not: the hooks; the configuration
// (core.hooksPath, core.fsmonitor, aliases, filters, diff and merge
// drivers, include paths: every setting not known harmless, see
// noteworthy); the pointers that say where
// those are (a gitdir's commondir, a worktree's gitdir file, the .git
// file of a worktree or a submodule); and what the configuration names by
// path (the directory core.hooksPath names, an included file, a filter's
// script). A gitSurvey finds the repositories a host's git may later use
// and lists those paths, which the plan keeps read-only (git = "commit"),
// or keeps each repository read-only whole (git = "read-only").
//
// A name that does not exist cannot be covered by a mount, so what git
// would read there is made, empty, where git itself makes it or nobody
// sees it: a gitdir's hooks/ (as git init makes it) and config, a
// config.worktree where extensions.worktreeConfig is on, an included
// configuration file inside a gitdir, and the directory core.hooksPath
// names (with the folders on the way). Two things are reported rather
// than prevented (see GitState): a commondir made in a gitdir that had
// none (an empty one would break git), and a file made in the work tree
// where the configuration includes one that does not exist. A .git or a hooks folder reached
// through a symbolic link is noted: a mount cannot cover a link.

// gitSurvey describes the repositories under the writable roots.
type gitSurvey struct {
	roots  []string
	home   string
	commit bool // git = "commit": fine-grained; else each repository whole

	seen      map[string]bool
	trees     map[string]bool   // gitdir NUL work tree: the pairs looked at
	common    map[string]string // each gitdir's common directory, once looked at
	gitdirs   []string          // gitdirs and common directories found
	protect   []string          // paths to keep read-only
	kept      map[string]bool   // protect, as a set
	makeDirs  []string          // absent directories to make so that they can be covered
	makeFiles []string          // absent files to make (empty) so that they can be covered
	hookDirs  []string          // directories git takes hooks from
	notes     []string
	// fc keeps the survey from reading or listing, for a command, what
	// the command cannot (see fence): every file and folder it tells of
	// is read through it.
	fc *fence
	// items are what makes git run a program (see GitState); noted are
	// the configuration files whose entries are in it.
	items map[string]string
	noted map[string]bool
	// entries are where the configuration entries among items come
	// from, by item key (see GitItem).
	entries map[string]entryAt
	// includes and rereads count the included files read, and read
	// again (see maxIncludes); ranks
	// the next rank of each entry's item key (see entry).
	includes, rereads int
	// listed counts the configuration entries made items, folded those
	// past maxConfigItems, a file each.
	listed int
	folded map[string]*foldedEntries
	// programWords counts the paths programs looked at; reservedWords
	// those past maxProgramWords, by the config file entryFile (the one
	// whose entry is being looked at) they come from (see reserveWord).
	programWords  int
	reservedWords map[string]int
	entryFile     string
	ranks         map[string]int
	// hashed is what fingerprint found of each file, by its real path:
	// read once a survey.
	hashed map[string]string
	// global is the user's own configuration (~/.gitconfig and
	// ~/.config/git/config), which every repository reads.
	global []gitEntry
	// globalFiles are the files of global, includes included.
	globalFiles []string
}

func newGitSurvey(roots []string, home string, commit bool, fc *fence, commandEnv ...string) *gitSurvey {
	s := &gitSurvey{trees: map[string]bool{}, common: map[string]string{}, roots: roots, home: home, commit: commit, fc: fc, seen: map[string]bool{}, items: map[string]string{}, noted: map[string]bool{}}
	// The user's files as this program's git finds them, and as the
	// commands' environment ([env] set) has their git find them.
	users := userConfigs(home, os.Getenv)
	if len(commandEnv) > 0 {
		getenv := policy.Sandbox{CommandEnv: commandEnv}.CommandValue
		for _, f := range userConfigs(getenv("HOME"), getenv) {
			if !slices.Contains(users, f) {
				users = append(users, f)
			}
		}
	}
	for _, f := range users {
		s.readConfig(f, 0, func(file string, e gitEntry, again bool) {
			if again {
				if e.key == "core.hookspath" {
					s.global = append(s.global, e) // the last one counts
				}
				return
			}
			s.entry(file, e, "")
			s.global = append(s.global, e)
			if !slices.Contains(s.globalFiles, file) {
				s.globalFiles = append(s.globalFiles, file)
			}
		})
	}
	for _, f := range s.globalFiles {
		s.keep(f)
		s.noted[f] = true
	}
	// The user's own files where they are absent too, when a command
	// could make them (a home inside a writable root: a CI step's scratch
	// HOME): git reads an empty one as none, and red team 30 had a
	// command write ~/.gitconfig with a core.sshCommand that a git fetch
	// run outside the sandbox then ran.
	for _, f := range users {
		if f == os.Getenv("GIT_CONFIG_SYSTEM") || f == "/etc/gitconfig" || !s.inRoots(filepath.Clean(f)) {
			continue
		}
		f = filepath.Clean(f)
		if _, err := os.Lstat(f); err == nil {
			s.keep(f)
			continue
		}
		if !isDir(filepath.Dir(f)) {
			// ~/.config/git/: kept as an empty folder, which holds no
			// configuration and takes none.
			s.keepDir(filepath.Dir(f))
			continue
		}
		s.keepFile(f)
	}
	// A relative core.hooksPath of the global configuration is each
	// repository's (applied in configs); an absolute one is here.
	for _, e := range s.global {
		if e.key == "core.hookspath" {
			if p := s.fc.expand(e.value, home); filepath.IsAbs(p) {
				s.hooksPath(physical(s.fc, p))
			}
		}
	}
	return s
}

// userConfigs are the configuration files every repository reads, as git
// finds them in this program's environment: the system's
// ($GIT_CONFIG_SYSTEM, else /etc/gitconfig; none under GIT_CONFIG_NOSYSTEM)
// and the user's ($GIT_CONFIG_GLOBAL, else $XDG_CONFIG_HOME/git/config
// and ~/.gitconfig). Red team 28 set core.hooksPath = .githooks in the
// system's, which the survey did not read. (The host's git must run with
// the same environment for this to hold.)
func userConfigs(home string, getenv func(string) string) []string {
	var files []string
	if !isGitTrue(getenv("GIT_CONFIG_NOSYSTEM")) {
		files = append(files, cmp.Or(getenv("GIT_CONFIG_SYSTEM"), "/etc/gitconfig"))
	}
	if g := getenv("GIT_CONFIG_GLOBAL"); g != "" {
		return append(files, g)
	}
	if home == "" {
		return files
	}
	xdg := getenv("XDG_CONFIG_HOME")
	if xdg == "" {
		xdg = filepath.Join(home, ".config")
	}
	return append(files, filepath.Join(xdg, "git", "config"), filepath.Join(home, ".gitconfig"))
}

// inRoots reports whether p is a writable root or inside one.
func (s *gitSurvey) inRoots(p string) bool {
	return slices.ContainsFunc(s.roots, func(r string) bool { return p == r || within(p, r) })
}

// keep adds p to the paths kept read-only, when it lies in a writable
// root (everything else is read-only already).
func (s *gitSurvey) keep(p string) {
	if p != "" && !s.kept[p] && s.inRoots(p) {
		if s.kept == nil {
			s.kept = map[string]bool{}
		}
		s.kept[p] = true
		s.protect = append(s.protect, p)
	}
}

// keepExisting keeps p when it exists.
func (s *gitSurvey) keepExisting(p string) {
	if _, err := os.Lstat(p); err == nil {
		s.keep(p)
	}
}

// keepDir keeps the directory p, making it first (empty, with the
// folders missing on the way) when it is absent, so that a mount can
// cover it.
func (s *gitSurvey) keepDir(p string) {
	if !s.inRoots(p) || p == "" {
		return
	}
	// The folders missing on the way from the nearest one that exists,
	// inside the writable root, are made in order.
	var missing []string
	for d := p; s.inRoots(d); d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		missing = append(missing, d)
		if slices.Contains(s.roots, d) {
			return // a root that does not exist
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if !slices.Contains(s.makeDirs, missing[i]) {
			s.makeDirs = append(s.makeDirs, missing[i])
		}
	}
	s.keep(p)
}

// keepFile keeps the file p, making it first (empty) when it is absent
// and its parent exists, so that a mount can cover it.
func (s *gitSurvey) keepFile(p string) {
	if !s.inRoots(p) {
		return
	}
	if _, err := os.Lstat(p); err != nil {
		if !isDir(filepath.Dir(p)) {
			return
		}
		if !slices.Contains(s.makeFiles, p) {
			s.makeFiles = append(s.makeFiles, p)
		}
	}
	s.keep(p)
}

// found takes what findRepos found.
func (s *gitSurvey) found(f gitFound) {
	// Oldest first, by the change time of what git reads first (a
	// gitdir's config, a .git file), which no one can set back: the
	// survey's budgets go to the repositories that were there before a
	// command could make one, whatever their folders' order (red team 6,
	// F5: a repository a command made, surveyed first, spent the budget
	// and left the host's configuration unread, its core.fsmonitor
	// script writable; red team 8: in every later orchestrator too).
	type unit struct {
		at  int64
		run func()
	}
	var units []unit
	for _, d := range f.dotGitDirs {
		units = append(units, unit{surveyAge(s.fc, s.home, d[0]), func() { s.repo(d[0], d[1]) }})
	}
	for _, p := range f.pointers {
		// A .git file: dated by itself (what it names is surveyed as
		// it is found there).
		at, ok := changedAt(p)
		if !ok {
			at = math.MaxInt64
		}
		units = append(units, unit{at, func() { s.pointer(p) }})
	}
	for _, b := range f.bare {
		// A gitdir that is a writable root of its own (a linked
		// worktree's common directory, see gitRoots) is a .git folder.
		units = append(units, unit{surveyAge(s.fc, s.home, b), func() { s.repo(b, mainWorktree(b)) }})
	}
	slices.SortStableFunc(units, func(a, b unit) int { return cmp.Compare(a.at, b.at) })
	for _, u := range units {
		u.run()
	}
	for _, l := range f.links {
		s.notes = append(s.notes, fmt.Sprintf("%s is a symbolic link: a mount cannot cover a link, so a command can point it elsewhere (the repository it names now is covered)", l))
		if readerDependent(l) {
			s.items[readerKey+l] = errReaderDependent.Error()
			continue
		}
		t, err := s.fc.resolve(l)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, errFenced) {
				// git may follow what this cannot (a path past
				// PATH_MAX built whole here, resolved in steps by the
				// kernel): told, not dropped (red team 43).
				s.items[l+" names"] = "a link the survey cannot follow (" + err.Error() + "): the repository git finds there is not checked"
			}
			continue
		}
		// Looked at through no link (one swapped in since leads nowhere).
		switch st, err := statNoLinks(t); {
		case err != nil:
			s.items[l+" names"] = "a link the survey cannot follow (" + err.Error() + "): the repository git finds there is not checked"
		case st.IsDir():
			s.repo(t, filepath.Dir(l))
		default:
			// A link to a file holding "gitdir: PATH" is a .git file
			// to git, its PATH resolved from the link's folder (red
			// team 43: only links to folders were followed, and the
			// gitdir it named ran its fsmonitor, untold).
			s.pointer(l)
		}
	}
	for _, r := range f.truncated {
		s.notes = append(s.notes, fmt.Sprintf("the search for git repositories in %s stopped at its bound: repositories it did not reach are not covered", r))
		// And an item: the report after a command says so when a
		// command made the search stop (red team 18 made 1100 folders
		// before its repository; the note reached no one).
		s.items["bound "+r] = "the search for repositories stopped at its bound here: one past it is not checked"
	}
	for _, d := range f.unlisted {
		s.notes = append(s.notes, fmt.Sprintf("the folder %s cannot be listed by this user (its permissions let names be looked up, not listed): a repository in it is not covered", d))
		s.items["unlisted "+d] = "this folder cannot be listed by this user, only entered (its permissions): a repository in it, which git finds by its name, is not checked"
	}
	for _, r := range f.unreadIndexes {
		s.notes = append(s.notes, fmt.Sprintf("the index of the repository in %s could not be read as git reads it: the submodules it records are not covered", r))
		s.items["index "+r] = "its index could not be read as git reads it: a submodule it records, which git enters, is not checked"
	}
}

// seed covers a .git the policy names (protected = ["vendor/x/.git"]),
// wherever it lies.
func (s *gitSurvey) seed(p string) {
	st, err := os.Lstat(p)
	switch {
	case err != nil:
	case st.IsDir():
		s.repo(p, filepath.Dir(p))
	case st.Mode().IsRegular():
		s.pointer(p)
	default:
		if t, err := s.fc.resolve(p); err == nil {
			s.repo(t, filepath.Dir(p))
		}
	}
}

// pointer covers a .git file and the repository it names.
func (s *gitSurvey) pointer(p string) {
	s.keep(p)
	raw := gitdirFileTarget(s.fc, p)
	target := readGitdirFile(s.fc, p)
	switch {
	case processRelative(raw) || raw != "" && !filepath.IsAbs(raw) && readerDependent(filepath.Dir(p)+"/"+raw):
		// Each process reads /proc/self and /dev/fd as its own: git,
		// run in a work tree, finds another repository there than the
		// survey can (red team 27 had one run through /proc/self/cwd).
		s.items[p+" names"] = raw + " (a path each process reads as its own: the repository git finds there is not checked)"
	case target != "" && looksLikeGitdir(target):
		s.repo(target, filepath.Dir(p))
	default:
		s.items[p+" names"] = raw + " (no repository the survey can read there: what git finds is not checked)"
	}
}

// readerKey starts the item of a path in a gitdir (or a hook) that git
// reads through a link each process reads as its own.
const readerKey = "reader-dependent "

// readerLinks tells each link in gitdir g (its config, hooks, commondir,
// index, HEAD, info...) whose way takes a link each process reads as its
// own (see readerDependent): what the survey reads there is its own
// working directory's or descriptor's, not what git reads, run in the
// work tree (red team 42). One listing of g, and a lookup of each link.
func (s *gitSurvey) readerLinks(g string) {
	names, types, _, err := listEntries(g)
	if err != nil {
		return
	}
	for i, name := range names {
		if types[i]&os.ModeSymlink == 0 {
			continue
		}
		if p := g + "/" + name; readerDependent(p) {
			s.items[readerKey+p] = errReaderDependent.Error()
		}
	}
}

// processRelative: p reads differently in each process (/proc/self,
// /proc/thread-self, /dev/fd, /dev/std*), or through another process's
// view (/proc/<pid>).
func processRelative(p string) bool {
	return strings.HasPrefix(p, "/proc/") || strings.HasPrefix(p, "/dev/fd/") || strings.HasPrefix(p, "/dev/std")
}

// gitdirFileTarget is the path a .git file names, as written ("" when it
// names none).
func gitdirFileTarget(fc *fence, dotgit string) string {
	b, ok := readGitFile(fc, dotgit, maxGitdirFile)
	if !ok {
		return ""
	}
	target, _ := strings.CutPrefix(b, "gitdir: ")
	return target
}

// repo covers the gitdir g whose work tree is w ("" for a bare
// repository, or unknown), its common directory, its worktrees and its
// submodules.
func (s *gitSurvey) repo(g, w string) {
	if s.seen[g] {
		s.alsoFrom(g, w)
		return
	}
	s.seen[g] = true
	s.trees[g+"\x00"+w] = true
	if !s.fc.listable(g) {
		// A .git, commondir or modules/ entry naming ~/.ssh, or the
		// home (red team 44), or reached through a link to one (red
		// team 45): nothing in it is read for a command.
		return
	}
	s.gitdirs = append(s.gitdirs, g)
	s.readerLinks(g)
	common := g
	if named := s.commondirOf(g); named != "" {
		switch {
		case s.fc.blocked(named):
			// Taken as named whether it is there or not: what is read
			// there is refused, the same either way (isDir told).
			s.fc.refuse(named, errFenced)
			common = named
		case isDir(named):
			common = named
		}
		if named != expectedCommon(g) {
			s.items[filepath.Join(g, "commondir")+" points to"] = named
		}
	}
	s.common[g] = common
	s.fc.budget().own(filepath.Join(common, "config"))
	local := s.parse(filepath.Join(common, "config"))
	// A submodule's gitdir names its work tree; any gitdir may (git takes
	// its hooks and what its configuration names relative from there).
	src := local
	if common != g {
		src = readGitConfig(s.fc, filepath.Join(g, "config.worktree"))
	}
	if wt := lastValue(src, "core.worktree"); wt != "" {
		w = resolvePath(s.fc, wt, g, s.home)
	}
	if s.commit {
		for _, name := range []string{"config", "config.worktree", "commondir", "gitdir"} {
			s.keepExisting(filepath.Join(g, name))
		}
		if common == g && (looksLikeGitdir(g) || filepath.Base(g) == ".git") {
			// git reads both if they appear: they are made (empty) to be
			// covered.
			s.keepDir(filepath.Join(g, "hooks"))
			s.keepFile(filepath.Join(g, "config"))
			// git still takes a remote no configuration defines from
			// these folders' files (red team 29 named a bare repository
			// whose pre-receive a push ran).
			s.keepDir(filepath.Join(g, "remotes"))
			s.keepDir(filepath.Join(g, "branches"))
		}
	} else {
		s.keep(g)
	}
	if common != g {
		s.repo(common, mainWorktree(common))
	}
	s.configs(g, common, w, local)
	s.paused(g)
	if common != g {
		// A linked worktree keeps its submodules' gitdirs in its own
		// gitdir (red team 25 hid one in worktrees/<id>/modules).
		s.modules(filepath.Join(g, "modules"))
		return
	}
	s.hookDirs = append(s.hookDirs, filepath.Join(g, "hooks"))
	// Remotes of git's older files (remotes/<name>, branches/<name>),
	// which git no longer writes: each is told, with what it holds.
	for _, dir := range []string{"remotes", "branches"} {
		entries, _ := s.fc.readDir(filepath.Join(g, dir))
		for _, e := range entries {
			p := filepath.Join(g, dir, e.Name())
			s.items["legacy remote "+p] = s.fingerprint(p)
		}
	}
	// The repository's linked worktrees: their own gitdirs here, each
	// with a .git file in its work tree.
	if ids, err := s.fc.readDir(filepath.Join(g, "worktrees")); err == nil {
		for i, id := range ids {
			if i == maxModules {
				s.items["bound "+filepath.Join(g, "worktrees")] = "the search of a repository's worktrees stopped at its bound here: one past it is not checked"
				break
			}
			if !id.IsDir() {
				continue
			}
			admin := filepath.Join(g, "worktrees", id.Name())
			if s.commit {
				for _, name := range []string{"config.worktree", "commondir", "gitdir"} {
					s.keepExisting(filepath.Join(admin, name))
				}
			}
			wt := ""
			dotgit, err := readGitPath(s.fc, filepath.Join(admin, "gitdir"))
			if errors.Is(err, errPastBound) {
				s.items[boundPathKey+filepath.Join(admin, "gitdir")] = boundPathWhy
			}
			if dotgit != "" {
				dotgit = resolvePath(s.fc, dotgit, admin, s.home)
				wt = filepath.Dir(dotgit)
				if st, err := os.Lstat(dotgit); err == nil && st.Mode().IsRegular() && !s.fc.blocked(dotgit) {
					s.keep(dotgit)
				}
			}
			s.seen[admin] = true
			s.trees[admin+"\x00"+wt] = true
			s.common[admin] = g
			s.gitdirs = append(s.gitdirs, admin)
			s.readerLinks(admin)
			if named := s.commondirOf(admin); named != "" && named != g {
				s.items[filepath.Join(admin, "commondir")+" points to"] = named
			}
			s.configs(admin, g, wt, local)
			s.paused(admin)
			s.modules(filepath.Join(admin, "modules"))
		}
	}
	// Its submodules' gitdirs (names may hold slashes: modules/lib/x).
	s.modules(filepath.Join(g, "modules"))
}

// alsoFrom looks again at what the configuration of gitdir g, surveyed
// already, names relative to its work tree, from the work tree w: git
// takes a linked worktree's (and any gitdir's) from where its .git file
// is, not from what the gitdir's own gitdir file says, which a command
// that made the worktree can rewrite (red team 43: a hook planted in the
// worktree's .husky/_ was untold with that file naming another folder).
func (s *gitSurvey) alsoFrom(g, w string) {
	common, ok := s.common[g]
	if w == "" || !ok || s.trees[g+"\x00"+w] {
		return
	}
	s.trees[g+"\x00"+w] = true
	s.configs(g, common, w, s.parse(filepath.Join(common, "config")))
}

// paused tells what a rebase, cherry-pick or revert paused in gitdir g
// will run when the person continues it: exec lines of its to-do list,
// and a merge strategy that is not git's own (strategy x runs
// git-merge-x, from PATH or the work tree: red team 28 had git rebase
// --continue run one a command wrote there). git reads these files
// whole, however long: what is past the bound this reads of one is told
// after every command (red team 6 put an exec line in a to-do list of
// 9 MiB, and "x/evil\0" first in a strategy file of 2 MiB, untold).
func (s *gitSurvey) paused(g string) {
	var runs []string
	folded, h := 0, fnv.New64a()
	for _, todo := range []string{"rebase-merge/git-rebase-todo", "sequencer/todo"} {
		path := filepath.Join(g, todo)
		past := s.todoRuns(path, func(line string) {
			h.Write([]byte(line))
			h.Write([]byte{0})
			if len(runs) == maxTodoRuns {
				folded++
				return
			}
			if len(line) > maxRunShown {
				line = line[:maxRunShown] + "…"
				folded++ // its rest told by the digest
			}
			runs = append(runs, line)
		})
		if past {
			s.items[boundPausedKey+path] = fmt.Sprintf("git reads this to-do list whole, and runs its exec lines on git rebase --continue (or cherry-pick --continue): what it holds past the first %d MiB this check reads is past the bound, not checked (read it before continuing)", maxTodo>>20)
		}
	}
	if folded > 0 {
		runs = append(runs, fmt.Sprintf("(exec lines past the %d listed, or past %d bytes, digest %016x)", maxTodoRuns, maxRunShown, h.Sum64()))
	}
	strategies := []string{}
	strategy := filepath.Join(g, "rebase-merge/strategy")
	st, err := readOneliner(s.fc, strategy)
	s.pausedUnchecked(strategy, err)
	if errors.Is(err, errPastBound) {
		s.items[boundPausedKey+strategy] = "git reads this file whole as the merge strategy git rebase --continue runs (git-merge-<strategy>), up to its first NUL, and there is none in the first 1 MiB this check reads: the strategy is past the bound, not checked (read it before continuing)"
	}
	if st != "" {
		strategies = append(strategies, st)
	}
	opts := filepath.Join(g, "sequencer/opts")
	if entries := readGitConfig(s.fc, opts); entries != nil {
		if st := lastValue(entries, "options.strategy"); st != "" {
			strategies = append(strategies, st)
		}
		// Not read, or not whole: a FIFO, a reader's own link, a file
		// past the budget (told after every command as well).
		if v := lastValue(entries, tooLargeKey); v != "" {
			s.items[pausedStateKey+opts] = v
		}
	}
	for _, st := range strategies {
		switch st {
		case "ort", "recursive", "resolve", "octopus", "ours", "subtree":
		default:
			runs = append(runs, "merge strategy "+st+" (runs git-merge-"+st+")")
		}
	}
	if len(runs) > 0 {
		s.items["paused "+g] = "git rebase --continue (or cherry-pick --continue) runs: " + strings.Join(runs, "; ")
	}
}

// pausedStateKey starts the item of a paused rebase's or cherry-pick's
// file that git reads and the survey did not (see pausedUnchecked).
const pausedStateKey = "paused state "

// pausedUnchecked tells the file at path of a paused rebase or
// cherry-pick where err says what git reads there cannot be known here:
// no regular file, or reached through a link each process reads as its
// own (red team 6: git, run from the work tree's top, read
// rebase-merge/strategy -> /proc/self/cwd/s as the work tree's s, and
// the survey dropped it, untold) — as the gitdir's own files are told
// (see readerLinks, parseConfigFile).
func (s *gitSurvey) pausedUnchecked(path string, err error) {
	if !unchecked(err) {
		return
	}
	why := err.Error()
	var pe *os.PathError
	if errors.As(err, &pe) {
		why = pe.Err.Error()
	}
	s.items[pausedStateKey+path] = "it is " + why
}

// maxTodo bounds what is read of a to-do list; maxTodoRuns the exec
// lines of a paused gitdir listed one by one, maxRunShown what of each
// (the rest hashed in: what changes there is told).
const (
	maxTodo     = 8 << 20
	maxTodoRuns = 64
	maxRunShown = 1024
)

// boundPausedKey starts the item of a paused rebase's file that git
// reads past what the survey does: a bound, told after every command
// while it lasts (see Unchecked).
const boundPausedKey = "bound paused "

// todoRuns calls run with each exec line of the to-do list at path, as
// git's sequencer reads it (parse_insn_buffer: up to its first NUL, each
// line's leading blanks skipped), trimmed; line by line, its first
// maxTodo bytes and no more: past says the list goes on past them.
func (s *gitSurvey) todoRuns(path string, run func(line string)) (past bool) {
	f, err := s.fc.open(path)
	if err != nil {
		s.pausedUnchecked(path, err)
		return false
	}
	defer f.Close()
	r := bufio.NewReaderSize(io.LimitReader(f, maxTodo+1), 64<<10)
	n := 0
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line[:0], chunk...)
		for err == bufio.ErrBufferFull {
			chunk, err = r.ReadSlice('\n')
			line = append(line, chunk...)
		}
		n += len(line)
		end := false
		if i := bytes.IndexByte(line, 0); i >= 0 {
			line, end = line[:i], true // git reads no further
		}
		if w := strings.Fields(string(line)); len(w) > 1 && (w[0] == "exec" || w[0] == "x") {
			run(strings.TrimSpace(string(line)))
		}
		if end {
			return false
		}
		if err != nil {
			return n > maxTodo
		}
	}
}

// modules covers the gitdirs below dir, a modules/ folder, at any depth
// (a submodule's name may hold slashes) and through symbolic links (git
// submodule update --init takes modules/<name> as it finds it: red team
// 23 hid a gitdir behind a link, and six names deep); past maxModules
// entries it stops, and says so.
func (s *gitSurvey) modules(dir string) {
	budget := maxModules
	bound := func() {
		s.items["bound "+dir] = "the search of a repository's submodules stopped at its bound here: one past it is not checked"
	}
	// Listed through the search's cache (a submodule's gitdir holds some
	// 270 folders of its own, read again each survey otherwise).
	var walk func(d string, via fileKey, depth int)
	walk = func(d string, via fileKey, depth int) {
		l, err := listDir(d, via)
		if err != nil {
			return
		}
		if depth > 0 && l.mark&markMaybeGitdir != 0 {
			s.repo(d, "")
		}
		// Below a gitdir too: git takes modules/a/b for the submodule
		// named a/b whatever modules/a holds (red team 24 hid a gitdir
		// under a folder that looked like one).
		type next struct {
			path string
			via  fileKey
		}
		var nexts []next
		for i, name := range l.subdirs {
			if p := joinName(d, name); !s.fc.childBlocked(p) {
				nexts = append(nexts, next{p, fileKey{dev: l.dev, ino: l.subIno[i]}})
			} else {
				s.fc.refuse(p, errFencedFolder)
			}
		}
		links := l.links
		switch {
		case l.mark&markDotGitDir != 0:
			nexts = append(nexts, next{joinName(d, ".git"), fileKey{}})
		case l.mark&markDotGitLink != 0:
			links = append(slices.Clip(links), ".git")
		}
		for _, name := range links {
			p := joinName(d, name)
			real, err := s.fc.resolve(p)
			if err != nil || !isDir(real) {
				continue
			}
			if s.fc.unlistable(real) {
				s.fc.refuse(p, errFencedFolder)
				continue
			}
			s.items[p+" points to"] = real
			nexts = append(nexts, next{real, fileKey{}})
		}
		if len(nexts) > 0 && depth == maxModulesDepth {
			bound()
			return
		}
		for _, n := range nexts {
			if budget == 0 {
				bound()
				return
			}
			budget--
			walk(n.path, n.via, depth+1)
		}
	}
	// modules/ itself may be a link (to the home: red team 44): walked
	// where it really is (the listings refuse every link on the way).
	if !s.fc.listable(dir) {
		return
	}
	if real, err := s.fc.resolve(dir); err == nil {
		walk(real, fileKey{}, 0)
	}
}

// maxModules bounds the folders (and links) of one modules/ folder read,
// at every depth — a submodule's gitdir holds some 270 of its own, its
// objects' — ; maxModulesDepth how deep (a loop of links ends there). Either
// reached is told.
const (
	maxModules      = 16384
	maxModulesDepth = 256
)

// configs covers what the configuration of gitdir g (common directory
// common, work tree w) names: the directory core.hooksPath names, the
// files it includes, core.fsmonitor's program and the other programs it
// names by path; and notes what in it runs programs.
func (s *gitSurvey) configs(g, common, w string, local []gitEntry) {
	base := w
	if base == "" {
		base = g
	}
	var files []string
	files = append(files, filepath.Join(common, "config"))
	if isGitTrue(lastValue(local, "extensions.worktreeconfig")) {
		// git reads it if it appears: it is made (empty) to be covered.
		files = append(files, filepath.Join(g, "config.worktree"))
		if s.commit {
			s.keepFile(filepath.Join(g, "config.worktree"))
		}
	}
	// Every core.hooksPath read, in git's order: the last is git's where
	// each include's condition holds, and an earlier one where a false
	// includeIf skips the later ones (fresh-eyes review: the one in an
	// includeIf "onbranch:nope" was covered, git's was not). Each is
	// covered, the last always, at most maxHooksPaths in all.
	var hooksPaths []string
	for _, e := range s.global {
		if e.key == "core.hookspath" {
			hooksPaths = append(hooksPaths, e.value)
		}
		// The user's own settings name programs too, relative ones
		// from each work tree (red team 27: a global core.fsmonitor =
		// tools/x runs the workspace's tools/x).
		if noteworthy(e.key, e.value) {
			s.programs(e, base)
		}
	}
	var read []string
	for _, f := range files {
		s.readConfig(f, 0, func(file string, e gitEntry, again bool) {
			if e.key == "core.hookspath" {
				hooksPaths = append(hooksPaths, e.value)
			}
			if !again {
				s.entry(file, e, base)
				read = append(read, file)
			}
		})
	}
	for _, f := range read {
		s.noted[f] = true
	}
	if len(hooksPaths) == 0 {
		return
	}
	last := hooksPaths[len(hooksPaths)-1]
	seen := map[string]bool{}
	for i, v := range hooksPaths {
		if seen[v] || v == "" {
			continue
		}
		if len(seen) >= maxHooksPaths && i != len(hooksPaths)-1 {
			if !seen[last] {
				s.hooksPath(resolvePath(s.fc, last, base, s.home))
			}
			s.items["bound hooks paths "+base] = fmt.Sprintf("git's configuration sets core.hooksPath more than %d ways: the last is covered, and the first %d, not the others (an includeIf whose condition is false makes git take an earlier one; read the configuration before running git there)", maxHooksPaths, maxHooksPaths)
			return
		}
		seen[v] = true
		s.hooksPath(resolvePath(s.fc, v, base, s.home))
	}
}

// maxHooksPaths bounds the core.hooksPath values covered for one work
// tree (each a mount).
const maxHooksPaths = 16

// entry notes a configuration entry that runs a program, and keeps the
// files its value names by path.
func (s *gitSurvey) entry(file string, e gitEntry, base string) {
	s.entryFile = file
	defer func() { s.entryFile = "" }()
	if !noteworthy(e.key, e.value) || e.key == "core.worktree" && s.worktreeNamesBack(file, e.value) || s.remoteNamed(file, e) {
		return
	}
	if !s.noted[file] {
		if s.listed >= maxConfigItems {
			s.fold(file, e)
			s.programs(e, base) // bounded on its own
			return
		}
		s.listed++
		// Each file's entries are noted once, however many worktrees
		// read it; the same key twice in a file is told apart by its rank.
		key := entryFile(file) + ": " + e.key
		if _, dup := s.items[key]; dup {
			// The next rank of this key, kept: a file with a hundred
			// thousand of one key is not searched through for each.
			if s.ranks == nil {
				s.ranks = map[string]int{}
			}
			i := max(s.ranks[key], 2)
			for ; ; i++ {
				if _, dup := s.items[fmt.Sprintf("%s: %s (#%d)", entryFile(file), e.key, i)]; !dup {
					break
				}
			}
			s.ranks[key] = i + 1
			key = fmt.Sprintf("%s: %s (#%d)", entryFile(file), e.key, i)
		}
		s.items[key] = e.value
		if s.entries == nil {
			s.entries = map[string]entryAt{}
		}
		s.entries[key] = entryAt{file, e.key}
	}
	s.programs(e, base)
}

// entryFile is a configuration file's path as it starts its entries' item
// keys ("FILE: KEY"): quoted where it holds a colon, so that no two
// entries share a key (red team 7: the file "L: s.t" with core.fsmonitor
// and the file L with the subsection's "[s \"t: core\"] fsmonitor" were
// one item, the same text and value, and the first, made by a command in
// the second's stead, was untold). An unquoted path holds no colon, and a
// quoted one ends at its closing quote: the file is where the key says.
func entryFile(file string) string {
	if strings.Contains(file, ":") {
		return strconv.Quote(file)
	}
	return file
}

// maxProgramWords bounds the paths the configuration's values name that
// one survey looks at as programs (see programs).
const maxProgramWords = 1024

// boundProgramsKey is the item of the paths past maxProgramWords: a
// bound, told after every command while it lasts.
const boundProgramsKey = "bound programs"

// maxConfigItems bounds the configuration entries one survey lists one by
// one; those past it are folded, a digest a file (see fold).
const maxConfigItems = 4096

// fold counts e among the entries of file past maxConfigItems and hashes
// it in: what a command changes among them changes the digest, which is
// told then.
func (s *gitSurvey) fold(file string, e gitEntry) {
	if s.folded == nil {
		s.folded = map[string]*foldedEntries{}
	}
	f := s.folded[file]
	if f == nil {
		f = &foldedEntries{h: fnv.New64a()}
		s.folded[file] = f
	}
	f.n++
	f.h.Write([]byte(e.key))
	f.h.Write([]byte{0})
	f.h.Write([]byte(e.value))
	f.h.Write([]byte{0})
}

// foldedEntries are the entries of one file past maxConfigItems.
type foldedEntries struct {
	n int
	h hash.Hash64
}

// foldedKey starts the item of a file's folded entries: a bound, told
// after every command while it lasts (see Unchecked).
const foldedKey = "bound entries "

// reserveWord lets a program path past maxProgramWords be looked at when
// it comes from a repository's own small config read from the reserve
// (see configBudget.reserved), its first maxReservedWords: a repository
// surveyed first that names a thousand paths cannot leave the host's
// core.fsmonitor script writable (TestProgramWordsReserve).
func (s *gitSurvey) reserveWord() bool {
	b := s.fc.budget()
	if b == nil || !b.reservedPaths[s.entryFile] || s.reservedWords[s.entryFile] >= maxReservedWords {
		return false
	}
	if s.reservedWords == nil {
		s.reservedWords = map[string]int{}
	}
	s.reservedWords[s.entryFile]++
	return true
}

// maxReservedWords bounds the program paths of each reserved config
// looked at past maxProgramWords (each is a mount: 4096 at most).
const maxReservedWords = 4

// programs keeps the files e's value names by path (resolved from base, a
// work tree: git runs them from there), and tells what they hold.
func (s *gitSurvey) programs(e gitEntry, base string) {
	switch {
	case base == "", e.key == "core.hookspath", e.key == "include.path", strings.HasPrefix(e.key, "includeif."):
		return // directories and files of their own, or nothing to resolve from
	}
	for _, word := range strings.Fields(strings.TrimPrefix(strings.TrimSpace(e.value), "!")) {
		word = strings.Trim(word, `"'`)
		if !strings.Contains(word, "/") || strings.HasPrefix(word, "-") {
			continue
		}
		// Each a lookup, a mount and a hash: bounded (fresh-eyes
		// review: one alias naming 20 000 files made 20 000 mounts).
		if s.programWords++; s.programWords > maxProgramWords && !s.reserveWord() {
			s.items[boundProgramsKey] = fmt.Sprintf("git's configuration names more than %d paths as programs or their arguments (%d; %.200q, …): those past it are not kept read-only, looked at or told (read the configuration before running git there)", maxProgramWords, s.programWords-maxProgramWords, word)
			continue
		}
		p := resolvePath(s.fc, word, base, s.home)
		real, err := s.fc.locate(p)
		if errors.Is(err, errFenced) {
			// Told the same whether it is there or not.
			s.items["program "+p] = "in a path commands cannot read (not read)"
			continue
		}
		// Looked at where the lookup led, through no link (one swapped
		// in since leads nowhere).
		if st, serr := statNoLinks(real); err == nil && serr == nil && st.Mode().IsRegular() {
			s.keep(real)
			// Kept read-only only inside the writable roots: what it
			// holds is told again whenever it changes (red team 24
			// rewrote a program in /dev/shm after it was told). Not the
			// system's programs (/usr/bin/gpg, a credential helper),
			// which no command can write: hashing them twice a call cost
			// milliseconds.
			if s.inRoots(real) || !systemFile(real) {
				s.items["program "+real] = s.fingerprint(real)
			}
		}
	}
}

// systemFile: p lies in a folder of the system's (/usr, /bin, /etc...),
// which the sandbox mounts read-only outside the writable roots.
func systemFile(p string) bool {
	for _, d := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc", "/opt"} {
		if within(p, d) {
			return true
		}
	}
	return false
}

// fingerprint identifies what the file at path holds (see contentOf)
// where a command can change it — inside the writable roots or in
// /dev/shm, and not under an unreadable path — and says what it is
// otherwise: a hash or a size of a file a command cannot read told the
// model about a secret (red team 30 named ~/.ssh/id_rsa as a program in
// a config and read the first 96 bits of its sha256 from the note).
func (s *gitSurvey) fingerprint(path string) string {
	real, err := s.fc.locate(path)
	switch {
	case errors.Is(err, errFenced):
		// The same whether it is there or not (red team 44 told the
		// two apart by the error).
		return "in a path commands cannot read (not read)"
	case err != nil:
		return "unreadable: " + err.Error()
	case !s.inRoots(real) && real != "/dev/shm" && !within(real, "/dev/shm"):
		return "outside what commands can write (not read)"
	}
	// Each file hashed once a survey: a thousand aliases naming one
	// program of 64 MiB read it a thousand times.
	if v, ok := s.hashed[real]; ok {
		return v
	}
	if s.hashed == nil {
		s.hashed = map[string]string{}
	}
	v := contentOf(s.fc, real)
	s.hashed[real] = v
	return v
}

// contentOf identifies what the file at path holds: its size and a hash
// of its content, read each time (see readGitConfig). Of a file past
// maxHashed, its size as its descriptor tells it, and a hash of its first
// maxHashed and last maxTailHashed bytes (only the first were hashed, and
// their count told as the size: a program grown or rewritten past 64 MiB
// was told the same).
func contentOf(fc *fence, path string) string {
	f, err := fc.open(path)
	if err != nil {
		return "unreadable: " + err.Error()
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "unreadable: " + err.Error()
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, maxHashed))
	if err != nil {
		return "unreadable: " + err.Error()
	}
	mark, links, marked := changeMark(f)
	names := ""
	if links > 1 {
		// Another name, where commands may write, writes it whatever
		// mount keeps this one read-only (red team 7: a hard link made
		// before the program was named).
		names = fmt.Sprintf(", %d names (it can be written through the others)", links)
	}
	if n < maxHashed || info.Size() <= maxHashed {
		return fmt.Sprintf("%d bytes, sha256 %x%s", n, h.Sum(nil)[:12], names)
	}
	size := info.Size()
	if _, err := io.Copy(h, io.NewSectionReader(f, max(size-maxTailHashed, maxHashed), maxTailHashed)); err != nil {
		return "unreadable: " + err.Error()
	}
	if !marked {
		mark = "its inode not told"
	}
	// What lies between is not hashed: the inode's change time, which a
	// write there moves, tells it (red team 7: a rewrite in the middle of
	// a program of 69 MB, through a hard link, was untold).
	return fmt.Sprintf("%d bytes, sha256 of its first %s and last %s %x, %s%s", size, sizeText(maxHashed), sizeText(maxTailHashed), h.Sum(nil)[:12], mark, names)
}

// maxHashed and maxTailHashed bound what contentOf reads of one file: its
// start and its end (variables for the tests).
var (
	maxHashed     int64 = 64 << 20
	maxTailHashed int64 = 64 << 10
)

// sizeText is n bytes for people: in MiB or KiB where whole.
func sizeText(n int64) string {
	switch {
	case n > 0 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n > 0 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// remoteNamed: e names a remote (a branch's, a partial clone's) that the
// configuration file it is in, or the user's own, gives a URL of its own
// (itself noted when it is one of this machine): git then takes the name
// for that remote, not for a path.
func (s *gitSurvey) remoteNamed(file string, e gitEntry) bool {
	section, _, name := splitKey(e.key)
	switch {
	case section == "branch" && (name == "remote" || name == "pushremote"), e.key == "extensions.partialclone":
	default:
		return false
	}
	if e.value == "" || strings.ContainsAny(e.value, "/:\\") {
		return false
	}
	url := "remote." + e.value + ".url"
	has := func(entries []gitEntry) bool {
		return slices.ContainsFunc(entries, func(x gitEntry) bool { return x.key == url })
	}
	return has(s.parse(file)) || has(s.global)
}

// worktreeNamesBack: the core.worktree value in the configuration file
// of a gitdir names a work tree whose .git file names that gitdir back,
// as git submodule and git worktree make them (a submodule's gitdir in
// .git/modules). One naming any other folder moves the work tree, and
// the submodules git enters, there (red team 21): it is reported.
func (s *gitSurvey) worktreeNamesBack(file, value string) bool {
	g := filepath.Dir(file)
	if b := filepath.Base(file); b != "config" && b != "config.worktree" {
		return false
	}
	if v := strings.TrimSpace(value); processRelative(v) || !filepath.IsAbs(v) && readerDependent(g+"/"+v) {
		return false // git reads it as its own: told
	}
	w := resolvePath(s.fc, value, g, s.home)
	back := readGitdirFile(s.fc, filepath.Join(w, ".git"))
	if back == "" {
		return false
	}
	real, err := filepath.EvalSymlinks(g)
	return err == nil && back == real
}

// hooksPath covers the directory a core.hooksPath names. One named "_"
// is husky's (9 and later): its hooks run the scripts one level up
// (.husky/pre-commit), so the parent is covered whole.
func (s *gitSurvey) hooksPath(dir string) {
	if filepath.Base(dir) == "_" {
		// The hooks git runs are in _ itself: listed too (red team 43:
		// a hook planted in a new worktree's .husky/_ was untold).
		if !slices.Contains(s.hookDirs, dir) {
			s.hookDirs = append(s.hookDirs, dir)
		}
		dir = filepath.Dir(dir)
	}
	if real, err := s.fc.locate(dir); err == nil && real != dir {
		if s.inRoots(dir) {
			s.notes = append(s.notes, fmt.Sprintf("the hooks folder %s goes through a symbolic link: a mount cannot cover a link, so a command can point it elsewhere (where it points now is covered)", dir))
		}
		dir = real
	}
	if !slices.Contains(s.hookDirs, dir) {
		s.hookDirs = append(s.hookDirs, dir)
	}
	s.keepDir(dir)
}

// maxIncludes bounds the included files one survey reads, each once a
// walk; maxRereads how often it follows again the includes of files it
// read already (a file included a thousand times, one that includes
// itself three times).
const (
	maxIncludes = 512
	maxRereads  = 1024
)

// readConfig parses the configuration file path and the files it
// includes (at most 10 deep, as git), calling each with every entry, in
// git's order; again says the file was read before in this walk (a file
// included twice: its entries are noted once — fresh-eyes review: one
// included 512 times made a million items — and each sees them again for
// what the last one sets). A file that includes itself, which git refuses,
// is not read again inside itself. The files themselves are kept,
// included ones too: an include names a file git reads as configuration;
// past maxIncludes an include is kept, not read, and that is told after
// every command.
func (s *gitSurvey) readConfig(path string, depth int, each func(file string, e gitEntry, again bool)) {
	s.walkConfig(path, depth, each, map[string]bool{}, map[string]bool{})
}

func (s *gitSurvey) walkConfig(path string, depth int, each func(file string, e gitEntry, again bool), open, read map[string]bool) {
	if depth > 10 || open[path] {
		return
	}
	if !s.fc.walkAgain("survey", path) {
		return
	}
	open[path] = true
	defer delete(open, path)
	again := read[path]
	read[path] = true
	for _, e := range s.parse(path) {
		each(path, e, again)
		if e.key == "include.path" || strings.HasPrefix(e.key, "includeif.") && strings.HasSuffix(e.key, ".path") {
			// git reads it by this path, and resolves its own includes
			// from its folder (red team 25: not from where a link there
			// leads); it is covered where it really is.
			inc := resolvePath(s.fc, e.value, filepath.Dir(path), s.home)
			real := inc
			if r, err := s.fc.locate(inc); err == nil {
				real = r
			}
			if s.inGitdir(real) {
				s.keepFile(real) // made, empty, where nobody sees it
			} else {
				s.keep(real) // absent: reported if it appears (see GitState)
			}
			if read[inc] {
				// Read before in this walk: followed again only for
				// the settings whose last value counts, a bounded
				// number of times.
				// Each time charged by its entries (fresh-eyes
				// review: a file of 100 000 included a thousand times
				// took 49 s).
				if s.rereads++; s.rereads > maxRereads {
					if _, told := s.items[boundIncludesKey]; !told {
						s.items[boundIncludesKey] = fmt.Sprintf("git's configuration includes files again more than %d times (%s, …): those past it were not followed again, so which core.hooksPath they set last is not checked (read the configuration before running git there)", maxRereads, inc)
					}
					continue
				}
			} else if s.includes++; s.includes > maxIncludes {
				// Thousands of includes were read as often (fresh-eyes
				// review: 16 s a command); this one is kept, unread.
				if _, told := s.items[boundIncludesKey]; !told {
					s.items[boundIncludesKey] = fmt.Sprintf("git's configuration includes files more than %d times: those past it (%s, …) were kept read-only where commands could write them but not read, so what git would take from them is not checked or told (read the configuration before running git there)", maxIncludes, inc)
				}
				continue
			}
			s.walkConfig(inc, depth+1, each, open, read)
		}
	}
}

// boundIncludesKey is the item of includes past maxIncludes: a bound,
// told after every command while it lasts (see Unchecked).
const boundIncludesKey = "bound includes"

// inGitdir reports whether p lies in a gitdir already found.
func (s *gitSurvey) inGitdir(p string) bool {
	return slices.ContainsFunc(s.gitdirs, func(g string) bool { return within(p, g) })
}

// parse reads a configuration file once per survey (see readGitConfig).
func (s *gitSurvey) parse(path string) []gitEntry {
	return readGitConfig(s.fc, path)
}

// readGitdirFile reads a .git file ("gitdir: PATH") and resolves PATH;
// "" when it is no such file. It reads as git does (read_gitfile_gently):
// the whole file, up to maxGitdirFile, its trailing line ends dropped (a
// path followed by thousands of newlines is git's as well: red team 18
// hid a gitdir so behind a first 4 KiB the survey read alone).
func readGitdirFile(fc *fence, dotgit string) string {
	b, ok := readGitFile(fc, dotgit, maxGitdirFile)
	if !ok {
		return ""
	}
	// "gitdir: " exactly, and every byte after it: git keeps a path's
	// spaces (red team 26 named "g " to git, which trimming made "g").
	target, ok := strings.CutPrefix(b, "gitdir: ")
	if !ok || target == "" || processRelative(target) {
		return ""
	}
	return resolveFrom(fc, filepath.Dir(dotgit), target)
}

// readGitFile reads a small file as git reads a .git file
// (read_gitfile_gently): the whole of it, at most max bytes (git refuses
// a larger .git file: "too large to be a .git file"), its trailing CRs
// and LFs dropped and nothing else, up to a NUL; ok is false when it is
// no regular file of that size. (A commondir or a worktree's gitdir file,
// which git reads whatever its size, see readGitPath.)
func readGitFile(fc *fence, path string, max int64) (string, bool) {
	b, ok := readGitBytes(fc, path, max)
	if !ok {
		return "", false
	}
	return cString(strings.TrimRight(string(b), "\r\n")), true
}

// readGitBytes is the regular file at path whole, if it holds at most max
// bytes.
func readGitBytes(fc *fence, path string, max int64) ([]byte, bool) {
	f, err := fc.open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() > max {
		return nil, false
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil || int64(len(b)) > max {
		return nil, false
	}
	return b, true
}

// cString is s up to its first NUL: git takes what it read as a C string.
func cString(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

// readOneliner is the file at path as git's sequencer reads its state
// files (read_oneliner): the whole file, however long, one trailing LF
// dropped, and one CR before it, no more (strategy "ort\r\n\r\n" is
// "ort\r\n" to git, which then runs git-merge-ort\r\n); up to a NUL.
// Its first maxGitdirFile bytes are read, no more: a longer file without
// a NUL in them gives errPastBound.
func readOneliner(fc *fence, path string) (string, error) {
	s, atNUL, err := readToNUL(fc, path)
	if err != nil || atNUL {
		return s, err
	}
	if t, ok := strings.CutSuffix(s, "\n"); ok {
		s = strings.TrimSuffix(t, "\r")
	}
	return s, nil
}

// readToNUL is the file at path up to its first NUL (atNUL), else whole,
// as git reads a file into a C string; its first maxGitdirFile bytes and
// no more: a longer file without a NUL in them gives errPastBound.
func readToNUL(fc *fence, path string) (s string, atNUL bool, err error) {
	b, whole, err := readGitPrefix(fc, path, maxGitdirFile)
	if err != nil {
		return "", false, err
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return string(b[:i]), true, nil
	}
	if !whole {
		return "", false, &os.PathError{Op: "read", Path: path, Err: errPastBound}
	}
	return string(b), false, nil
}

// maxGitdirFile is the largest .git file git reads (1 MiB).
const maxGitdirFile = 1 << 20

// readGitPath is a commondir or gitdir file's path as git reads it
// (strbuf_read_file, then a C string): the whole file, however long, its
// trailing CRs and LFs dropped, up to its first NUL — not its first line
// trimmed: git keeps what follows a newline inside, and spaces; "" if
// none. Its first maxGitdirFile bytes are read, no more: a NUL in them
// ends the path there, as for git (red team 6 put "PATH\0" before 2 MiB,
// which the survey did not read, and git took PATH, whose fsmonitor git
// status ran); a longer file without one gives errPastBound (git may
// still take a short path from it: "PATH" and two million "/").
func readGitPath(fc *fence, path string) (string, error) {
	s, atNUL, err := readToNUL(fc, path)
	if err != nil || atNUL {
		return s, err
	}
	return strings.TrimRight(s, "\r\n"), nil
}

// errPastBound: a file git reads whole holds what git takes from it past
// what the survey reads of it.
var errPastBound = errors.New("past the bound this check reads of it")

// boundPathKey starts the item of a file git reads as a path (a
// commondir, a worktree's gitdir file) whose path is past the bound (see
// readGitPath): a bound, told after every command while it lasts (see
// Unchecked); the file itself is kept read-only with the gitdir's.
const boundPathKey = "bound path "

// boundPathWhy is what a boundPathKey item says.
const boundPathWhy = "git reads this file whole as a path, up to its first NUL, and there is none in the first 1 MiB this check reads: the path git takes from it (a common directory, with its hooks and configuration, or a work tree) is past the bound, not checked (read the file before running git there)"

// readGitPrefix is the regular file at path, at most its first max bytes
// (never more are read); whole says that is all of it.
func readGitPrefix(fc *fence, path string, max int64) (b []byte, whole bool, err error) {
	f, err := fc.open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	b, err = io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(b)) > max {
		return b[:max], false, nil
	}
	return b, true, nil
}

// looksLikeGitdir reports whether dir holds a HEAD and objects/ (or a
// commondir file, for a worktree's gitdir).
func looksLikeGitdir(dir string) bool {
	// HEAD looked at itself, as git does: a symbolic link naming
	// refs/heads/x whose ref is only in packed-refs leads nowhere, and is
	// a HEAD to git (red team 23 hid a submodule's gitdir so).
	if st, err := os.Lstat(filepath.Join(dir, "HEAD")); err != nil || !st.Mode().IsRegular() && st.Mode()&os.ModeSymlink == 0 {
		return false
	}
	// objects/ of any kind: git asks only that it be searchable (access
	// X_OK), which an executable file is (red team 26 made one so).
	if _, err := os.Lstat(filepath.Join(dir, "objects")); err == nil {
		return true
	}
	// An entry of the name, whatever it is, as the search's listing
	// takes it: one that is a link is not followed (into ~/.ssh, whether
	// it led anywhere told whether a name was there: red team 46).
	_, err := os.Lstat(filepath.Join(dir, "commondir"))
	return err == nil
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// commondirOf is the directory g's commondir file names (resolved when
// it exists), "" when g has none. One that names a path each process
// reads as its own is told (as pointer tells a .git file's): git, in the
// work tree, finds another common directory there — its hooks and
// configuration — than the survey reads.
func (s *gitSurvey) commondirOf(g string) string {
	c, err := readGitPath(s.fc, filepath.Join(g, "commondir"))
	if errors.Is(err, errPastBound) {
		s.items[boundPathKey+filepath.Join(g, "commondir")] = boundPathWhy
	}
	if processRelative(c) || c != "" && !filepath.IsAbs(c) && readerDependent(g+"/"+c) {
		s.items[filepath.Join(g, "commondir")+" names"] = c + " (a path each process reads as its own: the common directory git finds there, with its hooks and configuration, is not checked)"
	}
	return commondirFrom(s.fc, g, c, s.home)
}

// commondirFrom resolves c, what gitdir g's commondir file names.
func commondirFrom(fc *fence, g, c, home string) string {
	if c == "" {
		return ""
	}
	if r := resolveFrom(fc, g, c); r != "" {
		return r
	}
	return resolvePath(fc, c, g, home)
}

// expectedCommon is the common directory git itself gives gitdir g: the
// repository's for a linked worktree's (X/worktrees/ID), g's own
// otherwise.
func expectedCommon(g string) string {
	if filepath.Base(filepath.Dir(g)) == "worktrees" {
		return filepath.Dir(filepath.Dir(g))
	}
	return g
}

// mainWorktree guesses the work tree of a common directory: the folder
// holding it when it is named .git.
func mainWorktree(common string) string {
	if filepath.Base(common) == ".git" {
		return filepath.Dir(common)
	}
	return ""
}

// resolvePath expands "~/" and "~user/" and makes p absolute from base,
// cleaned; it does not follow links — but where p holds a "..", which
// after a link is the link's target's parent (the kernel's, and git's,
// reading: red team 25 pointed a .git file at lnk/../g, which cleaning
// made g), as far as p exists.
func resolvePath(fc *fence, p, base, home string) string {
	p = fc.expand(strings.TrimSpace(p), home)
	if !filepath.IsAbs(p) {
		p = base + "/" + p
	}
	return physical(fc, p)
}

// physical is the absolute path p, cleaned, with the links before each
// ".." followed (see resolvePath), as far as it exists. One whose way
// enters an unreadable path stops there (see fence.walk): where a link
// in there leads, and whether a name there exists, is not looked at
// (red team 45 read both from where ~/.ssh/NAME/.. led), and the
// refusal is told.
func physical(fc *fence, p string) string {
	if !hasDotDot(p) {
		return filepath.Clean(p)
	}
	real, _, hidden, err := fc.walk(p)
	if hidden {
		fc.refuse(p, errFenced)
		return real
	}
	if err == nil {
		return real
	}
	cur := "/"
	for _, c := range strings.Split(p, "/") {
		switch c {
		case "", ".":
		case "..":
			if real, err := fc.locate(cur); err == nil {
				cur = real
			}
			cur = filepath.Dir(cur)
		default:
			cur = filepath.Join(cur, c)
		}
	}
	return cur
}

func lastValue(entries []gitEntry, key string) string {
	v := ""
	for _, e := range entries {
		if e.key == key {
			v = e.value
		}
	}
	return v
}

// isGitTrue: git may take v for true — anything but its spellings of
// false (git also reads a number, "2" or "1k", as true): used where
// taking a setting for on reads more, never less.
func isGitTrue(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "false", "no", "off", "0", "":
		return false
	}
	return true
}

// gitRoots are the gitdirs outside the writable roots that a writable
// root's own repository lives in: when a root is a linked worktree (or a
// submodule, or has a separate gitdir), its .git file names a gitdir
// elsewhere, which commits need to write. It counts only when that gitdir
// names the root back (a worktree's gitdir file, a submodule's
// core.worktree): a command cannot write a .git file that widens its
// reach to any repository on the machine. The gitdir and its common
// directory are returned, resolved; notes say what was refused.
func gitRoots(roots []string, home string, fc *fence) (extra, notes []string) {
	for _, r := range roots {
		dotgit := filepath.Join(r, ".git")
		st, err := os.Lstat(dotgit)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		g := readGitdirFile(fc, dotgit)
		if g == "" || slices.ContainsFunc(roots, func(x string) bool { return g == x || within(g, x) }) {
			continue
		}
		if g == "/dev" || within(g, "/dev") {
			// /dev/shm is writable from inside: a command could plant
			// both the gitdir and its pointer back.
			notes = append(notes, fmt.Sprintf("%s names the gitdir %s, in /dev, where commands can write: that repository stays read-only", dotgit, g))
			continue
		}
		back := ""
		if b, _ := readGitPath(fc, filepath.Join(g, "gitdir")); b != "" {
			back = resolvePath(fc, b, g, home)
		} else if wt := lastValue(readGitConfig(fc, filepath.Join(g, "config")), "core.worktree"); wt != "" {
			back = filepath.Join(resolvePath(fc, wt, g, home), ".git")
		}
		if real, err := filepath.EvalSymlinks(back); err == nil {
			back = real
		}
		if back != dotgit {
			notes = append(notes, fmt.Sprintf("%s names the gitdir %s, which does not name it back: that repository stays read-only (commits fail)", dotgit, g))
			continue
		}
		extra = append(extra, g)
		if c, _ := readGitPath(fc, filepath.Join(g, "commondir")); c != "" {
			// A linked worktree's gitdir is <common>/worktrees/<name>:
			// only that common directory is one it commits into. Any
			// other the file names would be made writable on its word.
			common := resolveFrom(fc, g, c)
			parent := filepath.Dir(g)
			switch {
			case common == "":
			case common == filepath.Dir(parent) && filepath.Base(parent) == "worktrees" && isFile(filepath.Join(common, "HEAD")):
				extra = append(extra, common)
			default:
				notes = append(notes, fmt.Sprintf("%s names the common directory %s, which is not the repository it lies in: that directory stays read-only", filepath.Join(g, "commondir"), common))
			}
		}
	}
	return extra, notes
}

// survey searches the writable roots (but the unreadable paths in them)
// for repositories, adds the .git paths the policy protects by name, and
// covers what it found.
func survey(roots, tmp, deny, seeds []string, fc *fence, home string, commit bool, commandEnv []string) *gitSurvey {
	fc.roots = roots
	s := newGitSurvey(roots, home, commit, fc, commandEnv...)
	s.found(findRepos(roots, tmp, deny, fc))
	for _, p := range seeds {
		s.seed(p)
	}
	s.tellRefused()
	return s
}

// tellRefused makes an item of each path git reads that the survey did
// not read for a command (see fence): told as such, never what it holds;
// and one of the users' homes it did not look up (see homeMemo).
func (s *gitSurvey) tellRefused() {
	for p, why := range s.fc.refused {
		s.items[fencedKey+p] = why
	}
	for file, f := range s.folded {
		s.items[foldedKey+file] = fmt.Sprintf("%d more entries that are not known to be harmless (digest %016x), past the %d this check lists one by one for a command: neither they nor the programs they name are checked or told one by one (read the file before running git there)", f.n, f.h.Sum64(), maxConfigItems)
	}
	for _, p := range s.fc.budget().unread {
		s.items[unreadKey+p] = unreadWhy
	}
	if why := s.fc.homes.told(); why != "" {
		s.items["bound users' homes"] = why
		s.notes = append(s.notes, why)
	}
}

// fencedKey starts the item of a path git reads that the survey did not
// (see fence).
const fencedKey = "fenced "

// GitState is what, in the repositories under the writable roots, makes
// git run a program: executable hooks; the settings of their
// configuration files that run one (core.hooksPath, core.fsmonitor,
// aliases starting with "!", filters, diff and merge drivers, editors,
// pagers, ssh commands, credential helpers, include paths); and a
// commondir that sends a gitdir's hooks and configuration elsewhere. The
// orchestrator compares the state after each command with the one before
// ([GitState.Since]) and reports what appeared: a repository created
// inside (git init, git clone) is covered by the plans of later commands,
// but what the command itself wrote there must reach a person before
// they run git in it.
type GitState struct {
	items   map[string]string
	entries map[string]entryAt // see gitSurvey.entries
}

// WatchGit finds the git state of the writable roots that the policy's
// workspace-write mode would give (whatever the mode in force: a command
// run without the sandbox can plant hooks too), searched as [Compile]
// searches them.
func WatchGit(p policy.Sandbox, workspace string) (GitState, error) {
	p.Mode = policy.ModeWorkspaceWrite
	ws, err := realDir(workspace, "", "workspace")
	if err != nil {
		return GitState{}, err
	}
	home := os.Getenv("HOME")
	roots, tmp, _, err := writableRoots(p, ws, home)
	if err != nil {
		return GitState{}, err
	}
	fc := newFence(sync.OnceValue(func() []string { return unreadableTargets(p, ws) }))
	extra, _ := gitRoots(roots, home, fc)
	roots = dedupe(append(roots, extra...))
	s := survey(roots, tmp, nil, nil, fc, home, true, p.CommandEnv)
	st := GitState{items: s.items, entries: s.entries}
	for _, dir := range s.hookDirs {
		// Listed only where commands can list it (a hooks folder linked
		// to ~/.ssh told its names: red team 44).
		entries, err := s.fc.readDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".sample") || e.IsDir() {
				continue
			}
			p := filepath.Join(dir, e.Name())
			if e.Type()&os.ModeSymlink != 0 && readerDependent(p) {
				// git runs what its own working directory holds there.
				st.items["hook "+p] = errReaderDependent.Error()
				continue
			}
			real, err := s.fc.locate(p)
			if errors.Is(err, errFenced) {
				// Whether it is there, and executable, is not told.
				st.items["hook "+p] = fencedHook
				continue
			}
			if err != nil {
				continue
			}
			// Looked at through no link: one swapped in since the
			// lookup leads nowhere.
			info, err := statNoLinks(real)
			if err != nil || !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
				continue
			}
			// What it runs, not its size: a hook that is a link to a file
			// no plan covers (/dev/shm) was told once, then rewritten at
			// the same size, untold (red team 24).
			v := "executable, " + s.fingerprint(p)
			if e.Type()&os.ModeSymlink != 0 {
				v = "a symbolic link to " + real + " (a mount cannot keep what it points to), " + v
			}
			st.items["hook "+p] = v
		}
	}
	s.tellRefused()
	return st, nil
}

// fencedHook is what a hook linked into an unreadable path is told as.
const fencedHook = "a symbolic link to what is in a path commands cannot read: git runs what it finds there, which is not read (nor whether it is there, or executable)"

// Len is the number of things in the state.
func (s GitState) Len() int { return len(s.items) }

// Since lists what is in s and was not in before, or differs: one line
// each, for people; ranked, what is known to make git run a program
// first, what the check could not check (see maxConfigItems) next, the
// aliases last (see SinceItems), as a note may show only the first lines.
func (s GitState) Since(before GitState) []string {
	return itemLines(s.SinceItems(before))
}

// Unchecked lists, ranked, what s could not check — an index it could not
// read as git does, a search stopped at its bound — and baseline could:
// told after every command while it lasts, not once (red team 21 made an
// index the survey could not read, told once while nothing was in the
// submodule it hid, then planted a program there, untold).
func (s GitState) Unchecked(baseline GitState) []string {
	return itemLines(s.UncheckedItems(baseline))
}

// gitLine is one item of a state, for people.
func gitLine(k, v string) string {
	switch {
	case strings.HasPrefix(k, "hook ") && v == fencedHook:
		return "a hook " + strings.TrimPrefix(k, "hook ") + " (" + v + ")"
	case strings.HasPrefix(k, "hook "):
		return "an executable hook " + strings.TrimPrefix(k, "hook ") + " (" + v + ")"
	case strings.HasPrefix(k, "legacy remote "):
		return "a remote in git's older form, " + strings.TrimPrefix(k, "legacy remote ") + ", which a push or fetch to that name uses where no configuration names it: " + v
	case strings.HasPrefix(k, "program "):
		return "a program the configuration names, " + strings.TrimPrefix(k, "program ") + ", now holds " + v
	case strings.HasPrefix(k, readerKey):
		return strings.TrimPrefix(k, readerKey) + " is " + v
	case strings.HasPrefix(k, "unlisted "):
		return "the folder " + strings.TrimPrefix(k, "unlisted ") + ": " + v
	case strings.HasPrefix(k, fencedKey):
		return "git reads " + strings.TrimPrefix(k, fencedKey) + ", which is " + v
	case strings.HasPrefix(k, foldedKey):
		return strings.TrimPrefix(k, foldedKey) + ": " + v
	case strings.HasPrefix(k, unreadKey):
		return strings.TrimPrefix(k, unreadKey) + ": " + v
	case strings.HasPrefix(k, boundPathKey):
		return strings.TrimPrefix(k, boundPathKey) + ": " + v
	case strings.HasPrefix(k, pausedStateKey):
		return "git rebase --continue (or cherry-pick --continue) reads " + strings.TrimPrefix(k, pausedStateKey) + ": " + v
	case strings.HasPrefix(k, boundPausedKey):
		return strings.TrimPrefix(k, boundPausedKey) + ": " + v
	case strings.HasSuffix(k, " points to"):
		return fmt.Sprintf("%s %s (that repository's hooks and configuration now come from there)", k, v)
	}
	return fmt.Sprintf("%s = %s", k, v)
}
