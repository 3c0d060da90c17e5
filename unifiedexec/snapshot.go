package unifiedexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/unified-exec/unified-exec/ptyrun"
)

// The login environment without the login cost.
//
// A login command (login true, the default) used to run `shell -lc CMD`,
// so every command re-ran the user's profile files: 200 ms and more with
// pyenv, nvm or conda, and inside the sandbox their errors in every
// response. Instead, the login shell runs once per (shell, HOME, kind of
// sandbox): at the first login command, sandboxed exactly as commands
// are (the same engine spawn, the same plan), with a time limit. It
// prints its functions, aliases, options and environment on a channel of
// its own — its standard input, a pipe to the server — while what the
// profile printed is kept aside (SnapshotInfo.Output: `sandbox status`
// and the server's log show it), never in a command's output. The server
// writes a snapshot file from that, where commands can read it and
// cannot write it (Config.SnapshotDir), and each login command then runs
// in a non-login shell that restores it first:
//
//   - bash: `bash -c CMD` with BASH_ENV naming the snapshot, which bash
//     reads before CMD; the snapshot restores BASH_ENV (unset, or the
//     user's own), so scripts the command runs do not read it again.
//     CMD is the shell's as given: line numbers, $0 and error messages
//     are those of `bash -c`.
//   - zsh: `zsh -c CMD` with ZDOTDIR naming a folder whose .zshenv is the
//     snapshot (which restores ZDOTDIR).
//   - sh (dash, or bash as sh): `sh -c '. SNAPSHOT; CMD'`: POSIX has no
//     start-up file for a non-interactive shell. sh cannot list its
//     functions (dash), so they are not kept; an alias defined by the
//     profile and used on CMD's first line is not expanded (the line is
//     read before the snapshot is); errors are on line 1 as before.
//   - Any other shell runs as `shell -lc CMD`, as before, and the first
//     response says so.
//
// The snapshot is the difference the login shell made: the variables it
// set or changed (exported ones: what commands inherit), those it unset,
// its functions and aliases (unalias -a first), and its options (last, so
// that a `set -e` of the profile does not apply to the snapshot itself).
// Variables it did not touch are not written, so what a command gets of
// its own (the session marker, TERM for a terminal, the variables the
// engine forces: NO_COLOR, PAGER, LANG…) stays as it is; those forced
// ones stay forced even where the profile changed them. Unexported shell
// variables are not kept.
//
// It is taken again when a profile file of the shell changes (its
// modification time, size or inode; see profileFiles), and superseded
// snapshots stay until Close (a command that started with one may not
// have read it yet). login: false never uses one.

// snapshotTimeout bounds the login shell's start (Config.SnapshotTimeout).
const snapshotTimeout = 10 * time.Second

// Limits on what a snapshot keeps.
const (
	maxSnapshotInfos  = 32       // Snapshots lists the last ones
	snapshotMaxDump   = 16 << 20 // what the login shell prints on its channel
	snapshotMaxOutput = 16 << 10 // what it printed otherwise (the tail is kept)
)

// shellKind is how a shell restores a snapshot.
type shellKind int

const (
	kindOther shellKind = iota
	kindBash
	kindZsh
	kindSh
)

// kindOf is the kind of the shell at path, by its name.
func kindOf(path string) shellKind {
	switch filepath.Base(path) {
	case "bash":
		return kindBash
	case "zsh":
		return kindZsh
	case "sh", "dash", "ash":
		return kindSh
	}
	return kindOther
}

// SnapshotInfo describes one snapshot of a login shell.
type SnapshotInfo struct {
	// Shell and Home: the login shell and the HOME it ran with; Sandbox
	// is the key of the sandbox it ran under (see [Sandbox.Key]).
	Shell, Home, Sandbox string
	// Taken is when it was taken, and Took how long the login shell ran.
	Taken time.Time
	Took  time.Duration
	// File is the snapshot file ("" when it failed).
	File string
	// Vars, Unset, Functions and Aliases count what it restores.
	Vars, Unset, Functions, Aliases int
	// Output is what the login shell printed on its standard output and
	// error (the last 16 KiB): kept out of every command's output.
	Output string
	// Err says why it failed: commands then run with -lc.
	Err error
}

// String is one line for a log, and the kept output, indented.
func (s SnapshotInfo) String() string {
	var b strings.Builder
	if s.Err != nil {
		fmt.Fprintf(&b, "shell snapshot of %s (HOME %s, sandbox %s) failed after %s: %v; login commands run as %s -lc", s.Shell, s.Home, s.sandboxName(), s.Took.Round(time.Millisecond), s.Err, filepath.Base(s.Shell))
	} else {
		fmt.Fprintf(&b, "shell snapshot of %s (HOME %s, sandbox %s) in %s: %d variables, %d unset, %d functions, %d aliases; %s", s.Shell, s.Home, s.sandboxName(), s.Took.Round(time.Millisecond), s.Vars, s.Unset, s.Functions, s.Aliases, s.File)
	}
	if out := strings.TrimRight(s.Output, "\n"); out != "" {
		fmt.Fprintf(&b, "\n  its profile printed (kept out of commands' output):")
		for _, l := range strings.Split(out, "\n") {
			b.WriteString("\n    " + strconv.Quote(l)[1:len(strconv.Quote(l))-1])
		}
	}
	return b.String()
}

func (s SnapshotInfo) sandboxName() string {
	if s.Sandbox == "" {
		return "none"
	}
	return s.Sandbox
}

// snapKey identifies a snapshot.
type snapKey struct{ shell, home, sandbox string }

// snapEntry is a snapshot, taken or being taken.
type snapEntry struct {
	fp    string        // the profile files' fingerprint it was taken for
	ready chan struct{} // closed once info is set
	info  SnapshotInfo
	// file and zdotdir are what a command is given: the snapshot file,
	// and for zsh the folder whose .zshenv it is.
	file, zdotdir string
}

// gone reports whether e was taken and its file has gone since (removed
// from outside): it is taken again rather than named to a shell that
// would complain in the command's output.
func (e *snapEntry) gone() bool {
	select {
	case <-e.ready:
	default:
		return false
	}
	if e.info.Err != nil {
		return false
	}
	_, err := os.Stat(e.file)
	return err != nil
}

// snapshots are a manager's snapshots. Its zero value is ready.
type snapshots struct {
	// mu guards the fields below.
	mu      sync.Mutex
	dir     string // made at the first snapshot, removed by Close
	seq     int
	entries map[snapKey]*snapEntry
	taken   []SnapshotInfo // the last snapshots, in order (for Snapshots)
	told    map[string]bool
	cancels map[*snapEntry]context.CancelFunc
}

// SnapshotDir is the folder the manager makes its folder of snapshots
// in (Config.SnapshotDir, or [DefaultSnapshotDir]).
func (m *Manager) SnapshotDir() string {
	if m.cfg.SnapshotDir != "" {
		return m.cfg.SnapshotDir
	}
	return DefaultSnapshotDir()
}

// Snapshots describes the snapshots taken so far (the last 32), oldest
// first.
func (m *Manager) Snapshots() []SnapshotInfo {
	m.snaps.mu.Lock()
	defer m.snaps.mu.Unlock()
	return slices.Clone(m.snaps.taken)
}

// Snapshot takes (or finds) the snapshot of shell's login environment
// under sb, as the first login command under sb would. For `sandbox
// status`.
func (m *Manager) Snapshot(ctx context.Context, shell string, sb *Sandbox) (SnapshotInfo, error) {
	if shell == "" {
		shell = m.cfg.Shell
	}
	if kindOf(shell) == kindOther {
		return SnapshotInfo{}, fmt.Errorf("%s: no login snapshot for this shell (bash, zsh and sh have one); it runs as %s -lc", shell, filepath.Base(shell))
	}
	e, err := m.snapshot(ctx, shell, BuildEnv(m.baseEnv(), false), sb)
	if err != nil {
		return SnapshotInfo{}, err
	}
	return e.info, e.info.Err
}

// loginArgv is how a login command runs: argv and env for cmd, and notes
// for the model (a shell without snapshots, said once per shell; a
// snapshot that failed, said once per snapshot).
func (m *Manager) loginArgv(ctx context.Context, shell, cmd string, env []string, sb *Sandbox) (argv, outEnv []string, notes []string, err error) {
	lc := []string{shell, "-lc", cmd}
	kind := kindOf(shell)
	if kind == kindOther {
		if m.tellOnce("shell:" + shell) {
			notes = append(notes, fmt.Sprintf("%s has no login snapshot here (bash, zsh and sh have one): login commands run as %s -lc, which re-reads its profile every time.", shell, filepath.Base(shell)))
		}
		return lc, env, notes, nil
	}
	e, err := m.snapshot(ctx, shell, BuildEnv(m.baseEnv(), false), sb)
	if err != nil {
		return nil, nil, nil, err // ctx ended, or the manager closed
	}
	if e.info.Err != nil {
		if m.tellOnce(fmt.Sprintf("failed:%p", e)) {
			notes = append(notes, fmt.Sprintf("The login shell could not be snapshotted (%v): login commands run as %s -lc.", e.info.Err, filepath.Base(shell)))
		}
		return lc, env, notes, nil
	}
	switch kind {
	case kindBash:
		return []string{shell, "-c", cmd}, setEnv(env, "BASH_ENV", e.file), nil, nil
	case kindZsh:
		return []string{shell, "-c", cmd}, setEnv(env, "ZDOTDIR", e.zdotdir), nil, nil
	}
	return []string{shell, "-c", ". " + shQuote(e.file) + "; " + cmd}, env, nil, nil
}

// tellOnce reports whether what has not been said yet, and marks it said.
func (m *Manager) tellOnce(what string) bool {
	m.snaps.mu.Lock()
	defer m.snaps.mu.Unlock()
	if m.snaps.told[what] {
		return false
	}
	if m.snaps.told == nil {
		m.snaps.told = map[string]bool{}
	}
	m.snaps.told[what] = true
	return true
}

// snapshot returns the snapshot of shell under sb, taking it when there
// is none for the profile files as they are now. Callers wait for one
// being taken; the taking belongs to the manager (Close ends it), not to
// the request that started it.
func (m *Manager) snapshot(ctx context.Context, shell string, env []string, sb *Sandbox) (*snapEntry, error) {
	if sb != nil && sb.Plain != nil {
		sb = sb.Plain
	}
	home := lookupEnv(env, "HOME")
	key := snapKey{shell: shell, home: home}
	if sb != nil {
		key.sandbox = sb.Key
		if key.sandbox == "" {
			key.sandbox = "sandboxed"
		}
	}
	fp := fingerprint(kindOf(shell), home, lookupEnv(env, "ZDOTDIR"))
	m.snaps.mu.Lock()
	e := m.snaps.entries[key]
	if e == nil || e.fp != fp || e.gone() {
		m.mu.Lock()
		closed := m.closed
		if !closed {
			e = &snapEntry{fp: fp, ready: make(chan struct{})}
			if m.snaps.entries == nil {
				m.snaps.entries = map[snapKey]*snapEntry{}
				m.snaps.cancels = map[*snapEntry]context.CancelFunc{}
			}
			m.snaps.entries[key] = e
			limit := m.cfg.SnapshotTimeout
			if limit <= 0 {
				limit = snapshotTimeout
			}
			sctx, cancel := context.WithTimeout(context.Background(), limit)
			m.snaps.cancels[e] = cancel
			// Owner: the manager; Close cancels it and waits.
			m.bg.Go(func() {
				defer cancel()
				m.take(sctx, e, key, env, sb)
			})
		}
		m.mu.Unlock()
		if closed {
			m.snaps.mu.Unlock()
			return nil, ErrClosed
		}
	}
	m.snaps.mu.Unlock()
	select {
	case <-e.ready:
		return e, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// take runs the login shell and makes the snapshot file; it sets e.info
// and closes e.ready.
func (m *Manager) take(ctx context.Context, e *snapEntry, key snapKey, env []string, sb *Sandbox) {
	started := time.Now()
	info := SnapshotInfo{Shell: key.shell, Home: key.home, Sandbox: key.sandbox, Taken: started}
	dump, output, err := m.runLogin(ctx, key.shell, env, sb)
	info.Took = time.Since(started)
	info.Output = output
	if err == nil {
		var s parsedSnapshot
		if s, err = parseDump(dump); err == nil {
			err = m.writeSnapshot(e, &info, kindOf(key.shell), s, env)
		}
	}
	info.Err = err
	m.snaps.mu.Lock()
	e.info = info
	m.snaps.taken = append(m.snaps.taken, info)
	if len(m.snaps.taken) > maxSnapshotInfos {
		m.snaps.taken = slices.Delete(m.snaps.taken, 0, len(m.snaps.taken)-maxSnapshotInfos)
	}
	delete(m.snaps.cancels, e)
	m.snaps.mu.Unlock()
	if m.cfg.OnSnapshot != nil {
		// Before the commands waiting for it go on: a log has it first.
		m.cfg.OnSnapshot(info)
	}
	close(e.ready)
}

// runLogin runs the login shell under sb, the way commands run, and
// returns what it printed on its channel (stdin: a pipe to here) and
// otherwise (its stdout and stderr: another).
func (m *Manager) runLogin(ctx context.Context, shell string, env []string, sb *Sandbox) (dump []byte, output string, err error) {
	envPath, err := exec.LookPath("env")
	if err != nil || !filepath.IsAbs(envPath) {
		envPath = "/usr/bin/env"
	}
	dumpR, dumpW, err := os.Pipe()
	if err != nil {
		return nil, "", err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		dumpR.Close()
		dumpW.Close()
		return nil, "", err
	}
	proc, err := ptyrun.Start(ptyrun.Spec{
		Argv:     []string{shell, "-lc", dumpScript(kindOf(shell), envPath)},
		Dir:      m.cfg.Workspace,
		Env:      env,
		Stdio:    &ptyrun.Stdio{Stdin: dumpW, Stdout: outW, Stderr: outW},
		Helper:   m.helperFor(sb),
		MaxProcs: m.cfg.MaxProcesses,
	})
	dumpW.Close()
	outW.Close()
	if err != nil {
		dumpR.Close()
		outR.Close()
		return nil, "", err
	}
	// Both readers end at end of file, once every process of the login
	// shell is gone: when it exits (the engine ends its whole tree), or
	// when it is killed at the time limit.
	var wg sync.WaitGroup
	var out tailBuffer
	out.max = snapshotMaxOutput
	var dumpBuf bytes.Buffer
	wg.Go(func() {
		io.Copy(&out, outR)
		outR.Close()
	})
	wg.Go(func() {
		io.Copy(&dumpBuf, io.LimitReader(dumpR, snapshotMaxDump))
		io.Copy(io.Discard, dumpR)
		dumpR.Close()
	})
	timedOut := false
	select {
	case <-proc.Done():
	case <-ctx.Done():
		timedOut = true
		proc.Kill(m.cfg.KillGrace)
	}
	// The engine has ended the login shell's tree; a process that escaped
	// it (without a namespace or a cgroup, a daemon that dropped the
	// session's marker) may still hold a pipe: the readers stop soon
	// anyway.
	soon := time.Now().Add(time.Second)
	dumpR.SetReadDeadline(soon)
	outR.SetReadDeadline(soon)
	wg.Wait()
	output = out.String()
	switch {
	case timedOut && errors.Is(ctx.Err(), context.DeadlineExceeded):
		limit := m.cfg.SnapshotTimeout
		if limit <= 0 {
			limit = snapshotTimeout
		}
		return nil, output, fmt.Errorf("the login shell did not finish within %s", limit)
	case timedOut:
		return nil, output, ErrClosed
	}
	if st := proc.ExitStatus(); st.Code != 0 && !bytes.HasSuffix(dumpBuf.Bytes(), []byte(dumpMark+"end\x00")) {
		return nil, output, fmt.Errorf("the login shell exited with %s", st)
	}
	return dumpBuf.Bytes(), output, nil
}

// dumpMark starts each section of the dump; NUL cannot occur in the text
// sections, so a section starts at its mark's first occurrence.
const dumpMark = "\x00UE-SNAPSHOT "

// dumpScript prints, on fd 0, the sections functions, aliases, options,
// env (NUL-separated, from env -0) and end. Each word is quoted or
// escaped so that neither an alias nor a function of the profile
// replaces it.
func dumpScript(kind shellKind, env string) string {
	// dash's command runs its builtin printf; zsh's runs an external one,
	// so bash and zsh name the builtin.
	printf := `\builtin printf`
	if kind == kindSh {
		printf = `\command printf`
	}
	mark := func(s string) string { return printf + ` '\0UE-SNAPSHOT ` + s + `\0'; ` }
	var body string
	switch kind {
	case kindBash:
		body = mark("functions") + `\builtin declare -f; ` +
			mark("aliases") + `\builtin alias -p; ` +
			mark("options") + `\builtin set +o; \builtin shopt -p; `
	case kindZsh:
		body = mark("functions") + `\builtin functions; ` +
			mark("aliases") + `\builtin alias -L; ` +
			mark("options") + `\builtin setopt; `
	default:
		body = mark("functions") + `if \command -v typeset >/dev/null 2>&1; then \command typeset -f; fi; ` +
			mark("aliases") + `\command alias; ` +
			mark("options") + `\command set +o; `
	}
	return "{ " + body + mark("env") + shQuote(env) + " -0; " + mark("end") + "} >&0"
}

// parsedSnapshot is a dump, in sections.
type parsedSnapshot struct {
	functions, aliases, options string
	env                         []string
}

func parseDump(dump []byte) (parsedSnapshot, error) {
	var s parsedSnapshot
	rest := dump
	section := func(name string) (string, error) {
		i := bytes.Index(rest, []byte(dumpMark+name+"\x00"))
		if i < 0 {
			return "", fmt.Errorf("the login shell's dump has no %s section", name)
		}
		before := rest[:i]
		rest = rest[i+len(dumpMark)+len(name)+1:]
		return string(before), nil
	}
	if _, err := section("functions"); err != nil {
		return s, err
	}
	var err error
	if s.functions, err = section("aliases"); err != nil {
		return s, err
	}
	if s.aliases, err = section("options"); err != nil {
		return s, err
	}
	if s.options, err = section("env"); err != nil {
		return s, err
	}
	end := []byte(dumpMark + "end\x00")
	if !bytes.HasSuffix(rest, end) {
		return s, errors.New("the login shell's dump is incomplete")
	}
	for _, kv := range bytes.Split(bytes.TrimSuffix(rest, end), []byte{0}) {
		if len(kv) > 0 {
			s.env = append(s.env, string(kv))
		}
	}
	return s, nil
}

// keptOut are variables a snapshot never sets or unsets: the shell's
// own, and what belongs to one command (the session marker, TERM, the
// forced variables: see ForcedEnv). BASH_ENV and ZDOTDIR are restored
// separately.
var keptOut = map[string]bool{
	"_": true, "PWD": true, "OLDPWD": true, "SHLVL": true, "TERM": true,
	"UNIFIED_EXEC_SESSION": true, "BASH_ENV": true, "ZDOTDIR": true,
	"SHELLOPTS": true, "BASHOPTS": true, "PPID": true, "UID": true, "EUID": true,
}

var identRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// skippedOptions are options a snapshot does not restore: those of an
// interactive or login shell, and read-only ones.
var skippedOptions = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:set [-+]o (?:history|monitor|emacs|vi|interactive|stdin|privileged|onecmd|nolog|debug)|shopt -[su] (?:login_shell|restricted_shell)|(?:no)?(?:interactive|login|shinstdin|singlecommand|monitor|zle|privileged|restricted))$`)
})

// writeSnapshot writes the snapshot file for s (and for zsh its folder)
// and fills the counts of info.
func (m *Manager) writeSnapshot(e *snapEntry, info *SnapshotInfo, kind shellKind, s parsedSnapshot, before []string) error {
	dir, n, err := m.snapshotDir()
	if err != nil {
		return err
	}
	was := map[string]string{}
	for _, kv := range before {
		k, v, _ := strings.Cut(kv, "=")
		was[k] = v
	}
	now := map[string]string{}
	for _, kv := range s.env {
		k, v, _ := strings.Cut(kv, "=")
		now[k] = v
	}
	forced := map[string]bool{}
	for _, kv := range ForcedEnv {
		k, _, _ := strings.Cut(kv, "=")
		forced[k] = true
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# unified-exec: the login environment of %s (HOME %s), taken %s.\n", info.Shell, info.Home, info.Taken.Format(time.RFC3339))
	b.WriteString("# Commands read it instead of the profile files; it is made again when one of them changes.\n")
	special := ""
	switch kind {
	case kindBash:
		special = "BASH_ENV"
	case kindZsh:
		special = "ZDOTDIR"
	}
	if special != "" {
		if v, ok := now[special]; ok {
			fmt.Fprintf(&b, "export %s=%s\n", special, shQuote(v))
		} else {
			fmt.Fprintf(&b, "unset %s\n", special)
		}
	}
	b.WriteString("\\unalias -a 2>/dev/null\n")
	if f := strings.TrimSpace(s.functions); f != "" {
		b.WriteString(f + "\n")
		info.Functions = countFunctions(kind, f)
	}
	for _, l := range strings.Split(strings.TrimSpace(s.aliases), "\n") {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		if !strings.HasPrefix(l, "alias ") {
			l = "alias " + l // dash lists them as name='value'
		}
		b.WriteString(l + "\n")
		info.Aliases++
	}
	names := make([]string, 0, len(now))
	for k := range now {
		names = append(names, k)
	}
	slices.Sort(names)
	var exportFuncs []string
	for _, k := range names {
		v := now[k]
		if f, ok := strings.CutPrefix(k, "BASH_FUNC_"); ok && kind == kindBash {
			if f, ok = strings.CutSuffix(f, "%%"); ok && identRe().MatchString(f) {
				if old, had := was[k]; !had || old != v {
					exportFuncs = append(exportFuncs, f)
				}
			}
			continue
		}
		if keptOut[k] || forced[k] || !identRe().MatchString(k) {
			continue
		}
		if old, had := was[k]; had && old == v {
			continue
		}
		fmt.Fprintf(&b, "export %s=%s\n", k, shQuote(v))
		info.Vars++
	}
	var unset []string
	for k := range was {
		if _, ok := now[k]; !ok && !keptOut[k] && !forced[k] && identRe().MatchString(k) {
			unset = append(unset, k)
		}
	}
	slices.Sort(unset)
	if len(unset) > 0 {
		fmt.Fprintf(&b, "unset %s\n", strings.Join(unset, " "))
		info.Unset = len(unset)
	}
	if len(exportFuncs) > 0 {
		fmt.Fprintf(&b, "export -f %s\n", strings.Join(exportFuncs, " "))
	}
	for _, l := range strings.Split(strings.TrimSpace(s.options), "\n") {
		if l = strings.TrimSpace(l); l == "" || skippedOptions().MatchString(l) {
			continue
		}
		if kind == kindZsh {
			l = "setopt " + l
		}
		b.WriteString(l + "\n")
	}
	b.WriteString("true\n")

	base := filepath.Join(dir, fmt.Sprintf("%d-%s", n, filepath.Base(info.Shell)))
	file := base + ".sh"
	if kind == kindZsh {
		e.zdotdir = base + ".zdotdir"
		if err := os.Mkdir(e.zdotdir, 0o700); err != nil {
			return fmt.Errorf("shell snapshot: %w", err)
		}
		file = filepath.Join(e.zdotdir, ".zshenv")
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("shell snapshot: %w", err)
	}
	e.file = file
	info.File = file
	return nil
}

// countFunctions counts the definitions in a function listing.
func countFunctions(kind shellKind, f string) int {
	n := 0
	for _, l := range strings.Split(f, "\n") {
		if strings.HasSuffix(l, " () ") || strings.HasSuffix(l, " ()") || (kind == kindZsh && strings.HasSuffix(l, " () {")) {
			n++
		}
	}
	return n
}

// snapshotDir makes the manager's folder of snapshots (once) and returns
// it with a new sequence number.
func (m *Manager) snapshotDir() (string, int, error) {
	m.snaps.mu.Lock()
	defer m.snaps.mu.Unlock()
	if m.snaps.dir == "" {
		base := m.SnapshotDir()
		if err := os.MkdirAll(base, 0o700); err != nil {
			return "", 0, fmt.Errorf("shell snapshot: %w", err)
		}
		dir, err := os.MkdirTemp(base, "snapshots-")
		if err != nil {
			return "", 0, fmt.Errorf("shell snapshot: %w", err)
		}
		m.snaps.dir = dir
	}
	m.snaps.seq++
	return m.snaps.dir, m.snaps.seq, nil
}

// DefaultSnapshotDir is where snapshots go when Config.SnapshotDir is
// empty: the user's cache folder (unified-exec/ in it), or the temporary
// one.
func DefaultSnapshotDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "unified-exec")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("unified-exec-%d", os.Getuid()))
}

// cancelSnapshots ends the snapshots being taken (Close calls it before
// it waits for them).
func (m *Manager) cancelSnapshots() {
	m.snaps.mu.Lock()
	defer m.snaps.mu.Unlock()
	for _, cancel := range m.snaps.cancels {
		cancel()
	}
}

// removeSnapshots removes the manager's folder of snapshots (Close, once
// nothing can use them).
func (m *Manager) removeSnapshots() {
	m.snaps.mu.Lock()
	dir := m.snaps.dir
	m.snaps.dir = ""
	m.snaps.mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
	}
}

// profileFiles are the files a login shell of kind reads (or may: a
// profile often sources ~/.bashrc and ~/.bash_aliases), and the folders
// whose entries it reads.
func profileFiles(kind shellKind, home, zdotdir string) (files, dirs []string) {
	h := func(names ...string) []string {
		var out []string
		for _, n := range names {
			if home != "" {
				out = append(out, filepath.Join(home, n))
			}
		}
		return out
	}
	switch kind {
	case kindBash:
		files = append([]string{"/etc/profile", "/etc/bash.bashrc", "/etc/bashrc"},
			h(".bash_profile", ".bash_login", ".profile", ".bashrc", ".bash_aliases")...)
		dirs = []string{"/etc/profile.d"}
	case kindZsh:
		z := zdotdir
		if z == "" {
			z = home
		}
		files = []string{"/etc/zshenv", "/etc/zprofile", "/etc/zlogin", "/etc/zshrc",
			"/etc/zsh/zshenv", "/etc/zsh/zprofile", "/etc/zsh/zlogin", "/etc/zsh/zshrc"}
		if z != "" {
			for _, n := range []string{".zshenv", ".zprofile", ".zlogin", ".zshrc"} {
				files = append(files, filepath.Join(z, n))
			}
		}
	case kindSh:
		files = append([]string{"/etc/profile"}, h(".profile")...)
		dirs = []string{"/etc/profile.d"}
	}
	return files, dirs
}

// fingerprint stamps the profile files of a login shell: for each, its
// modification time, size and inode, or its absence.
func fingerprint(kind shellKind, home, zdotdir string) string {
	files, dirs := profileFiles(kind, home, zdotdir)
	var b strings.Builder
	stamp := func(p string) {
		st, err := os.Stat(p)
		if err != nil {
			b.WriteString(p + " -\n")
			return
		}
		fmt.Fprintf(&b, "%s %d %d %d\n", p, st.ModTime().UnixNano(), st.Size(), inode(st))
	}
	for _, f := range files {
		stamp(f)
	}
	for _, d := range dirs {
		stamp(d)
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			stamp(filepath.Join(d, e.Name()))
		}
	}
	return b.String()
}

// shQuote quotes s for any POSIX shell.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// setEnv returns env with name set to value (replaced if present).
func setEnv(env []string, name, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != name {
			out = append(out, kv)
		}
	}
	return append(out, name+"="+value)
}

// lookupEnv is the value of name in env ("" if absent).
func lookupEnv(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
			return v
		}
	}
	return ""
}
