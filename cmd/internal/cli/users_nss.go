//go:build linux

package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"os/user"
	"strings"
	"sync"
	"time"

	"github.com/unified-exec/unified-exec/ptyrun"
	"github.com/unified-exec/unified-exec/sandbox"
)

// Built with osusergo (scripts/build's static binary, which loads no
// shared library and so no NSS module), os/user reads /etc/passwd alone: a
// user the system's other name services know (LDAP, SSSD, systemd's
// dynamic users) would have no home here, while git, which asks them,
// expands ~name all the same. The plan's homes are the ones the name
// services give: a user /etc/passwd does not list is asked of getent
// (nssHome, which users_osusergo.go makes sandbox.UserHome).

// getent is the program that asks the name services (a variable for the
// tests); by its path, whatever PATH says.
var getent = "/usr/bin/getent"

// getentTimeout bounds one question (a name service that does not
// answer); a variable for the tests.
var getentTimeout = 5 * time.Second

// nssAnswers keeps getent's answers (a name asked at each plan costs one
// start of getent for the program's life); at most maxNSSAnswers, past
// which each question is asked anew.
var nssAnswers = struct {
	mu sync.Mutex
	m  map[string]nssAnswer
}{m: map[string]nssAnswer{}}

const maxNSSAnswers = 1024

type nssAnswer struct {
	home  string
	known bool
}

// nssHome is sandbox.UserHome through /etc/passwd, then getent.
func nssHome(key string, byID bool) (string, error) {
	home, err := sandbox.DatabaseHome(key, byID)
	if err == nil {
		return home, nil
	}
	if !unknownUser(err) {
		return "", err
	}
	cacheKey := "name " + key
	if byID {
		cacheKey = "id " + key
	}
	nssAnswers.mu.Lock()
	a, ok := nssAnswers.m[cacheKey]
	nssAnswers.mu.Unlock()
	if !ok {
		if a, err = askGetent(key, byID); err != nil {
			return "", err
		}
		nssAnswers.mu.Lock()
		if len(nssAnswers.m) < maxNSSAnswers {
			nssAnswers.m[cacheKey] = a
		}
		nssAnswers.mu.Unlock()
	}
	if !a.known {
		if byID {
			return "", fmt.Errorf("user: unknown userid %s", key)
		}
		return "", user.UnknownUserError(key)
	}
	return a.home, nil
}

// unknownUser: err says the user is not in /etc/passwd.
func unknownUser(err error) bool {
	var name user.UnknownUserError
	var id user.UnknownUserIdError
	return errors.As(err, &name) || errors.As(err, &id)
}

// askGetent asks the name services for the passwd entry of key (a name,
// or a number when byID). getent exits 2 for a key they do not know.
func askGetent(key string, byID bool) (nssAnswer, error) {
	if key == "" || strings.ContainsAny(key, ":\n\x00") {
		return nssAnswer{}, nil // no entry can have it
	}
	ctx, cancel := context.WithTimeout(context.Background(), getentTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, getent, "passwd", "--", key)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.WaitDelay = time.Second // past the kill, for what it may have left
	out := &cappedBuffer{max: 64 << 10}
	cmd.Stdout = out
	err := ptyrun.RunOwned(cmd)
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 2 && ctx.Err() == nil {
		return nssAnswer{}, nil
	}
	if err != nil {
		return nssAnswer{}, fmt.Errorf("asking the name services (%s passwd %s): %w", getent, key, err)
	}
	line, _, _ := strings.Cut(out.String(), "\n")
	// name:password:uid:gid:gecos:home:shell
	f := strings.Split(line, ":")
	if len(f) != 7 || byID && f[2] != key || !byID && f[0] != key {
		return nssAnswer{}, fmt.Errorf("asking the name services (%s passwd %s): not a passwd entry for it: %q", getent, key, line)
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
