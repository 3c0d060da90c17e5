//go:build linux

package cli

import (
	"bufio"
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeGetent makes getent a script that logs its arguments (one line a
// call) in the returned file and runs body, and has nssHome read the
// given nsswitch.conf and passwd ("" for none); the answers kept are
// forgotten, before and after.
func fakeGetent(t *testing.T, body, nsswitch, passwd string) (log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(dir, "calls")
	script := filepath.Join(dir, "getent")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$*\" >> "+log+"\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if text != "" {
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	oldGetent, oldNss, oldPasswd := getent, nsswitchFile, passwdFile
	getent, nsswitchFile, passwdFile = script, file("nsswitch.conf", nsswitch), file("passwd", passwd)
	forget := func() {
		nssAnswers.mu.Lock()
		clear(nssAnswers.m)
		nssAnswers.mu.Unlock()
	}
	forget()
	t.Cleanup(func() { getent, nsswitchFile, passwdFile = oldGetent, oldNss, oldPasswd; forget() })
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

const (
	debianNSS = "# /etc/nsswitch.conf\n\npasswd:         files systemd\ngroup:          files systemd\nhosts: files dns\n"
	passwd    = "root:x:0:0:root:/root:/bin/bash\n# a comment\n\nalice:x:1000:1000:Alice,,,:/home/alice:/bin/bash\n"
	// The name services' answers: alice elsewhere, and an LDAP user.
	nssAnswersScript = `case "$3" in
alice|1000) echo 'alice:x:1000:1000::/nss/alice:/bin/sh';;
ldapuser|5000) echo 'ldapuser:*:5000:5000:L D:/home/ldap/ldapuser:/bin/sh';;
-dash) echo '-dash:*:5001:5001::/home/dash:/bin/sh';;
*) exit 2;;
esac`
)

func mustHome(t *testing.T, key string, byID bool, want string) {
	t.Helper()
	if home, err := nssHome(key, byID); err != nil || home != want {
		t.Fatalf("%q (by number: %v): %q, %v; want %q", key, byID, home, err, want)
	}
}

func mustUnknown(t *testing.T, key string) {
	t.Helper()
	home, err := nssHome(key, false)
	var unknown user.UnknownUserError
	if !errors.As(err, &unknown) {
		t.Fatalf("%q: %q, %v; want user.UnknownUserError", key, home, err)
	}
}

// Where glibc reads /etc/passwd first (passwd: files systemd), a user
// listed there is found there: getent is not started.
func TestNSSHomeFilesFirst(t *testing.T) {
	log := fakeGetent(t, nssAnswersScript, debianNSS, passwd)
	mustHome(t, "root", false, "/root")
	mustHome(t, "0", true, "/root")
	mustHome(t, "alice", false, "/home/alice")
	mustHome(t, "1000", true, "/home/alice")
	if c := calls(t, log); c != nil {
		t.Fatalf("getent was asked %q for users /etc/passwd lists", c)
	}
}

// passwd: files alone: a user /etc/passwd does not list is no one.
func TestNSSHomeFilesOnly(t *testing.T) {
	log := fakeGetent(t, nssAnswersScript, "# only the files\n  passwd:files\ngroup: files systemd\n", passwd)
	mustUnknown(t, "ldapuser")
	mustHome(t, "alice", false, "/home/alice")
	if c := calls(t, log); c != nil {
		t.Fatalf("getent was asked %q with passwd: files", c)
	}
}

// Where another source comes first (passwd: sss files), acts on what
// files finds, or no nsswitch.conf says, glibc's order is getent's: alice
// has the home the name services give, not the files'.
func TestNSSHomeOtherOrders(t *testing.T) {
	for _, nss := range []string{
		"passwd: sss files\n",
		"passwd: systemd files\n",
		"passwd: files [SUCCESS=continue] sss\n",
		"passwd: compat\n",
		"passwd: files\npasswd: sss files\n",
		"passwd: files\npasswd systemd\n", // glibc takes the last, colon or not
		"passwd: files # systemd\n",       // no comment to glibc: "#" and systemd are sources
		"passwd: files:systemd\n",
		"", // no nsswitch.conf
	} {
		log := fakeGetent(t, nssAnswersScript, nss, passwd)
		mustHome(t, "alice", false, "/nss/alice")
		mustHome(t, "1000", true, "/nss/alice")
		if c := calls(t, log); len(c) != 2 {
			t.Fatalf("%q: getent asked %q, want alice and 1000", nss, c)
		}
	}
}

// A line glibc may read otherwise than a strict reading (leading blanks,
// a number with blanks or zeros, no shell field, NIS's +/- lines) leaves
// the answer to getent for the names after it — and for every name not
// found before it.
func TestNSSHomeDoubtfulPasswd(t *testing.T) {
	for _, bad := range []string{
		" alice:x:1000:1000::/elsewhere:/bin/sh",
		"alice:x: 1000:1000::/elsewhere:/bin/sh",
		"alice:x:01000:1000::/elsewhere:/bin/sh",
		"alice:x:1000:1000::/elsewhere",
		"+alice::::::",
		"-alice:x:1000:1000::/elsewhere:/bin/sh",
		"alice:x:1000:1000::/elsewhere:/bin/sh:extra",
		"\ralice:x:1000:1000::/elsewhere:/bin/sh",
		"\falice:x:1000:1000::/elsewhere:/bin/sh",
		"\valice:x:1000:1000::/elsewhere:/bin/sh",
		"alice:x:1000:1000:\x00:/elsewhere:/bin/sh",
	} {
		file := "root:x:0:0:root:/root:/bin/bash\n" + bad + "\n" + passwd
		log := fakeGetent(t, nssAnswersScript, debianNSS, file)
		mustHome(t, "root", false, "/root") // before it: read
		mustHome(t, "alice", false, "/nss/alice")
		mustHome(t, "1000", true, "/nss/alice")
		mustUnknown(t, "nobody-anywhere")
		if c := calls(t, log); len(c) != 3 {
			t.Fatalf("%q: getent asked %q, want alice, 1000 and nobody-anywhere", bad, c)
		}
	}
}

// A user only the name services know (an LDAP user, say) gets the home
// getent gives, with the name after "--" (a name that begins with "-" is
// no option of getent's); an answer, known or not, is kept for a while.
func TestNSSHomeAsksGetentForOthers(t *testing.T) {
	log := fakeGetent(t, nssAnswersScript, debianNSS, passwd)
	for range 3 {
		mustHome(t, "ldapuser", false, "/home/ldap/ldapuser")
	}
	mustHome(t, "5000", true, "/home/ldap/ldapuser")
	mustHome(t, "-dash", false, "/home/dash")
	for range 2 {
		mustUnknown(t, "nobody-anywhere")
	}
	want := []string{"passwd -- ldapuser", "passwd -- 5000", "passwd -- -dash", "passwd -- nobody-anywhere"}
	if c := calls(t, log); strings.Join(c, "|") != strings.Join(want, "|") {
		t.Fatalf("getent calls %q, want %q (each key once)", c, want)
	}
}

// An answer is kept nssAnswerTTL, no longer: a user an offline LDAP did
// not know is found once it answers again (fresh-eyes review: the answer
// was kept for the server's life, and deny_read ~user/secret uncovered).
func TestNSSHomeAnswersExpire(t *testing.T) {
	state := filepath.Join(t.TempDir(), "online")
	log := fakeGetent(t, `if [ -e `+state+` ]; then echo 'ldapuser:*:5000:5000::/home/ldapuser:/bin/sh'; else exit 2; fi`, debianNSS, passwd)
	clock := fakeClock(t)
	mustUnknown(t, "ldapuser")
	if err := os.WriteFile(state, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	*clock = clock.Add(nssAnswerTTL - time.Millisecond)
	mustUnknown(t, "ldapuser") // still kept
	*clock = clock.Add(time.Millisecond)
	mustHome(t, "ldapuser", false, "/home/ldapuser")
	if c := calls(t, log); len(c) != 2 {
		t.Fatalf("getent asked %q, want twice", c)
	}
}

// fakeClock makes now a clock the test moves.
func fakeClock(t *testing.T) *time.Time {
	clock := time.Unix(1e9, 0)
	oldNow := now
	now = func() time.Time { return clock }
	t.Cleanup(func() { now = oldNow })
	return &clock
}

// A user found before keeps that home while the name services fail (an
// LDAP gone offline), and is asked again once they answer.
func TestNSSHomeKeptWhileServicesFail(t *testing.T) {
	state := filepath.Join(t.TempDir(), "offline")
	log := fakeGetent(t, `if [ -e `+state+` ]; then exit 1; fi; echo 'ldapuser:*:5000:5000::/home/ldapuser:/bin/sh'`, debianNSS, passwd)
	clock := fakeClock(t)
	mustHome(t, "ldapuser", false, "/home/ldapuser")
	if err := os.WriteFile(state, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		*clock = clock.Add(nssAnswerTTL)
		mustHome(t, "ldapuser", false, "/home/ldapuser")
	}
	if c := calls(t, log); len(c) != 4 {
		t.Fatalf("getent asked %q, want once a %v", c, nssAnswerTTL)
	}
}

// A name getent would read as a user's number (getent passwd 1001 gives
// uid 1001, while git asks for the user named "1001"), or longer than a
// user name can be, is not asked: an error, which the plan tells.
func TestNSSHomeNamesGetentCannotAsk(t *testing.T) {
	log := fakeGetent(t, nssAnswersScript, "passwd: sss files\n", passwd)
	for _, key := range []string{"1001", "0", " 0", "+0", "-1", "00", strings.Repeat("a", 256)} {
		if home, err := nssHome(key, false); err == nil {
			t.Errorf("%q: home %q, want an error", key, home)
		}
	}
	mustHome(t, "5000", true, "/home/ldap/ldapuser") // a number, asked as one
	mustUnknown(t, "1x")                             // a name, asked as one
	if c := calls(t, log); strings.Join(c, "|") != "passwd -- 5000|passwd -- 1x" {
		t.Fatalf("getent asked %q", c)
	}
}

// Plans asking one name at once start one getent.
func TestNSSHomeOneQuestionAtATime(t *testing.T) {
	log := fakeGetent(t, "sleep 0.3\n"+nssAnswersScript, debianNSS, passwd)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			if home, err := nssHome("ldapuser", false); err != nil || home != "/home/ldap/ldapuser" {
				errs <- errors.Join(err, errors.New("home "+home))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if c := calls(t, log); len(c) != 1 {
		t.Fatalf("getent started %d times for one name asked at once, want once", len(c))
	}
}

// The entry the name services give for a name is git's, whatever name it
// has (SSSD answers alice@example.com for alice).
func TestNSSHomeTakesTheServicesEntry(t *testing.T) {
	fakeGetent(t, "echo 'alice@example.com:*:70000:70000::/home/example.com/alice:/bin/sh'", "passwd: sss files\n", passwd)
	mustHome(t, "Alice", false, "/home/example.com/alice")
}

// An answer that is no passwd entry, a getent that fails, or one that
// does not answer in time is an error (the plan says it cannot find that
// home), kept as an answer is: a name service that does not answer holds
// one question, not each plan's (fresh-eyes review: 384 s a command).
func TestNSSHomeBadAnswers(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"not an entry", "echo hello", "not a passwd entry"},
		{"too few fields", "echo 'a:b:1:1::/x'", "not a passwd entry"},
		{"a failure", "exit 1", "exit status 1"},
		{"no answer", "exec sleep 30", "signal: killed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := fakeGetent(t, c.body, debianNSS, passwd)
			old := getentTimeout
			getentTimeout = 300 * time.Millisecond
			defer func() { getentTimeout = old }()
			clock := fakeClock(t)
			for i := range 3 {
				if i == 2 {
					*clock = clock.Add(nssAnswerTTL)
				}
				home, err := nssHome("someone", false)
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("home %q, error %v; want one that says %q", home, err, c.want)
				}
			}
			if n := len(calls(t, log)); n != 2 {
				t.Fatalf("getent asked %d times, want 2 (a failure kept %v, no longer)", n, nssAnswerTTL)
			}
		})
	}
}

// A key no passwd entry can hold is no one's, without asking.
func TestNSSHomeImpossibleKeys(t *testing.T) {
	log := fakeGetent(t, "echo 'a:b:0:0::/:/bin/sh'", "passwd: sss\n", passwd)
	for _, key := range []string{"", "a:b", "a\nroot", "a\x00"} {
		if home, err := nssHome(key, false); err == nil {
			t.Fatalf("%q: home %q, want an unknown user", key, home)
		}
	}
	if c := calls(t, log); c != nil {
		t.Fatalf("getent asked %q", c)
	}
}

// On this machine, with its own files and getent: every user /etc/passwd
// lists has the home getent gives, by name and by number.
func TestNSSHomeAsGetentHere(t *testing.T) {
	if _, err := os.Stat(foundGetent()); err != nil {
		t.Skipf("no getent here (%q): %v", getents, err)
	}
	f, err := os.Open(passwdFile)
	if err != nil {
		t.Skipf("no %s here: %v", passwdFile, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) != 7 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		for _, k := range []struct {
			key  string
			byID bool
		}{{fields[0], false}, {fields[2], true}} {
			want, err := askGetent(k.key, k.byID)
			if err != nil || !want.known {
				t.Fatalf("getent passwd %s: %+v, %v", k.key, want, err)
			}
			mustHome(t, k.key, k.byID, want.home)
		}
		n++
	}
	if n == 0 {
		t.Fatalf("no user in %s", passwdFile)
	}
	if a, err := askGetent("no-such-user-here", false); err != nil || a.known {
		t.Fatalf("an unknown user: %+v, %v", a, err)
	}
}

// A getent that does not answer in time is killed with what it started
// (its process group): nothing of it is left running.
func TestNSSHomeTimeoutKillsItsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	fakeGetent(t, "sleep 30 & echo $! > "+pidFile+"; wait", debianNSS, passwd)
	old := getentTimeout
	getentTimeout = 300 * time.Millisecond
	t.Cleanup(func() { getentTimeout = old })
	if _, err := nssHome("someone", false); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("a getent that does not answer: %v, want it killed", err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	stat := "/proc/" + strings.TrimSpace(string(b)) + "/stat"
	for range 100 {
		s, err := os.ReadFile(stat)
		if err != nil {
			return // gone
		}
		if f := strings.Fields(string(s)); len(f) > 2 && f[2] == "Z" {
			return // dead, its reaper not yet there
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("what the getent started still runs (%s)", stat)
}

// localHome answers, with no question to a name service, just where
// nssHome would read its answer from /etc/passwd; elsewhere it leaves the
// name to nssHome.
func TestLocalHomeAsNSSHomeReadsFiles(t *testing.T) {
	for _, c := range []struct {
		nss, name, home string
		found, answered bool
	}{
		{debianNSS, "alice", "/home/alice", true, true},
		{debianNSS, "ldapuser", "", false, false}, // systemd, after files, may know it
		{"passwd: files\n", "ldapuser", "", false, true},
		{"passwd: sss files\n", "alice", "", false, false},
		{"passwd: files [SUCCESS=continue] sss\n", "alice", "", false, false},
		{debianNSS, "", "", false, false},
		{debianNSS, strings.Repeat("a", 300), "", false, false},
	} {
		log := fakeGetent(t, nssAnswersScript, c.nss, passwd)
		home, found, answered := localHome(c.name)
		if home != c.home || found != c.found || answered != c.answered {
			t.Errorf("%q, %.20q: %q %v %v; want %q %v %v", c.nss, c.name, home, found, answered, c.home, c.found, c.answered)
		}
		if got := calls(t, log); got != nil {
			t.Errorf("%q, %.20q: getent asked %q", c.nss, c.name, got)
		}
		if answered && found {
			mustHome(t, c.name, false, home)
		}
	}
	// A doubtful line before the name: not answered.
	fakeGetent(t, nssAnswersScript, debianNSS, " root:x:0:0:root:/root:/bin/bash\n"+passwd)
	if _, _, answered := localHome("alice"); answered {
		t.Errorf("alice answered after a line glibc may read otherwise")
	}
}
