package policy

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/BurntSushi/toml"

	defaultpolicy "github.com/unified-exec/unified-exec"
)

// Approval modes.
const (
	ApprovalUntrusted = "untrusted"
	ApprovalOnFailure = "on-failure"
	ApprovalOnRequest = "on-request"
	ApprovalNever     = "never"
)

// Rule decisions.
const (
	DecisionAllow  = "allow"
	DecisionPrompt = "prompt"
	DecisionForbid = "forbid"
)

// DefaultExclude are the environment names dropped unless the policy says
// otherwise (globs, case-insensitive; a glob after "!" keeps what it
// matches: XAUTHORITY is a path, GIT_AUTHOR_* a commit's author).
// BASH_FUNC_* are functions an outer bash exported, which a command's
// bash would define: a function named like a program (git, ls) would run
// instead of it, unseen by the rules.
var DefaultExclude = []string{
	"*KEY*", "*SECRET*", "*TOKEN*", "*PASSWORD*", "*PASS*", "*CREDENTIAL*", "*CREDS*", "*AUTH*", "*COOKIE*",
	"*PRIVATE*", "*JWT*", "*BEARER*", "*_PAT", "DATABASE_URL", "*_DSN", "BASH_FUNC_*",
	"!XAUTHORITY", "!GIT_AUTHOR_NAME", "!GIT_AUTHOR_EMAIL", "!GIT_AUTHOR_DATE",
}

// Defaults is the policy before any file is read: what every omitted key
// means.
func Defaults() *Policy {
	return &Policy{
		Approval: Approval{Mode: ApprovalOnRequest, Prompt: "auto"},
		Sandbox:  DefaultSandbox(),
		Env:      Env{Inherit: "all", Exclude: slices.Clone(DefaultExclude)},
		Limits:   Limits{MaxSessions: 64, MaxOutputTokens: 10_000, OutputBufferBytes: 1 << 20, MaxProcesses: DefaultMaxProcesses},
	}
}

// DefaultSource is the [Policy.Source] of [Default].
const DefaultSource = "embedded policy.toml"

// DefaultTOML returns the text of the embedded policy.toml, for hosts
// that let users start their own policy from it.
func DefaultTOML() []byte { return slices.Clone(defaultpolicy.TOML) }

// Default is the embedded policy.toml: approval on-request, sandbox
// workspace-write without network, sandbox required. Each call gives a
// policy of its own. It is the parse of that file written out as Go
// (default_gen.go): parsing it took a wrapper's start ~3 ms of CPU, and
// TestDefaultIsParsedPolicyTOML holds the two equal.
func Default() *Policy { return defaultPolicy() }

// Load reads and parses a policy file.
func Load(file string) (*Policy, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	return Parse(b, file)
}

// Error is a policy problem, located at file:line and naming the key.
type Error struct {
	File string
	Line int // 0 when unknown
	Key  string
	Msg  string
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Key != "" {
		return fmt.Sprintf("%s: %s: %s", loc, e.Key, e.Msg)
	}
	return fmt.Sprintf("%s: %s", loc, e.Msg)
}

// Errors is every problem found in one file.
type Errors []*Error

func (es Errors) Error() string {
	var s []string
	for _, e := range es {
		s = append(s, e.Error())
	}
	return strings.Join(s, "\n")
}

var typeErrRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): (.*)$`) })

// Parse decodes a policy strictly: unknown keys and wrong types are errors
// naming file, line and key; values are validated (see [Policy.Validate]).
// Omitted keys keep the values of [Defaults].
func Parse(data []byte, source string) (*Policy, error) {
	p := Defaults()
	p.Source = source
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(p)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			msg := "not valid TOML: " + pe.Message
			if strings.HasPrefix(pe.Message, patternTypeMsg) {
				msg = "wrong type: " + pe.Message
			}
			return nil, &Error{File: source, Line: pe.Position.Line, Key: pe.LastKey, Msg: msg}
		}
		if m := typeErrRe().FindStringSubmatch(err.Error()); m != nil {
			var line int
			fmt.Sscan(m[1], &line)
			return nil, &Error{File: source, Line: line, Key: m[2], Msg: "wrong type: " + typeMsg(m[3])}
		}
		return nil, &Error{File: source, Msg: strings.TrimPrefix(err.Error(), "toml: ")}
	}
	loc := newLocator(data)
	var errs Errors
	for _, k := range md.Undecoded() {
		errs = append(errs, &Error{File: source, Line: loc.key(k), Key: k.String(), Msg: "unknown key" + knownHint(k)})
	}
	// Rule lines, for messages.
	ruleLines := loc.rules()
	for i := range p.Rules {
		if i < len(ruleLines) {
			p.Rules[i].Line = ruleLines[i]
		}
	}
	for _, e := range append(p.validate(loc), p.validateNetwork(loc, md.IsDefined)...) {
		e.File = source
		errs = append(errs, e)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	p.loc = loc
	return p, nil
}

var knownKeys = map[string][]string{
	"":         {"approval", "sandbox", "network", "rule", "env", "limits", "audit"},
	"approval": {"mode", "prompt"},
	"sandbox":  {"mode", "network", "writable_roots", "exclude_slash_tmp", "exclude_tmpdir_env_var", "protected", "deny_read", "git", "required"},
	"network":  {"mode", "allow", "deny", "ask"},
	"rule":     {"pattern", "decision", "reason", "sandbox"},
	"env":      {"inherit", "exclude", "set"},
	"limits":   {"max_sessions", "max_output_tokens", "output_buffer_bytes", "session_timeout", "max_processes"},
	"audit":    {"path", "required"},
}

func knownHint(k toml.Key) string {
	table := ""
	if len(k) > 1 {
		table = k[0]
	}
	if table == "env" && len(k) > 2 && k[1] == "set" {
		return ""
	}
	known, ok := knownKeys[table]
	if !ok {
		return ""
	}
	where := "at the top level"
	if table != "" {
		where = "of [" + table + "]"
	}
	return fmt.Sprintf(" (known keys %s: %s)", where, strings.Join(known, ", "))
}

// locator finds the line of a key in the text of a policy file.
// BurntSushi/toml keeps key positions private, so this scans the text:
// table headers, `key = value` lines, dotted keys and one-line inline
// tables. Lines inside multi-line strings are skipped.
type locator struct {
	entries []locEntry
}

// locEntry is one key (or table header) seen in the file.
type locEntry struct {
	path string // full dotted path: "approval.mode", "rule.decision", "approval"
	occ  int    // which [[array table]] it belongs to (0-based), else 0
	line int
}

var (
	headerRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\[\[?\s*([^\[\]]+?)\s*\]\]?\s*(#.*)?$`) })
	keyRe    = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^((?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*'))*)\s*=\s*(.*)$`)
	})
	inlineRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[{,]\s*([A-Za-z0-9_-]+)\s*=`) })
)

func normKey(k string) string {
	parts := strings.Split(k, ".")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), `"'`)
	}
	return strings.Join(parts, ".")
}

func newLocator(data []byte) *locator {
	l := &locator{}
	table, occ := "", 0
	arrays := map[string]int{}
	inMulti := ""
	for i, raw := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(raw)
		if inMulti != "" {
			if strings.Count(t, inMulti)%2 == 1 {
				inMulti = ""
			}
			continue
		}
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if m := headerRe().FindStringSubmatch(t); m != nil && !strings.Contains(t, "=") {
			table, occ = normKey(m[1]), 0
			if strings.HasPrefix(t, "[[") {
				occ = arrays[table]
				arrays[table]++
			}
			l.entries = append(l.entries, locEntry{path: table, occ: occ, line: i + 1})
			continue
		}
		m := keyRe().FindStringSubmatch(t)
		if m == nil {
			continue
		}
		path := normKey(m[1])
		if table != "" {
			path = table + "." + path
		}
		l.entries = append(l.entries, locEntry{path: path, occ: occ, line: i + 1})
		rest := m[2]
		for _, q := range []string{`"""`, `'''`} {
			if strings.Count(rest, q)%2 == 1 {
				inMulti = q
			}
		}
		if strings.HasPrefix(rest, "{") {
			for _, im := range inlineRe().FindAllStringSubmatch(rest, -1) {
				l.entries = append(l.entries, locEntry{path: path + "." + im[1], occ: occ, line: i + 1})
			}
		}
	}
	return l
}

// line returns the line of the key with the given dotted path in the
// occ-th array table (occ < 0: any), or 0.
func (l *locator) line(path string, occ int) int {
	for _, e := range l.entries {
		if e.path == path && (occ < 0 || e.occ == occ) {
			return e.line
		}
	}
	return 0
}

// key returns the line of a key reported by the decoder.
func (l *locator) key(k toml.Key) int {
	return l.line(normKey(k.String()), -1)
}

// rules returns the header line of every [[rule]].
func (l *locator) rules() []int {
	var out []int
	for _, e := range l.entries {
		if e.path == "rule" {
			out = append(out, e.line)
		}
	}
	return out
}

// validate checks values: each check adds an error naming its key.
func (p *Policy) validate(loc *locator) Errors {
	var errs Errors
	add := func(table, key, format string, a ...any) {
		errs = append(errs, &Error{Line: loc.line(table+"."+key, -1), Key: table + "." + key, Msg: fmt.Sprintf(format, a...)})
	}
	oneOf := func(table, key, v string, allowed ...string) {
		if !slices.Contains(allowed, v) {
			add(table, key, "%q is not one of %s", v, strings.Join(allowed, ", "))
		}
	}
	oneOf("approval", "mode", p.Approval.Mode, ApprovalUntrusted, ApprovalOnFailure, ApprovalOnRequest, ApprovalNever)
	oneOf("approval", "prompt", p.Approval.Prompt, "auto", "tty", "deny")
	oneOf("sandbox", "mode", p.Sandbox.Mode, ModeReadOnly, ModeWorkspaceWrite, ModeDangerFullAccess)
	oneOf("sandbox", "git", p.Sandbox.Git, GitCommit, GitReadOnly)
	oneOf("env", "inherit", p.Env.Inherit, "all", "core", "none")
	for _, g := range p.Env.Exclude {
		if _, err := path.Match(strings.TrimPrefix(g, "!"), ""); err != nil {
			add("env", "exclude", "bad glob %q: %v", g, err)
		}
	}
	for k := range p.Env.Set {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			add("env", "set", "bad variable name %q", k)
		}
	}
	if p.Limits.MaxSessions < 1 || p.Limits.MaxSessions > 10_000 {
		add("limits", "max_sessions", "%d is out of range 1–10000", p.Limits.MaxSessions)
	}
	if p.Limits.MaxOutputTokens < 1 {
		add("limits", "max_output_tokens", "must be ≥ 1, got %d", p.Limits.MaxOutputTokens)
	}
	if p.Limits.OutputBufferBytes < 4096 || p.Limits.OutputBufferBytes > 1<<30 {
		add("limits", "output_buffer_bytes", "%d is out of range 4096–1073741824", p.Limits.OutputBufferBytes)
	}
	if n := p.Limits.MaxProcesses; n < 0 || n > 0 && n < 8 || n > 1<<22 {
		add("limits", "max_processes", "%d is out of range: 0 (no limit) or 8–4194304", n)
	}
	if s := p.Limits.SessionTimeout; s != "" {
		if d, err := time.ParseDuration(s); err != nil || d <= 0 {
			add("limits", "session_timeout", "%q is not a positive duration such as \"30m\" or \"2h\"", s)
		}
	}
	for i, r := range p.Rules {
		at := func(key, format string, a ...any) {
			line := loc.line("rule."+key, i)
			if line == 0 {
				line = r.Line
			}
			errs = append(errs, &Error{Line: line, Key: fmt.Sprintf("rule[%d].%s", i, key), Msg: fmt.Sprintf(format, a...)})
		}
		if len(r.Pattern) == 0 {
			at("pattern", "empty pattern: give the command's first words, e.g. [\"git\", \"push\"]")
		}
		for j, alt := range r.Pattern {
			if len(alt) == 0 {
				at("pattern", "element %d is an empty list of alternatives", j)
			}
			for _, w := range alt {
				if w == "" {
					at("pattern", "element %d contains an empty word", j)
				}
			}
		}
		if !slices.Contains([]string{DecisionAllow, DecisionPrompt, DecisionForbid}, r.Decision) {
			at("decision", "%q is not one of allow, prompt, forbid", r.Decision)
		}
		if r.Sandbox != "" && !slices.Contains([]string{ModeReadOnly, ModeWorkspaceWrite, ModeDangerFullAccess}, r.Sandbox) {
			at("sandbox", "%q is not one of read-only, workspace-write, danger-full-access", r.Sandbox)
		}
	}
	return errs
}

var typesRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^incompatible types: TOML value has type (\S+); destination has type (\S+)$`)
})

// typeMsg turns the decoder's Go type names into TOML words.
func typeMsg(msg string) string {
	m := typesRe().FindStringSubmatch(msg)
	if m == nil {
		return strings.TrimPrefix(msg, "incompatible types: ")
	}
	words := map[string]string{
		"int64": "an integer", "integer": "an integer", "float64": "a float", "float": "a float",
		"string": "a string", "bool": "a boolean", "slice": "an array", "[]interface {}": "an array",
		"map[string]interface {}": "a table", "struct": "a table", "map": "a table",
	}
	name := func(t string) string {
		if w, ok := words[t]; ok {
			return w
		}
		return t
	}
	return "want " + name(m[2]) + ", got " + name(m[1])
}

const patternTypeMsg = "a pattern element must be a word or a list of words"

// tomlType names the TOML type of a decoded value.
func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return "a date or time"
}

// UnmarshalTOML accepts a word or a list of words.
func (a *Alternatives) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case string:
		*a = Alternatives{x}
	case []any:
		out := make(Alternatives, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return fmt.Errorf("%s, got %s inside a list", patternTypeMsg, tomlType(e))
			}
			out = append(out, s)
		}
		*a = out
	default:
		return fmt.Errorf("%s, got %s", patternTypeMsg, tomlType(v))
	}
	return nil
}

// coreEnv are the variables kept by inherit = "core" (with every LC_*).
var coreEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ", "LANG", "LANGUAGE", "TERM", "PWD"}

// Build turns base (NAME=value entries) into the environment of a
// command: inherit all, the core set, or none; drop names matching the
// exclude globs (case-insensitive) but those matching a "!" glob; take
// the user name and password out of *_PROXY URLs (but those a "!" glob
// names); then apply set.
func (e Env) Build(base []string) []string {
	var out []string
	globs := e.globs()
	for _, kv := range base {
		name, _, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		switch e.Inherit {
		case "none":
			continue
		case "core":
			if !slices.Contains(coreEnv, name) && !strings.HasPrefix(name, "LC_") {
				continue
			}
		}
		up := strings.ToUpper(name)
		if globs.excluded(up) {
			continue
		}
		if _, ok := e.Set[name]; ok {
			continue
		}
		if strings.HasSuffix(up, "_PROXY") && !globs.kept(up) {
			kv = name + "=" + withoutUserinfo(kv[len(name)+1:])
		}
		out = append(out, kv)
	}
	keys := make([]string, 0, len(e.Set))
	for k := range e.Set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = append(out, k+"="+e.Set[k])
	}
	return out
}

// withoutUserinfo removes the user name and password of a proxy's URL
// (http://user:secret@proxy:3128 becomes http://proxy:3128), with or
// without a scheme; anything else is returned as it is.
func withoutUserinfo(v string) string {
	at := strings.LastIndexByte(v, '@')
	if at < 0 {
		return v
	}
	start := 0
	if i := strings.Index(v, "://"); i >= 0 && i < at {
		start = i + 3
	}
	if strings.ContainsAny(v[start:at], "/?#") {
		return v // an @ in the path, not a user
	}
	return v[:start] + v[at+1:]
}

// envGlobs are exclude's globs, upper-cased once: drop, and keep ("!").
type envGlobs struct{ drop, keep []envGlob }

// envGlob is one exclude glob (upper-cased by globs), split at its stars once (each
// name of the environment is matched against each glob at every
// command's start).
type envGlob struct {
	pattern string
	// parts are pattern split at "*" when * is its only special
	// character (every default one); nil: path.Match decides.
	parts []string
}

func newEnvGlob(pattern string) envGlob {
	g := envGlob{pattern: pattern}
	if !strings.ContainsAny(g.pattern, "?[\\/") {
		g.parts = strings.Split(g.pattern, "*")
	}
	return g
}

func (e Env) globs() envGlobs {
	var g envGlobs
	for _, x := range e.Exclude {
		if keep, ok := strings.CutPrefix(x, "!"); ok {
			g.keep = append(g.keep, newEnvGlob(strings.ToUpper(keep)))
		} else {
			g.drop = append(g.drop, newEnvGlob(strings.ToUpper(x)))
		}
	}
	return g
}

// excluded reports whether a drop glob names the variable (upper-cased)
// and no keep glob does.
func (g envGlobs) excluded(up string) bool {
	return slices.ContainsFunc(g.drop, func(p envGlob) bool { return p.match(up) }) && !g.kept(up)
}

// kept reports whether a keep ("!") glob names the variable (upper-cased).
func (g envGlobs) kept(up string) bool {
	return slices.ContainsFunc(g.keep, func(p envGlob) bool { return p.match(up) })
}

// match is path.Match of the glob, a bad pattern matching nothing; a glob
// of stars alone is matched without it.
func (g envGlob) match(name string) bool {
	if g.parts == nil || strings.Contains(name, "/") {
		ok, _ := path.Match(g.pattern, name)
		return ok
	}
	parts := g.parts
	if len(parts) == 1 {
		return g.pattern == name
	}
	first, last := parts[0], parts[len(parts)-1]
	if len(name) < len(first)+len(last) || !strings.HasPrefix(name, first) || !strings.HasSuffix(name, last) {
		return false
	}
	rest := name[len(first) : len(name)-len(last)]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	return true
}
