package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Evidence is what a finished sandboxed run leaves to judge whether the
// sandbox stopped it: its exit code and output, the plan it ran under,
// and the socket calls the seccomp filter refused (counted, see
// [NetWatch]).
type Evidence struct {
	// Code is the exit code.
	Code int
	// Output is what the command printed; the last 256 KiB are read.
	Output string
	// Plan is the plan the command ran under; nil, or danger-full-access,
	// is no sandbox (never a denial).
	Plan *Plan
	// Mounts: the command ran in a mount namespace of its own (writable
	// roots whole, protected paths by mounts); otherwise it could write
	// only what Plan.Write grants (carved).
	Mounts bool
	// Cwd is the command's working directory, for relative paths; Home
	// expands "~".
	Cwd, Home string
	// Net are the socket calls the filter refused.
	Net NetRefusals
	// Allowed is the server's own view: whether this process, unsandboxed,
	// could read (write false) or write path. For a path that does not
	// exist, write means creating it: the nearest existing folder on the
	// way must be writable. Nil asks the kernel (faccessat).
	Allowed func(path string, write bool) bool
}

// DenialKind says what the sandbox refused.
type DenialKind int

const (
	// DeniedFile: a path the plan refuses, which the server could use.
	DeniedFile DenialKind = iota + 1
	// DeniedNetwork: socket calls the filter refused (network off).
	DeniedNetwork
	// DeniedSyscall: the command was killed by SIGSYS.
	DeniedSyscall
	// DeniedSetup: the sandbox could not be set up for the command (the
	// helper's "unified-exec: sandbox:" failure).
	DeniedSetup
)

// Denial is what [Attribute] found.
type Denial struct {
	Kind DenialKind
	// Path is the refused path and Write whether writing it was refused
	// (DeniedFile); Why says how the plan refuses it.
	Path  string
	Write bool
	Why   string
	// Line is the output line that shows the refusal (trimmed, at most
	// 300 bytes): the command's own, never an rc file's (the shell
	// snapshot keeps those out of a command's output).
	Line string
	// Net are the refused socket calls (DeniedNetwork).
	Net NetRefusals
}

// String says what the sandbox refused, quoting the line that shows it.
// It is not escaped: callers that show it escape it.
func (d Denial) String() string {
	quote := func(s string) string {
		if d.Line == "" {
			return s
		}
		return s + ": " + d.Line
	}
	switch d.Kind {
	case DeniedFile:
		verb := "reading"
		if d.Write {
			verb = "writing"
		}
		return quote(verb + " " + d.Path + " (" + d.Why + ")")
	case DeniedNetwork:
		return quote("network access is off: " + d.Net.String() + " refused")
	case DeniedSyscall:
		return "killed by SIGSYS (a blocked system call)"
	}
	return d.Line
}

// Attribute tells whether the sandbox stopped a failed command, from what
// the sandbox actually refused, and never from text alone:
//
//  1. Only a sandboxed command that exited non-zero can be denied.
//  2. Exit 128+SIGSYS (159): a blocked system call killed it.
//  3. Socket calls of a network family (any but AF_UNIX and AF_NETLINK)
//     that the seccomp filter refused, counted as they happened.
//  4. A line of the output (the last 256 KiB) that carries a refusal
//     message where tools put one (see [DetectDenial] for the forms) and
//     names a path that the plan refuses — for reading (deny_read, and
//     the folders on the way to one, which cannot be listed) or for
//     writing (outside the writable roots, protected, a read-only file,
//     read-only mode) — while the server itself, unsandboxed, could do
//     that: read it, or write it (or, to create it, write the folder
//     it goes in). A message names the access when it can ("cannot
//     touch", "Read-only file system" are writes; "cannot open
//     directory" a read); otherwise either refused access counts. A path
//     that does not exist is a create.
//  5. The helper's own "unified-exec: sandbox:" failure.
//
// So a command's own EACCES (a file the user cannot read anyway, a
// script without x), a path the user cannot touch either (/etc as an
// ordinary user), a message without a refused path ("Permission
// denied (os error 13)"), the word "sandbox" in a path, and an exit
// code alone (grep -q, exit 7) are not denials.
func Attribute(ev Evidence) (Denial, bool) {
	if ev.Plan == nil || !ev.Plan.Enforced() || ev.Code == 0 {
		return Denial{}, false
	}
	if ev.Code == 128+sigSYS {
		return Denial{Kind: DeniedSyscall}, true
	}
	if ev.Net.Network() > 0 {
		return Denial{Kind: DeniedNetwork, Net: ev.Net, Line: lastLine(ev.Output)}, true
	}
	const window = 256 << 10
	out := ev.Output
	if len(out) > window {
		out = out[len(out)-window:]
	}
	allowed := ev.Allowed
	if allowed == nil {
		allowed = serverAllows
	}
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if strings.Contains(line, "unified-exec: sandbox:") {
			return Denial{Kind: DeniedSetup, Line: clip(line)}, true
		}
		if !deniedLine(line) {
			// In a mount namespace an unreadable folder is covered by an
			// empty one: root, whose searches no mode stops, finds
			// nothing there rather than being refused.
			if ev.Mounts && strings.Contains(strings.ToLower(line), "no such file or directory") {
				for _, p := range pathsIn(line) {
					if d := ev.Plan.denyRootOf(lexical(p, ev.Cwd, ev.Home)); d != "" {
						return Denial{Kind: DeniedFile, Path: d, Why: "unreadable: deny_read " + d, Line: clip(line)}, true
					}
				}
			}
			continue
		}
		access := accessOf(line)
		for _, p := range pathsIn(line) {
			// A path under deny_read, as written or as resolved, is told
			// as that entry alone: neither whether it exists (reading or
			// writing) nor where a link in it leads (red team 31 named
			// guessed files in ~/.ssh in a line of its own and read the
			// answer from the note).
			if d := ev.Plan.denyRootOf(lexical(p, ev.Cwd, ev.Home)); d != "" {
				return Denial{Kind: DeniedFile, Path: d, Why: "unreadable: deny_read " + d, Line: clip(line)}, true
			}
			path := resolve(p, ev.Cwd, ev.Home)
			if path == "" {
				continue
			}
			if d := ev.Plan.denyOnTheWay(lexical(p, ev.Cwd, ev.Home)); d != "" {
				return Denial{Kind: DeniedFile, Path: d, Why: "unreadable: deny_read " + d, Line: clip(line)}, true
			}
			if d, ok := ev.judge(path, access, allowed); ok {
				d.Line = clip(line)
				return d, true
			}
		}
	}
	return Denial{}, false
}

// access is what a refusal line says was attempted.
type access int

const (
	accessEither access = iota
	accessRead
	accessWrite
)

var (
	writeRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)read-only file system|cross-device link|cannot (?:touch|create|remove|move|make|overwrite|write|link|rename|change|set|chmod|chown|truncate|copy)|can't (?:create|write|remove|open .* for writing)|cannot open .* for writing|(?:failed|unable) to (?:create|remove|write|rename|link|set|change|preserve|unlink|lock|make|open .* for writing)|could not (?:create|write|lock|remove|rename|open lock file|open .* for writing)|open output file|\b(?:mkdir|rmdir|unlink|mkfifo|mknod)\b`)
	})
	readRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)cannot (?:open directory|read|access|stat)|could not open directory|cannot open .* for reading|failed to (?:read|stat|open directory)`)
	})
)

func accessOf(line string) access {
	switch {
	case writeRe().MatchString(line):
		return accessWrite
	case readRe().MatchString(line):
		return accessRead
	}
	return accessEither
}

var (
	// quotedRe finds quoted paths: '…', ‘…’, "…", “…”, `…'.
	quotedRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile("'([^']+)'|‘([^’]+)’|\"([^\"]+)\"|“([^”]+)”|`([^'`]+)'")
	})
	// errnoTextRe is a refusal message on its own.
	errnoTextRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)^(?:operation not permitted|permission denied|read-only file system|invalid cross-device link|bad system call)$`)
	})
	// errnoNameRe is an errno's name (Node's "EACCES: permission denied").
	errnoNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^E[A-Z]+$`) })
	// unquotedRe finds bare words that look like paths.
	unquotedRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?:^|[\s(=])((?:~|\.{1,2})?/[^\s'"‘’“”,;()]+|\.{1,2}/?[^\s'"‘’“”,;()]*)`)
	})
)

// pathsIn lists the paths a refusal line names: quoted ones, bare words
// with a slash, and the name just before the message ("cat: x:
// Permission denied").
func pathsIn(line string) []string {
	var out []string
	// "/bin/bash: line 1: ./s: Permission denied": the first word is the
	// program that speaks, unless the message follows it directly.
	program := ""
	if f := strings.Fields(line); len(f) > 0 && strings.HasSuffix(f[0], ":") {
		if loc := errnoRe().FindStringIndex(line); loc == nil || loc[0] > len(f[0])-1 {
			program = strings.TrimSuffix(f[0], ":")
		}
	}
	add := func(p string) {
		p = strings.TrimRight(p, ":,.;")
		switch {
		case p == program:
			return
		case p == "" || p == "." || strings.Contains(p, "://") || slices.Contains(out, p):
			return
		case errnoTextRe().MatchString(p):
			return // Python's repr quotes the message itself
		case !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~") && strings.ContainsAny(p, " \t"):
			return // a relative "path" with spaces is prose
		}
		out = append(out, p)
	}
	for _, m := range quotedRe().FindAllStringSubmatch(line, -1) {
		for _, g := range m[1:] {
			if g != "" {
				add(g)
			}
		}
	}
	for _, m := range unquotedRe().FindAllStringSubmatch(line, -1) {
		add(m[1])
	}
	if loc := errnoRe().FindStringIndex(line); loc != nil {
		before := line[:loc[0]]
		if i := strings.LastIndex(before, ": "); i >= 0 {
			before = before[i+2:]
		}
		if f := strings.Fields(before); len(f) > 0 {
			w := f[len(f)-1]
			if !strings.ContainsAny(w, "[]()'\"‘’“”") && strings.Trim(w, "0123456789") != "" && !errnoNameRe().MatchString(w) {
				add(w)
			}
		}
	}
	return out
}

// resolve makes p absolute (relative to cwd, "~" to home) and resolves
// the symbolic links of its existing part, as the plan's paths are.
// lexical is p as an absolute path, cleaned, nothing resolved ("" where
// it cannot be made one).
func lexical(p, cwd, home string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home == "" {
			return ""
		}
		p = filepath.Join(home, p[1:])
	}
	if !filepath.IsAbs(p) {
		if cwd == "" {
			return ""
		}
		p = filepath.Join(cwd, p)
	}
	return filepath.Clean(p)
}

// denyOnTheWay is the deny_read path that path passes through as the
// kernel resolves it, one name after another, or "": a link the command
// made to ~/.ssh, then a link in there, resolved whole, named only where
// the last one led (red team 32).
func (p *Plan) denyOnTheWay(path string) string {
	if path == "" {
		return ""
	}
	if d := p.denyRootOf(path); d != "" {
		return d
	}
	prefix := "/"
	for _, name := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		prefix = joinName(prefix, name)
		real, err := filepath.EvalSymlinks(prefix)
		if err != nil {
			return ""
		}
		if d := p.denyRootOf(real); d != "" {
			return d
		}
		prefix = real
	}
	return ""
}

// denyRootOf is the deny_read path that holds path (path itself or a
// folder above it), or "".
func (p *Plan) denyRootOf(path string) string {
	if path == "" {
		return ""
	}
	for _, d := range p.DenyRead {
		if path == d || within(path, d) {
			return d
		}
	}
	return ""
}

func resolve(p, cwd, home string) string {
	if p = lexical(p, cwd, home); p == "" {
		return ""
	}
	var rest []string
	for q := p; ; q = filepath.Dir(q) {
		if real, err := filepath.EvalSymlinks(q); err == nil {
			return filepath.Join(append([]string{real}, rest...)...)
		}
		if q == "/" {
			return p
		}
		rest = append([]string{filepath.Base(q)}, rest...)
	}
}

// judge decides one path of a refusal line.
func (ev Evidence) judge(path string, a access, allowed func(string, bool) bool) (Denial, bool) {
	if _, err := os.Lstat(path); err != nil {
		a = accessWrite // EACCES on a path that is not there: a create
	}
	readWhy := ev.Plan.refusesRead(path)
	writeWhy := ev.Plan.refusesWrite(path, ev.Mounts)
	read := func() (Denial, bool) {
		if readWhy != "" && allowed(path, false) {
			return Denial{Kind: DeniedFile, Path: path, Why: readWhy}, true
		}
		return Denial{}, false
	}
	write := func() (Denial, bool) {
		if writeWhy != "" && allowed(path, true) {
			return Denial{Kind: DeniedFile, Path: path, Write: true, Why: writeWhy}, true
		}
		return Denial{}, false
	}
	switch a {
	case accessRead:
		return read()
	case accessWrite:
		return write()
	}
	if d, ok := read(); ok {
		return d, true
	}
	// Either access: a refused write counts only where reading was
	// possible, so that a file the user cannot read (the command's own
	// EACCES) is not taken for a refused write.
	if readWhy == "" && !allowed(path, false) {
		return Denial{}, false
	}
	return write()
}

// refusesRead says why the plan refuses to read path ("" if it does
// not): a deny_read path or below, or a folder on the way to one (it
// cannot be listed).
func (p *Plan) refusesRead(path string) string {
	for _, d := range p.DenyRead {
		switch {
		case path == d || within(path, d):
			return "unreadable: deny_read " + d
		case within(d, path):
			return "a folder on the way to the unreadable " + d + " cannot be listed"
		}
	}
	return ""
}

// refusesWrite says why the plan refuses to write path ("" if it does
// not). mounts: the command had a mount namespace (writable roots whole);
// otherwise only the carved Write grants are writable, and a create or
// remove also needs the folder's grant.
func (p *Plan) refusesWrite(path string, mounts bool) string {
	if granted(p.Devices, path) {
		return ""
	}
	if p.Mode == "read-only" {
		return "read-only mode"
	}
	if !slices.ContainsFunc(p.WritableRoots, func(r string) bool { return path == r || within(path, r) }) {
		return "outside the writable roots"
	}
	for _, list := range []struct {
		paths []string
		why   string
	}{{p.Protected, "protected"}, {p.ReadOnlyFiles, "a read-only file of unified-exec"}, {p.DenyRead, "unreadable"}} {
		for _, x := range list.paths {
			if path == x || within(path, x) {
				return list.why + ": " + x
			}
		}
	}
	if !mounts {
		_, err := os.Lstat(path)
		if !granted(p.Write, path) || (err != nil && !granted(p.Write, filepath.Dir(path))) {
			return "a folder that holds a protected path (no mount namespace here: new entries cannot be made in it)"
		}
	}
	return ""
}

// granted reports whether a grant covers path: the path itself, or a
// directory grant above it.
func granted(grants []Grant, path string) bool {
	for _, g := range grants {
		if g.Path == path || (g.Dir && within(path, g.Path)) {
			return true
		}
	}
	return false
}

func clip(line string) string {
	if len(line) > 300 {
		return line[:300] + "…"
	}
	return line
}

// lastLine is the last non-empty line of out, clipped.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return clip(strings.TrimSpace(lines[len(lines)-1]))
}

// NetRefusals counts the socket calls the seccomp filter refused, by
// address family.
type NetRefusals struct {
	// Families are the refused families with their counts, by family.
	Families []FamilyCount
}

// FamilyCount is a socket family and how often it was refused.
type FamilyCount struct {
	Family int
	Count  int
}

// afNetlink is AF_NETLINK: talking to the kernel, not the network (glibc
// probes it on every getaddrinfo with AI_ADDRCONFIG).
const afNetlink = 16

// Network is the number of refused calls of a network family (every
// refused family but AF_NETLINK).
func (n NetRefusals) Network() int {
	c := 0
	for _, f := range n.Families {
		if f.Family != afNetlink {
			c += f.Count
		}
	}
	return c
}

// Add counts one refused call of family.
func (n *NetRefusals) Add(family int) {
	for i := range n.Families {
		if n.Families[i].Family == family {
			n.Families[i].Count++
			return
		}
	}
	n.Families = append(n.Families, FamilyCount{Family: family, Count: 1})
	slices.SortFunc(n.Families, func(a, b FamilyCount) int { return a.Family - b.Family })
}

// String gives e.g. "2 socket calls (AF_INET ×1, AF_INET6 ×1)".
func (n NetRefusals) String() string {
	total := 0
	var fams []string
	for _, f := range n.Families {
		total += f.Count
		fams = append(fams, fmt.Sprintf("%s ×%d", familyName(f.Family), f.Count))
	}
	calls := "socket calls"
	if total == 1 {
		calls = "socket call"
	}
	return fmt.Sprintf("%d %s (%s)", total, calls, strings.Join(fams, ", "))
}

var familyNames = map[int]string{
	2: "AF_INET", 3: "AF_AX25", 4: "AF_IPX", 5: "AF_APPLETALK", 10: "AF_INET6", 16: "AF_NETLINK",
	17: "AF_PACKET", 29: "AF_CAN", 31: "AF_BLUETOOTH", 38: "AF_ALG", 40: "AF_VSOCK", 44: "AF_XDP",
}

func familyName(f int) string {
	if n, ok := familyNames[f]; ok {
		return n
	}
	return fmt.Sprintf("family %d", f)
}
