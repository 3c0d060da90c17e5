package sandbox

import (
	"errors"
	"fmt"
	"os/user"
	"strings"
	"sync"
	"time"
)

// UserHome finds the home of a user in the password database: by name, or
// (byID) by number. It is os/user, which asks the system's name services
// (NSS: files, LDAP, systemd, …) in a program built with cgo's lookup. A
// program built with osusergo (scripts/build's static binary) reads only
// /etc/passwd through os/user: it sets UserHome to a lookup that also asks
// the name services (getent), so that a home git finds (core.hooksPath =
// ~name/…) or a deny_read entry names (~name/…) is the home the plan
// covers. The home is as the database gives it (callers check it).
var UserHome = DatabaseHome

// unknownUser: err says the password database has no such user (rather
// than that it could not be asked).
func unknownUser(err error) bool {
	var name user.UnknownUserError
	var id user.UnknownUserIdError
	return errors.As(err, &name) || errors.As(err, &id)
}

// DatabaseHome is UserHome through os/user alone.
func DatabaseHome(key string, byID bool) (string, error) {
	var u *user.User
	var err error
	if byID {
		u, err = user.LookupId(key)
	} else {
		u, err = user.Lookup(key)
	}
	if err != nil {
		return "", err
	}
	return u.HomeDir, nil
}

// maxHomeNames bounds the users whose homes one plan, or one survey of
// git's state, looks up for the ~name/ words of git's configuration, which
// a command writes: each may cost a question to a name service (a start of
// getent in the static build, a call to LDAP), and a configuration naming
// thousands held every later command for seconds (fresh-eyes review of
// the static build). No configuration a person writes names that many;
// past the bound the word is left as it is, and that is told (see
// homeMemo.told). So once the lookups have taken maxHomeTime, or one
// failed: a name service that does not answer holds each name until its
// timeout.
const (
	maxHomeNames = 32
	maxHomeTime  = time.Second
)

// homeMemo is what a fence's lookups of users' homes found: each name is
// asked once per plan or survey, and at most maxHomeNames of them.
type homeMemo struct {
	mu      sync.Mutex
	answers map[string]homeAnswer
	spent   time.Duration   // in lookups
	skipped map[string]bool // the names past the bound (at most maxSkipped)
	first   []string        // the first three of them, to tell
	failed  []string        // the lookups that failed (at most three), to tell
	// local counts the names LocalHome was asked; localAnswers are its
	// answers, kept apart from those counted.
	local        int
	localAnswers map[string]homeAnswer
}

// maxSkipped bounds the names past maxHomeNames kept, to count them.
const maxSkipped = 4096

type homeAnswer struct {
	home string
	err  error
}

// LocalHome, where set, answers for the user name from what glibc reads
// first and takes as it finds it, a question to no name service
// (/etc/passwd, where nsswitch.conf lists "files" first): answered is
// false where it cannot say, found false for a user it says there is
// none of. Its answers are not counted among maxHomeNames: a
// configuration that names 32 users no file knows left the home of one
// /etc/passwd holds unexpanded, and its hooks uncovered (fresh-eyes
// review). At most maxLocalHomes are asked a plan.
var LocalHome func(name string) (home string, found, answered bool)

// maxLocalHomes bounds the names LocalHome is asked for one plan or
// survey (each reads two files).
const maxLocalHomes = 1024

// userHome is UserHome(name, false), asked once per name and, past what
// LocalHome answers, for at most maxHomeNames names: past them, an error
// (the word stays unexpanded).
func (m *homeMemo) userHome(name string) (string, error) {
	m.mu.Lock()
	if l, known := m.localAnswers[name]; known {
		m.mu.Unlock()
		return l.home, l.err
	}
	a, ok := m.answers[name]
	if !ok && LocalHome != nil && m.local < maxLocalHomes {
		m.local++
		m.mu.Unlock()
		home, found, answered := LocalHome(name)
		if answered {
			var err error
			if !found {
				err = user.UnknownUserError(name)
			}
			m.mu.Lock()
			if m.localAnswers == nil {
				m.localAnswers = map[string]homeAnswer{}
			}
			m.localAnswers[name] = homeAnswer{home, err}
			m.mu.Unlock()
			return home, err
		}
		m.mu.Lock()
		a, ok = m.answers[name]
	}
	if !ok && (len(m.answers) >= maxHomeNames || m.spent >= maxHomeTime) {
		if !m.skipped[name] && len(m.skipped) < maxSkipped {
			if m.skipped == nil {
				m.skipped = map[string]bool{}
			}
			m.skipped[name] = true
			if len(m.first) < 3 {
				m.first = append(m.first, fmt.Sprintf("%.64q", "~"+name))
			}
		}
		m.mu.Unlock()
		return "", fmt.Errorf("sandbox: not looked up: more than %d users' homes named, or %v spent", maxHomeNames, maxHomeTime)
	}
	m.mu.Unlock()
	if ok {
		return a.home, a.err
	}
	// Asked without the lock (a name service may take seconds); a name
	// asked twice at once is asked twice, and counted once.
	start := time.Now()
	home, err := UserHome(name, false)
	m.mu.Lock()
	if m.answers == nil {
		m.answers = map[string]homeAnswer{}
	}
	if _, again := m.answers[name]; !again {
		took := time.Since(start)
		m.spent += took
		if err != nil && !unknownUser(err) {
			// The word stays as it is, while git, once the name
			// services answer, expands it: told. And after a slow
			// failure (a name service that timed out), no other name
			// is asked: it would hold each (fresh-eyes review: 10 s a
			// command).
			if len(m.failed) < 3 {
				m.failed = append(m.failed, fmt.Sprintf("%.64q: %.200v", "~"+name, err))
			}
			if took >= maxHomeTime/4 {
				m.spent = max(m.spent, maxHomeTime)
			}
		}
	}
	m.answers[name] = homeAnswer{home, err}
	m.mu.Unlock()
	return home, err
}

// told is the item that says which names were not looked up ("" when
// none): its text changes with their number, so a command that adds some
// is told.
func (m *homeMemo) told() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	if len(m.failed) > 0 {
		out = append(out, fmt.Sprintf("the homes of users git's configuration names (~name/) could not be looked up (%s)", strings.Join(m.failed, "; ")))
	}
	if len(m.skipped) > 0 {
		more := fmt.Sprint(len(m.skipped))
		if len(m.skipped) == maxSkipped {
			more = "at least " + more
		}
		out = append(out, fmt.Sprintf("git's configuration names more users' homes (~name/) than are looked up (%d, or %v of lookups): %s more were not looked up (%s, …)", maxHomeNames, maxHomeTime, more, strings.Join(m.first, ", ")))
	}
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, "; ") + ": what git would find there (hooks, included files, programs) is not covered or told (read the configuration before running git there)"
}

// expand is expand for git's configuration: the homes of ~user/ through
// the fence's memo (f may be nil: no bound).
func (f *fence) expand(p, home string) string {
	if f == nil {
		return expand(p, home)
	}
	return expandWith(p, home, f.homes.userHome)
}
