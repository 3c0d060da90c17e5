//go:build linux

package unifiedexec

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var login = func() *bool { b := true; return &b }()

// noisyHome is a HOME whose login profile (.bash_profile → .bashrc, and
// .profile for sh) prints to stdout and stderr, sets and unsets
// variables, defines a function and an alias, and turns an option on; it
// counts its runs in a file beside it.
func noisyHome(t *testing.T) (home, runs string) {
	t.Helper()
	home = t.TempDir()
	runs = filepath.Join(t.TempDir(), "runs")
	rc := `echo "rc: stdout noise"
echo "mktemp: failed to create file via template '$HOME/.pyenv/shims/.pyenv-shim.XXXX': Permission denied" >&2
echo run >> ` + shQuote(runs) + `
export SNAP_VAR="it's \"quoted\" $HOME
and two lines"
export PATH="$HOME/bin:$PATH"
export PAGER=less
unset SNAP_GONE
greet() { echo "hello from $1"; }
export -f greet 2>/dev/null
shopt -s expand_aliases 2>/dev/null
alias ll='echo aliased'
set -o noclobber
`
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(home, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".bashrc", rc)
	write(".bash_profile", ". ~/.bashrc\n")
	write(".profile", strings.ReplaceAll(strings.ReplaceAll(rc, "export -f greet 2>/dev/null\n", ""), "shopt -s expand_aliases 2>/dev/null\n", ""))
	write(".zshenv", strings.ReplaceAll(strings.ReplaceAll(rc, "export -f greet 2>/dev/null\n", ""), "shopt -s expand_aliases 2>/dev/null\n", ""))
	return home, runs
}

func withHome(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "BASH_ENV=") && !strings.HasPrefix(kv, "ZDOTDIR=") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+home, "SNAP_GONE=1")
}

func countRuns(t *testing.T, runs string) int {
	t.Helper()
	b, err := os.ReadFile(runs)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "run")
}

// TestSnapshotRestoresLogin: a login command sees what the login profile
// made — variables (quotes and newlines kept), PATH, an unset variable
// gone, a function, an alias, an option — and none of what it printed;
// the profile ran once for three commands; the forced PAGER stays; a
// script the command runs does not read the snapshot again; line
// numbers and $0 are those of `bash -c`.
func TestSnapshotRestoresLogin(t *testing.T) {
	home, runs := noisyHome(t)
	var infos []SnapshotInfo
	m := newManager(t, Config{Env: withHome(home), SnapshotDir: t.TempDir(), OnSnapshot: func(i SnapshotInfo) { infos = append(infos, i) }})
	check := `printf '%s\n' "$SNAP_VAR"; echo "path=${PATH%%:*}"; echo "gone=${SNAP_GONE-unset}"; greet you; ll; set -o | grep -E '^noclobber'; echo "pager=$PAGER"; echo "zero=$0"`
	r := exec1(t, m, ExecRequest{Cmd: check, Login: login})
	want := "it's \"quoted\" " + home + "\nand two lines\npath=" + home + "/bin\ngone=unset\nhello from you\naliased\nnoclobber      \ton\npager=cat\nzero=/bin/bash\n"
	if r.Output != want {
		t.Fatalf("output:\n%s\nwant:\n%s", r.Output, want)
	}
	if strings.Contains(r.Output, "noise") || strings.Contains(r.Output, "mktemp") {
		t.Fatalf("the profile's output reached the command's: %q", r.Output)
	}
	r = exec1(t, m, ExecRequest{Cmd: "echo one\nfalse\nnosuchcommand", Login: login})
	if !strings.Contains(r.Output, "bash: line 3: nosuchcommand: command not found") {
		t.Fatalf("line numbers moved: %q", r.Output)
	}
	script := filepath.Join(t.TempDir(), "s.sh")
	os.WriteFile(script, []byte("#!/bin/bash\necho \"bash_env=${BASH_ENV-unset} greet=$(type -t greet)\"\n"), 0o755)
	r = exec1(t, m, ExecRequest{Cmd: script, Login: login})
	if strings.TrimSpace(r.Output) != "bash_env=unset greet=function" {
		t.Fatalf("a script the command ran: %q", r.Output)
	}
	if n := countRuns(t, runs); n != 1 {
		t.Fatalf("the profile ran %d times for three commands", n)
	}
	if len(infos) != 1 || infos[0].Err != nil || !strings.Contains(infos[0].Output, "rc: stdout noise") || !strings.Contains(infos[0].Output, "mktemp: failed") {
		t.Fatalf("snapshot info: %+v", infos)
	}
	if got := m.Snapshots(); len(got) != 1 || got[0].File == "" {
		t.Fatalf("Snapshots: %+v", got)
	}
	r = exec1(t, m, ExecRequest{Cmd: `echo "${SNAP_VAR-unset}"`})
	if strings.TrimSpace(r.Output) != "unset" {
		t.Fatalf("login: false used the snapshot: %q", r.Output)
	}
}

// TestSnapshotRefresh: the snapshot is taken again when a profile file
// changes, and not otherwise.
func TestSnapshotRefresh(t *testing.T) {
	home, runs := noisyHome(t)
	m := newManager(t, Config{Env: withHome(home), SnapshotDir: t.TempDir()})
	exec1(t, m, ExecRequest{Cmd: "true", Login: login})
	exec1(t, m, ExecRequest{Cmd: "true", Login: login})
	if n := countRuns(t, runs); n != 1 {
		t.Fatalf("profile ran %d times", n)
	}
	f, err := os.OpenFile(filepath.Join(home, ".bashrc"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("export SNAP_NEW=yes\n")
	f.Close()
	r := exec1(t, m, ExecRequest{Cmd: `echo "new=$SNAP_NEW"`, Login: login})
	if strings.TrimSpace(r.Output) != "new=yes" || countRuns(t, runs) != 2 {
		t.Fatalf("after the change: %q, %d runs", r.Output, countRuns(t, runs))
	}
	// A snapshot removed from outside is taken again, not named to a
	// shell that would complain.
	snaps := m.Snapshots()
	os.Remove(snaps[len(snaps)-1].File)
	r = exec1(t, m, ExecRequest{Cmd: `echo "new=$SNAP_NEW"`, Login: login})
	if r.Output != "new=yes\n" || countRuns(t, runs) != 3 {
		t.Fatalf("after the removal: %q, %d runs", r.Output, countRuns(t, runs))
	}
}

// TestSnapshotShells: zsh and sh restore the snapshot too (sh without
// functions: dash cannot list them); another shell runs -lc and says so
// once.
func TestSnapshotShells(t *testing.T) {
	home, runs := noisyHome(t)
	m := newManager(t, Config{Env: withHome(home), SnapshotDir: t.TempDir()})
	// sh reads the snapshot on CMD's first line: an alias works from the
	// second.
	r := exec1(t, m, ExecRequest{Cmd: "printf '%s\\n' \"$SNAP_VAR\"; echo \"gone=${SNAP_GONE-unset}\"\nll", Shell: "/bin/sh", Login: login})
	want := "it's \"quoted\" " + home + "\nand two lines\ngone=unset\naliased\n"
	if r.Output != want {
		t.Fatalf("sh: %q, want %q", r.Output, want)
	}
	if zsh, err := exec.LookPath("zsh"); err == nil {
		r = exec1(t, m, ExecRequest{Cmd: `printf '%s\n' "$SNAP_VAR"; echo "gone=${SNAP_GONE-unset}"; greet you; echo "zdotdir=${ZDOTDIR-unset}"`, Shell: zsh, Login: login})
		want := "it's \"quoted\" " + home + "\nand two lines\ngone=unset\nhello from you\nzdotdir=unset\n"
		if r.Output != want {
			t.Fatalf("zsh: %q, want %q", r.Output, want)
		}
	} else {
		t.Log("no zsh here: its case is skipped")
	}
	before := countRuns(t, runs)
	other := "/bin/rbash"
	if _, err := os.Stat(other); err != nil {
		t.Skip("no rbash here")
	}
	r1 := exec1(t, m, ExecRequest{Cmd: "echo hi", Shell: other, Login: login})
	r2 := exec1(t, m, ExecRequest{Cmd: "echo hi", Shell: other, Login: login})
	if !strings.Contains(strings.Join(r1.Notes, "\n"), "no login snapshot") || strings.Contains(strings.Join(r2.Notes, "\n"), "no login snapshot") {
		t.Fatalf("notes: %q then %q", r1.Notes, r2.Notes)
	}
	if countRuns(t, runs) != before+2 {
		t.Fatalf("rbash -lc did not read its profile each time")
	}
}

// TestSnapshotClose: Close ends a snapshot being taken (a
// profile that never finishes), and the command waiting for it.
func TestSnapshotClose(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, ".bash_profile"), []byte("sleep 617\n"), 0o644)
	m := New(Config{Workspace: t.TempDir(), Env: withHome(home), SnapshotDir: t.TempDir()})
	done := make(chan error, 1)
	go func() {
		_, err := m.Exec(context.Background(), ExecRequest{Cmd: "true", Login: login})
		done <- err
	}()
	for len(procsWith("sleep\x00617")) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	m.Close()
	if err := <-done; err == nil {
		t.Fatal("Exec succeeded on a closed manager")
	}
	if p := procsWith("sleep\x00617"); len(p) > 0 {
		t.Fatalf("the login shell outlived Close: %v", p)
	}
}

// TestSnapshotTimeLimit: a login shell that does not finish within the
// limit is killed; login commands then run with -lc, and the first
// response says so. (The profile sleeps only when its stdin is a pipe:
// the snapshot's, not a command's.)
func TestSnapshotTimeLimit(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, ".bash_profile"), []byte("[ -p /dev/stdin ] && sleep 619\nexport SLOW=1\n"), 0o644)
	m := newManager(t, Config{Env: withHome(home), SnapshotDir: t.TempDir(), SnapshotTimeout: 200 * time.Millisecond})
	r1 := exec1(t, m, ExecRequest{Cmd: `echo "slow=$SLOW"`, Login: login})
	r2 := exec1(t, m, ExecRequest{Cmd: `echo "slow=$SLOW"`, Login: login})
	if strings.TrimSpace(r1.Output) != "slow=1" || strings.TrimSpace(r2.Output) != "slow=1" {
		t.Fatalf("outputs %q %q", r1.Output, r2.Output)
	}
	if !strings.Contains(strings.Join(r1.Notes, "\n"), "did not finish within 200ms") || len(r2.Notes) != 0 {
		t.Fatalf("notes %q then %q", r1.Notes, r2.Notes)
	}
	if p := procsWith("sleep\x00619"); len(p) > 0 {
		t.Fatalf("the login shell outlived its limit: %v", p)
	}
}

// TestSnapshotDump: the dump parser finds the sections, whatever the
// values hold.
func TestSnapshotDump(t *testing.T) {
	dump := "junk" + dumpMark + "functions\x00f () \n{ \n    echo x\n}\n" + dumpMark + "aliases\x00alias a='b'\n" + dumpMark + "options\x00set -o errexit\n" + dumpMark + "env\x00A=1\x00B=x\ny\x00" + dumpMark + "end\x00"
	s, err := parseDump([]byte(dump))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.functions, "echo x") || s.aliases != "alias a='b'\n" || s.options != "set -o errexit\n" || len(s.env) != 2 || s.env[1] != "B=x\ny" {
		t.Fatalf("%+v", s)
	}
	if _, err := parseDump([]byte(dump[:len(dump)-3])); err == nil {
		t.Fatal("an incomplete dump was accepted")
	}
}
