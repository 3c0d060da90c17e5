package orchestrator

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/unified-exec/unified-exec/approval"
	"github.com/unified-exec/unified-exec/sandbox"
)

// After each command, what in the git repositories under the writable
// roots would make the host's git run a program is compared with what
// was there before (sandbox.GitState). The plan of every command covers
// the repositories it finds, so a repository made inside (git init, git
// clone) is read-only where it matters from the next command on; but
// what the command that made it wrote there, and what no mount can cover
// (a commondir made where there was none, an included configuration file
// that was absent), must reach a person before they run git there. It
// goes into the response (or the wrapper's stderr) and the audit log.

// gitWatch is the git state last seen. Its zero value is ready for use.
type gitWatch struct {
	// first is closed once the state before the first command is taken
	// (see startGitBaseline); nil: it is taken by the first command.
	first chan struct{}

	// mu guards the fields below.
	mu    sync.Mutex
	known sandbox.GitState
	taken bool // known holds a state
	// baseline is the state before the first command: what it could not
	// check is the host's own (a large tree past the search's bound);
	// what commands made unchecked since is told after each.
	baseline sandbox.GitState
	// partialTold: what the baseline could not check was told (once,
	// after the first command).
	partialTold bool
	// final: the last look came after every process of the program's
	// namespace had ended (the wrapper's command, see
	// unifiedexec.StreamResult.NothingLeft), and no command started
	// since: Close has nothing to look for.
	final bool
}

// commandStarts says that a command is about to start: a look after it
// is needed again at Close.
func (o *Orchestrator) commandStarts() {
	o.git.mu.Lock()
	o.git.final = false
	o.git.mu.Unlock()
}

// lookedLast says that the git check just made came after every process
// of the program's namespace had ended.
func (o *Orchestrator) lookedLast() {
	o.git.mu.Lock()
	o.git.final = true
	o.git.mu.Unlock()
}

// startGitBaseline takes the state before the first command beside the
// rest of the start-up (it reads the repositories under the writable
// roots: a millisecond or two the first command need not wait for).
// Owner: the Orchestrator; gitBaseline and Close wait for it.
func (o *Orchestrator) startGitBaseline() {
	o.git.first = make(chan struct{})
	go func() {
		defer close(o.git.first)
		o.takeGitBaseline()
	}()
}

// gitBaseline makes sure the state before the first command is taken.
func (o *Orchestrator) gitBaseline() {
	if o.git.first != nil {
		<-o.git.first
		return
	}
	o.takeGitBaseline()
}

func (o *Orchestrator) takeGitBaseline() {
	o.git.mu.Lock()
	taken := o.git.taken
	o.git.mu.Unlock()
	if taken {
		return
	}
	st, err := sandbox.WatchGit(o.pol.Sandbox, o.ws)
	if err != nil {
		return
	}
	o.git.mu.Lock()
	if !o.git.taken {
		o.git.known, o.git.baseline, o.git.taken = st, st, true
	}
	o.git.mu.Unlock()
}

// gitCheck looks at the state now, reports what appeared or changed
// since the last look (an audit line, and the note it returns), and keeps
// it as the state to compare with next.
func (o *Orchestrator) gitCheck(ev event) []string {
	st, err := sandbox.WatchGit(o.pol.Sandbox, o.ws)
	if err != nil {
		return nil
	}
	o.git.mu.Lock()
	var news []sandbox.GitItem
	if o.git.taken {
		news = st.SinceItems(o.git.known)
		for _, u := range st.UncheckedItems(o.git.baseline) {
			if !slices.ContainsFunc(news, func(n sandbox.GitItem) bool { return n.Line == u.Line }) {
				news = append(news, u)
			}
		}
		sandbox.SortGitItems(news)
	} else {
		o.git.baseline = st
	}
	// What could not be checked before the first command (a large tree
	// past the search's bound) is the host's own, told once: repositories
	// there are not checked (red team 22 planted one past the bound of a
	// workspace that had reached it before any command).
	var partial []sandbox.GitItem
	if !o.git.partialTold {
		o.git.partialTold = true
		now := st.Unchecked(sandbox.GitState{})
		for _, u := range o.git.baseline.UncheckedItems(sandbox.GitState{}) {
			if slices.Contains(now, u.Line) {
				partial = append(partial, u)
			}
		}
	}
	o.git.known, o.git.taken = st, true
	o.git.mu.Unlock()
	var notes []string
	if len(partial) > 0 {
		ev.Event, ev.Git = "git", gitLines(partial)
		o.audit.write(ev)
		notes = append(notes, gitPartialNote(partial))
	}
	if len(news) > 0 {
		ev.Event, ev.Git = "git", gitLines(news)
		o.audit.write(ev)
		notes = append(notes, gitNote(news))
	}
	return notes
}

// gitRunningNote follows a call that leaves its session running: the
// check runs when a call ends, the session ends or the server closes, so
// what the session writes in between — and takes away again before any
// check — is seen by no check, but by a git the person runs meanwhile
// (red team 26 planted a submodule with core.fsmonitor, let the host's
// git status run it, and removed it before the session ended).
const gitRunningNote = "Git: the session still runs, and may change the repositories under the writable roots at any time: what it does is checked only when a call ends, when it ends, or at close. Run no git in the workspace before it has ended."

// gitPartialNote says what the survey could not check from the start.
func gitPartialNote(partial []sandbox.GitItem) string {
	return "Git: the check of the repositories under the writable roots is partial here, as it was before any command ran: " + listCapped(partial) + ". A repository there that a command makes or changes is not checked: look at any before running git in it (git add -A records one it finds as a submodule, which git status then enters)."
}

// gitNote says what appeared, for the model and the person.
func gitNote(news []sandbox.GitItem) string {
	return "Git: this appeared in a repository under the writable roots, and is not among the settings known to be harmless: it may make git run a program there, as the user, outside the sandbox (or say what could not be checked); check it before running git in that repository: " + listCapped(news) + "."
}

// gitLines are the items' lines, for the audit log.
func gitLines(items []sandbox.GitItem) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Line
	}
	return out
}

// listCapped joins at most maxNoteItems of items, escaped, the first by
// rank (what is known to make git run a program first, the aliases
// last), and names those left out by kind and file (a command that wrote
// ten thousand aliases made a note of a megabyte; red team 6: fifty
// aliases sorted by name before a planted core.fsmonitor pushed it into
// "and 2 more like them", never named); the audit log, where one is
// kept, has them all.
func listCapped(items []sandbox.GitItem) string {
	items = slices.Clone(items)
	sandbox.SortGitItems(items)
	if len(items) <= maxNoteItems {
		return joinEscaped(gitLines(items))
	}
	return joinEscaped(gitLines(items[:maxNoteItems])) + fmt.Sprintf("; and %d more, not listed here: %s (the audit log, where one is kept, lists them all; git config --list --show-origin shows a repository's settings)", len(items)-maxNoteItems, leftOut(items[maxNoteItems:]))
}

// maxNoteItems bounds the things one git note lists.
const maxNoteItems = 50

// leftOut names the items a note leaves out, a count of each kind in
// each file or folder: ranked, and within a rank the fewest first (one
// planted setting among a thousand aliases of another kind is not the
// last named); at most maxNoteGroups, the rest counted, with how many of
// them are known to make git run a program.
func leftOut(items []sandbox.GitItem) string {
	type group struct {
		rank       int
		one, many  string
		where      string
		n, ordinal int
	}
	var groups []*group
	at := map[[3]string]*group{}
	for _, it := range items {
		k := [3]string{it.One, it.Many, it.Where}
		g := at[k]
		if g == nil {
			g = &group{rank: it.Rank, one: it.One, many: it.Many, where: it.Where, ordinal: len(groups)}
			at[k] = g
			groups = append(groups, g)
		}
		g.rank = min(g.rank, it.Rank)
		g.n++
	}
	slices.SortFunc(groups, func(a, b *group) int {
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		if a.n != b.n {
			return a.n - b.n
		}
		return a.ordinal - b.ordinal
	})
	var named []string
	for _, g := range groups[:min(len(groups), maxNoteGroups)] {
		s := fmt.Sprintf("%d %s", g.n, g.many)
		if g.n == 1 {
			s = "1 " + g.one
		}
		if g.where != "" {
			s += " in " + g.where
		}
		named = append(named, approval.Escape(s))
	}
	out := strings.Join(named, ", ")
	if rest := groups[min(len(groups), maxNoteGroups):]; len(rest) > 0 {
		// Of the rest, what is known to make git run a program is named
		// by kind, wherever it is: those kinds are few (red team 7:
		// places enough of one kind left a core.fsmonitor counted, never
		// named).
		n := 0
		var kinds []*group
		of := map[string]*group{}
		for _, g := range rest {
			n += g.n
			if g.rank > sandbox.RankRuns {
				continue
			}
			k := of[g.one]
			if k == nil {
				k = &group{rank: g.rank, one: g.one, many: g.many, ordinal: len(kinds)}
				of[g.one] = k
				kinds = append(kinds, k)
			}
			k.n += g.n
		}
		out += fmt.Sprintf(", and %d more of %d other kinds or places", n, len(rest))
		if len(kinds) > 0 {
			slices.SortFunc(kinds, func(a, b *group) int {
				if a.rank != b.rank {
					return a.rank - b.rank
				}
				return a.ordinal - b.ordinal
			})
			var runs []string
			for _, k := range kinds {
				s := fmt.Sprintf("%d %s", k.n, k.many)
				if k.n == 1 {
					s = "1 " + k.one
				}
				runs = append(runs, approval.Escape(s))
			}
			out += " (among them, known to make git run a program: " + strings.Join(runs, ", ") + ")"
		}
	}
	return out
}

// maxNoteGroups bounds the kinds and places a note names among the
// things it leaves out.
const maxNoteGroups = 16

// joinEscaped joins what the survey found, each escaped: a path or a
// value is the command's to choose, and a CR, an erase-line or a
// conceal sequence in one hid the rest of the note on the person's
// terminal (core.pager = "less\r\x1b[2KALL FINE\x1b[8m").
func joinEscaped(items []string) string {
	escaped := make([]string, len(items))
	for i, it := range items {
		escaped[i] = approval.Escape(it)
	}
	return strings.Join(escaped, "; ")
}

// keptPaths are the paths a plan of this orchestrator kept read-only
// (protected: a repository's configuration and hooks, the programs it
// names) in its first plan, made before any of its commands ran, which
// every later plan whose survey stops short at a budget keeps so (see
// [sandbox.Plan.Keep]): a repository a command makes cannot spend the
// survey's budgets so as to have them left writable. At most maxKept.
type keptPaths struct {
	mu    sync.Mutex
	paths []string
	seen  map[string]bool
}

// maxKept bounds the paths kept for later plans (each is a mount).
const maxKept = 4096

func (k *keptPaths) list() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.paths)
}

func (k *keptPaths) add(paths []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.seen != nil {
		// Only the first plan's: made before any command of this
		// orchestrator ran (red team 8: one command's 4100 includes
		// filled every place, and each later command carried 4096
		// mounts).
		return
	}
	k.seen = map[string]bool{}
	for _, p := range paths {
		if len(k.paths) >= maxKept {
			return
		}
		if !k.seen[p] {
			k.seen[p] = true
			k.paths = append(k.paths, p)
		}
	}
}
