//go:build linux

package cli

import (
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeGetent makes getent a script that logs its arguments (one line a
// call) in the returned file and runs body; the answers kept are
// forgotten, before and after.
func fakeGetent(t *testing.T, body string) (log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(dir, "calls")
	script := filepath.Join(dir, "getent")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$*\" >> "+log+"\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := getent
	getent = script
	forget := func() {
		nssAnswers.mu.Lock()
		clear(nssAnswers.m)
		nssAnswers.mu.Unlock()
	}
	forget()
	t.Cleanup(func() { getent = old; forget() })
	return log
}

func calls(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// A user /etc/passwd lists is found there; getent is not started.
func TestNSSHomeFilesFirst(t *testing.T) {
	log := fakeGetent(t, "exit 1")
	home, err := nssHome("root", false)
	if err != nil || home != "/root" {
		t.Fatalf("root: %q, %v; want /root", home, err)
	}
	if home, err := nssHome("0", true); err != nil || home != "/root" {
		t.Fatalf("uid 0: %q, %v; want /root", home, err)
	}
	if c := calls(t, log); c != nil {
		t.Fatalf("getent was asked %q for users /etc/passwd lists", c)
	}
}

// A user only the name services know (an LDAP user, say) gets the home
// getent gives, asked once for the program's life, with the name after
// "--" (a name that begins with "-" is no option of getent's).
func TestNSSHomeAsksGetentForOthers(t *testing.T) {
	log := fakeGetent(t, `case "$3" in
ldapuser) echo 'ldapuser:*:5000:5000:L D:/home/ldap/ldapuser:/bin/sh';;
5000) echo 'ldapuser:*:5000:5000:L D:/home/ldap/ldapuser:/bin/sh';;
-dash) echo '-dash:*:5001:5001::/home/dash:/bin/sh';;
*) exit 2;;
esac`)
	for range 3 {
		if home, err := nssHome("ldapuser", false); err != nil || home != "/home/ldap/ldapuser" {
			t.Fatalf("ldapuser: %q, %v", home, err)
		}
	}
	if home, err := nssHome("5000", true); err != nil || home != "/home/ldap/ldapuser" {
		t.Fatalf("uid 5000: %q, %v", home, err)
	}
	if home, err := nssHome("-dash", false); err != nil || home != "/home/dash" {
		t.Fatalf("-dash: %q, %v", home, err)
	}
	for range 2 {
		_, err := nssHome("nobody-anywhere", false)
		var unknown user.UnknownUserError
		if !errors.As(err, &unknown) {
			t.Fatalf("an unknown user: %v, want user.UnknownUserError", err)
		}
	}
	want := []string{"passwd -- ldapuser", "passwd -- 5000", "passwd -- -dash", "passwd -- nobody-anywhere"}
	if c := calls(t, log); strings.Join(c, "|") != strings.Join(want, "|") {
		t.Fatalf("getent calls %q, want %q (each key once)", c, want)
	}
}

// An answer that is not the entry asked for, a getent that fails, or one
// that does not answer in time is an error (the plan says it cannot find
// that home), and is asked again next time.
func TestNSSHomeBadAnswers(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"another user's entry", "echo 'mallory:x:0:0::/:/bin/sh'", "not a passwd entry for it"},
		{"not an entry", "echo hello", "not a passwd entry for it"},
		{"a failure", "exit 1", "exit status 1"},
		{"no answer", "exec sleep 30", "signal: killed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := fakeGetent(t, c.body)
			old := getentTimeout
			getentTimeout = 300 * time.Millisecond
			defer func() { getentTimeout = old }()
			for range 2 {
				home, err := nssHome("someone", false)
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("home %q, error %v; want one that says %q", home, err, c.want)
				}
			}
			if n := len(calls(t, log)); n != 2 {
				t.Fatalf("getent asked %d times, want 2 (a failure is not kept)", n)
			}
		})
	}
}

// A key no passwd entry can hold is no one's, without asking.
func TestNSSHomeImpossibleKeys(t *testing.T) {
	log := fakeGetent(t, "echo 'a:b:0:0::/:/bin/sh'")
	for _, key := range []string{"", "a:b", "a\nroot", "a\x00"} {
		if home, err := nssHome(key, false); err == nil {
			t.Fatalf("%q: home %q, want an unknown user", key, home)
		}
	}
	if c := calls(t, log); c != nil {
		t.Fatalf("getent asked %q", c)
	}
}

// The real getent, for a user the files list: the same home os/user gives.
func TestNSSHomeRealGetent(t *testing.T) {
	if _, err := os.Stat(getent); err != nil {
		t.Skipf("no %s here: %v", getent, err)
	}
	a, err := askGetent("root", false)
	if err != nil || !a.known || a.home != "/root" {
		t.Fatalf("getent passwd root: %+v, %v", a, err)
	}
	if a, err := askGetent("no-such-user-here", false); err != nil || a.known {
		t.Fatalf("an unknown user: %+v, %v", a, err)
	}
}
