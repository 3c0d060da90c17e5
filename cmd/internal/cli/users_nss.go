//go:build linux

package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/unified-exec/unified-exec/ptyrun"
	"github.com/unified-exec/unified-exec/sandbox"
)

// Built with osusergo (scripts/build's static binary, which loads no
// shared library and so no NSS module), os/user reads /etc/passwd alone,
// with a parser of its own: a user the system's other name services know
// (LDAP, SSSD, systemd's dynamic users) would have no home, one listed by
// them before the files (passwd: sss files) the files' home, and a line
// glibc reads differently another home, while git, which asks glibc,
// expands ~name as glibc says. nssHome, which users_osusergo.go makes
// sandbox.UserHome, gives glibc's answer: from /etc/passwd where that is
// what glibc would read first and the file holds nothing glibc could read
// otherwise, else from getent (fresh-eyes review of the static build).

// The files nssHome reads, and getent, the program that asks the name
// services ("": the first of getents there is, by its path whatever PATH
// says); variables for the tests.
var (
	nsswitchFile = "/etc/nsswitch.conf"
	passwdFile   = "/etc/passwd"
	getent       = ""
)

// getents are where systems keep getent: Debian and most others, older
// layouts, NixOS.
var getents = []string{"/usr/bin/getent", "/bin/getent", "/run/current-system/sw/bin/getent"}

// foundGetent is the first of getents that exists (the first, if none
// does: the error of its start names it), looked for once.
var foundGetent = sync.OnceValue(func() string {
	for _, p := range getents {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return getents[0]
})

// getentTimeout bounds one question (a name service that does not
// answer); a variable for the tests.
var getentTimeout = 5 * time.Second

// nssAnswerTTL is how long an answer of getent's is kept: a user that a
// name service did not know while it was offline, or one whose home
// changed, is asked again after it. A plan asks each name once (the
// sandbox bounds how many); the server's plans within it ask none.
var nssAnswerTTL = 5 * time.Second

// maxNSSAnswers bounds the answers kept; past it, the expired are
// dropped, and a question asked while it is still full is not kept.
const maxNSSAnswers = 4096

// nssAnswers are getent's answers and the questions in flight: a name
// asked by two plans at once starts one getent.
var nssAnswers = struct {
	mu sync.Mutex
	m  map[string]*nssQuestion
}{m: map[string]*nssQuestion{}}

type nssQuestion struct {
	done   chan struct{} // closed once answered
	answer nssAnswer
	err    error
	at     time.Time
}

type nssAnswer struct {
	home  string
	known bool
}

// now is the clock of the answers' age; a variable for the tests.
var now = time.Now

// maxNameLen bounds the names asked: a command chooses those of git's
// configuration, and each is kept (fresh-eyes review: names of 128 KiB
// held 32 MB for 256 of them). Linux's LOGIN_NAME_MAX is 256 with its NUL.
const maxNameLen = 255

// nssHome is sandbox.UserHome as glibc answers it.
func nssHome(key string, byID bool) (string, error) {
	if key == "" || strings.ContainsAny(key, ":\n\x00") {
		return "", unknownUser(key, byID) // no entry can have it
	}
	if len(key) > maxNameLen {
		return "", fmt.Errorf("user name of %d bytes, longer than %d: not looked up", len(key), maxNameLen)
	}
	first, only := filesFirst()
	if first {
		home, found, sure := filesHome(key, byID)
		switch {
		case sure && found:
			return home, nil
		case sure && only:
			return "", unknownUser(key, byID)
		}
	}
	if !byID && getentReadsAsNumber(key) {
		// getent passwd 1001 asks for the user numbered 1001; git asks
		// for the one named so (an LDAP user "1001"): no question of
		// getent's gives git's answer (fresh-eyes review).
		return "", fmt.Errorf("user name %q is a number to getent, which would give the user with that number: its home cannot be looked up here", key)
	}
	a, err := askCached(key, byID)
	if err != nil {
		return "", err
	}
	if !a.known {
		return "", unknownUser(key, byID)
	}
	return a.home, nil
}

// localHome is sandbox.LocalHome: nssHome's answer where /etc/passwd
// gives it, glibc reading that file first and taking what it finds there
// (a user it does not hold, where nsswitch.conf lists nothing after the
// files); answered false where the name services would be asked.
func localHome(name string) (home string, found, answered bool) {
	if name == "" || len(name) > maxNameLen || strings.ContainsAny(name, ":\n\x00") {
		return "", false, false
	}
	first, only := filesFirst()
	if !first {
		return "", false, false
	}
	home, found, sure := filesHome(name, false)
	if !sure || !found && !only {
		return "", false, false
	}
	return home, found, true
}

func init() { sandbox.LocalHome = localHome }

func unknownUser(key string, byID bool) error {
	if n, err := strconv.Atoi(key); byID && err == nil {
		return user.UnknownUserIdError(n)
	} else if byID {
		return fmt.Errorf("user: unknown userid %s", key)
	}
	return user.UnknownUserError(key)
}

// filesFirst: /etc/nsswitch.conf has glibc read the passwd database from
// /etc/passwd first, and take what it finds there (no action follows
// "files"); only: from nothing else. It reads the file as glibc does (a
// line's first word is its database, with or without a colon after it;
// the last line of a database is the one taken; "#" starts a comment only
// at a line's start), and leaves to getent anything it is not sure of: no
// such file, another source first, two passwd lines, a "#" or ":" among
// the sources.
func filesFirst() (first, only bool) {
	b, err := os.ReadFile(nsswitchFile)
	if err != nil {
		return false, false
	}
	var sources []string
	lines := 0
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimLeft(line, cSpace)
		end := strings.IndexAny(line, cSpace+":")
		if end <= 0 || line[:end] != "passwd" {
			continue
		}
		lines++
		rest := strings.TrimLeft(line[end:], cSpace+":")
		if strings.ContainsAny(rest, ":#\x00") {
			return false, false
		}
		sources = strings.FieldsFunc(rest, func(r rune) bool { return r < 0x80 && strings.ContainsRune(cSpace, r) })
	}
	if lines != 1 || len(sources) == 0 || sources[0] != "files" {
		return false, false
	}
	if len(sources) > 1 && strings.HasPrefix(sources[1], "[") {
		return false, false
	}
	return true, len(sources) == 1
}

// cSpace are the bytes C's isspace takes, in the C locale.
const cSpace = " \t\n\v\f\r"

// getentReadsAsNumber: getent passwd takes key for a user's number (what
// strtoul reads to its end, in base 10).
func getentReadsAsNumber(key string) bool {
	k := strings.TrimLeft(key, cSpace)
	if k != "" && (k[0] == '+' || k[0] == '-') {
		k = k[1:]
	}
	return k != "" && strings.Trim(k, "0123456789") == ""
}

// filesHome finds key in /etc/passwd as glibc's files source would: the
// first entry with that name (or number). sure is false where the file
// holds, before it (or anywhere, when none has it), a line this reading
// and glibc's might take differently: anything but an empty line, a
// comment, or seven fields with a name and plain numbers, and no NUL
// (glibc skips leading blanks, "\r" and "\f" among them, reads " 1000"
// as 1000, takes a line with no shell, ends a field at a NUL).
func filesHome(key string, byID bool) (home string, found, sure bool) {
	b, err := os.ReadFile(passwdFile)
	if err != nil {
		return "", false, false
	}
	if byID && !plainNumber(key) {
		return "", false, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Split(line, ":")
		if len(f) != 7 || f[0] == "" || strings.ContainsAny(f[0][:1], "+-"+cSpace) || strings.ContainsRune(line, 0) || !plainNumber(f[2]) || !plainNumber(f[3]) {
			return "", false, false
		}
		if byID && f[2] == key || !byID && f[0] == key {
			return f[5], true, true
		}
	}
	return "", false, true
}

// plainNumber: s is a number as strconv.Itoa writes it (and nothing glibc
// reads otherwise), below 2³².
func plainNumber(s string) bool {
	if s == "" || len(s) > 10 || len(s) > 1 && s[0] == '0' {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(s) < 10 || s <= "4294967295"
}

// askCached is askGetent, its answers kept for nssAnswerTTL, one question
// at a time a key. A failure is kept as long (a name service that does not
// answer holds one question a key, not each plan's); a key answered before
// keeps that answer while the name services fail.
func askCached(key string, byID bool) (nssAnswer, error) {
	ck := "name " + key
	if byID {
		ck = "id " + key
	}
	nssAnswers.mu.Lock()
	q := nssAnswers.m[ck]
	var last *nssQuestion // answered, expired
	if q != nil {
		select {
		case <-q.done:
			if now().Sub(q.at) >= nssAnswerTTL {
				last, q = q, nil
			}
		default: // in flight: its answer is this one's
		}
	}
	asker := q == nil
	if asker {
		q = &nssQuestion{done: make(chan struct{})}
		if len(nssAnswers.m) >= maxNSSAnswers/4 {
			for k, old := range nssAnswers.m {
				select {
				case <-old.done:
					if now().Sub(old.at) >= nssAnswerTTL {
						delete(nssAnswers.m, k)
					}
				default:
				}
			}
		}
		if len(nssAnswers.m) < maxNSSAnswers {
			nssAnswers.m[ck] = q
		}
	}
	nssAnswers.mu.Unlock()
	if asker {
		a, err := askGetent(key, byID)
		if err != nil && last != nil && last.err == nil {
			a, err = last.answer, nil
		}
		q.answer, q.err, q.at = a, err, now()
		close(q.done)
	}
	<-q.done
	return q.answer, q.err
}

// askGetent asks the name services for the passwd entry of key (a name,
// or a number when byID), as getpwnam (getpwuid) answers git: the entry
// they give is taken, whatever name it has (SSSD answers alice@domain
// for alice, and ALICE as alice). getent exits 2 for a key they do not
// know.
func askGetent(key string, byID bool) (nssAnswer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), getentTimeout)
	defer cancel()
	prog := getent
	if prog == "" {
		prog = foundGetent()
	}
	cmd := exec.CommandContext(ctx, prog, "passwd", "--", key)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	// In a group of its own, killed whole at the timeout (what a module
	// started goes too).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 100 * time.Millisecond // past the kill, for an output still held
	out := &cappedBuffer{max: 64 << 10}
	cmd.Stdout = out
	err := ptyrun.RunOwned(cmd)
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 2 && ctx.Err() == nil {
		return nssAnswer{}, nil
	}
	if err != nil {
		return nssAnswer{}, fmt.Errorf("asking the name services (%s passwd %s): %w", prog, key, err)
	}
	line, _, _ := strings.Cut(out.String(), "\n")
	// name:password:uid:gid:gecos:home:shell
	f := strings.Split(line, ":")
	if len(f) != 7 {
		return nssAnswer{}, fmt.Errorf("asking the name services (%s passwd %s): not a passwd entry: %q", prog, key, line)
	}
	return nssAnswer{home: f[5], known: true}, nil
}

// cappedBuffer keeps the first max bytes written to it.
type cappedBuffer struct {
	bytes.Buffer
	max int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
