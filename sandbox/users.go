package sandbox

import "os/user"

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
