package sandbox

import (
	"fmt"
	"os/user"
	"strings"
	"sync"
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
// homeMemo.told).
const maxHomeNames = 32

// homeMemo is what a fence's lookups of users' homes found: each name is
// asked once per plan or survey, and at most maxHomeNames of them.
type homeMemo struct {
	mu      sync.Mutex
	answers map[string]homeAnswer
	skipped map[string]bool // the names past the bound (at most maxSkipped)
	first   []string        // the first three of them, to tell
}

// maxSkipped bounds the names past maxHomeNames kept, to count them.
const maxSkipped = 4096

type homeAnswer struct {
	home string
	err  error
}

// userHome is UserHome(name, false), asked once per name and for at most
// maxHomeNames names: past them, an error (the word stays unexpanded).
func (m *homeMemo) userHome(name string) (string, error) {
	m.mu.Lock()
	a, ok := m.answers[name]
	if !ok && len(m.answers) >= maxHomeNames {
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
		return "", fmt.Errorf("sandbox: not looked up: more than %d users' homes named", maxHomeNames)
	}
	m.mu.Unlock()
	if ok {
		return a.home, a.err
	}
	// Asked without the lock (a name service may take seconds); a name
	// asked twice at once is asked twice, and counted once.
	home, err := UserHome(name, false)
	m.mu.Lock()
	if m.answers == nil {
		m.answers = map[string]homeAnswer{}
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
	if len(m.skipped) == 0 {
		return ""
	}
	more := fmt.Sprint(len(m.skipped))
	if len(m.skipped) == maxSkipped {
		more = "at least " + more
	}
	return fmt.Sprintf("git's configuration names more than %d users' homes (~name/): %s more were not looked up (%s, …), so what git would find there (hooks, included files, programs) is not covered or told (read the configuration before running git there)", maxHomeNames, more, strings.Join(m.first, ", "))
}

// expand is expand for git's configuration: the homes of ~user/ through
// the fence's memo (f may be nil: no bound).
func (f *fence) expand(p, home string) string {
	if f == nil {
		return expand(p, home)
	}
	return expandWith(p, home, f.homes.userHome)
}
