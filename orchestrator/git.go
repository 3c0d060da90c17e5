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
	var news []string
	if o.git.taken {
		news = st.Since(o.git.known)
		for _, u := range st.Unchecked(o.git.baseline) {
			if !slices.Contains(news, u) {
				news = append(news, u)
			}
		}
	} else {
		o.git.baseline = st
	}
	// What could not be checked before the first command (a large tree
	// past the search's bound) is the host's own, told once: repositories
	// there are not checked (red team 22 planted one past the bound of a
	// workspace that had reached it before any command).
	var partial []string
	if !o.git.partialTold {
		o.git.partialTold = true
		for _, u := range o.git.baseline.Unchecked(sandbox.GitState{}) {
			if slices.Contains(st.Unchecked(sandbox.GitState{}), u) {
				partial = append(partial, u)
			}
		}
	}
	o.git.known, o.git.taken = st, true
	o.git.mu.Unlock()
	var notes []string
	if len(partial) > 0 {
		ev.Event, ev.Git = "git", partial
		o.audit.write(ev)
		notes = append(notes, gitPartialNote(partial))
	}
	if len(news) > 0 {
		ev.Event, ev.Git = "git", news
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
func gitPartialNote(partial []string) string {
	return "Git: the check of the repositories under the writable roots is partial here, as it was before any command ran: " + listCapped(partial) + ". A repository there that a command makes or changes is not checked: look at any before running git in it (git add -A records one it finds as a submodule, which git status then enters)."
}

// gitNote says what appeared, for the model and the person.
func gitNote(news []string) string {
	return "Git: this appeared in a repository under the writable roots, and is not among the settings known to be harmless: it may make git run a program there, as the user, outside the sandbox (or say what could not be checked); check it before running git in that repository: " + listCapped(news) + "."
}

// listCapped joins at most maxNoteItems of items, escaped, and says how
// many more there are (a command that wrote ten thousand aliases made a
// note of a megabyte); the audit log, where one is kept, has them all.
func listCapped(items []string) string {
	if len(items) <= maxNoteItems {
		return joinEscaped(items)
	}
	return joinEscaped(items[:maxNoteItems]) + fmt.Sprintf("; and %d more like them (the audit log, where one is kept, lists them all; git config --list --show-origin shows a repository's settings)", len(items)-maxNoteItems)
}

// maxNoteItems bounds the things one git note lists.
const maxNoteItems = 50

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
