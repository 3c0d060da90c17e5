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
// otherwise (globs, case-insensitive).
var DefaultExclude = []string{"*KEY*", "*SECRET*", "*TOKEN*", "*PASSWORD*"}

// Defaults is the policy before any file is read: what every omitted key
// means.
func Defaults() *Policy {
	return &Policy{
		Approval: Approval{Mode: ApprovalOnRequest, Prompt: "auto"},
		Sandbox:  DefaultSandbox(),
		Env:      Env{Inherit: "all", Exclude: slices.Clone(DefaultExclude)},
		Limits:   Limits{MaxSessions: 64, MaxOutputTokens: 10_000, OutputBufferBytes: 1 << 20},
	}
}

// Default is the embedded policy.toml.
func Default() *Policy {
	p, err := Parse(defaultpolicy.TOML, "embedded policy.toml")
	if err != nil {
		panic("the embedded policy.toml is broken: " + err.Error())
	}
	return p
}

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

var typeErrRe = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): (.*)$`)

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
			return nil, &Error{File: source, Line: pe.Position.Line, Key: pe.LastKey, Msg: "not valid TOML: " + pe.Message}
		}
		if m := typeErrRe.FindStringSubmatch(err.Error()); m != nil {
			var line int
			fmt.Sscan(m[1], &line)
			return nil, &Error{File: source, Line: line, Key: m[2], Msg: "wrong type: " + strings.TrimPrefix(m[3], "incompatible types: ")}
		}
		return nil, &Error{File: source, Msg: strings.TrimPrefix(err.Error(), "toml: ")}
	}
	lines := strings.Split(string(data), "\n")
	var errs Errors
	for _, k := range md.Undecoded() {
		errs = append(errs, &Error{File: source, Line: findKey(lines, k), Key: k.String(), Msg: "unknown key" + knownHint(k)})
	}
	// Rule lines, for messages.
	ruleLines := tableLines(lines, "[[rule]]")
	for i := range p.Rules {
		if i < len(ruleLines) {
			p.Rules[i].Line = ruleLines[i]
		}
	}
	for _, e := range p.validate(lines) {
		e.File = source
		errs = append(errs, e)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return p, nil
}

var knownKeys = map[string][]string{
	"":         {"approval", "sandbox", "rule", "env", "limits", "audit"},
	"approval": {"mode", "prompt"},
	"sandbox":  {"mode", "network", "writable_roots", "exclude_slash_tmp", "exclude_tmpdir_env_var", "protected", "deny_read", "required"},
	"rule":     {"pattern", "decision", "reason", "sandbox"},
	"env":      {"inherit", "exclude", "set"},
	"limits":   {"max_sessions", "max_output_tokens", "output_buffer_bytes", "session_timeout"},
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

// findKey returns the line of key k: the key's own line inside its table,
// or the table header for a table key.
func findKey(lines []string, k toml.Key) int {
	table := ""
	name := k[len(k)-1]
	if len(k) > 1 {
		table = strings.Join(k[:len(k)-1], ".")
	}
	current := ""
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") {
			current = strings.Trim(t, "[] ")
			if len(k) == 1 && current == name {
				return i + 1
			}
			continue
		}
		key, _, ok := strings.Cut(t, "=")
		if !ok {
			continue
		}
		key = strings.Trim(strings.TrimSpace(key), `"'`)
		if current == table && key == name {
			return i + 1
		}
		if table != "" && current == "" && key == table+"."+name {
			return i + 1
		}
	}
	return 0
}

func tableLines(lines []string, header string) []int {
	var out []int
	for i, l := range lines {
		if strings.TrimSpace(l) == header {
			out = append(out, i+1)
		}
	}
	return out
}

func keyLine(lines []string, table, key string) int {
	return findKey(lines, toml.Key{table, key})
}

// validate checks values: each check adds an error naming its key.
func (p *Policy) validate(lines []string) Errors {
	var errs Errors
	add := func(table, key, format string, a ...any) {
		errs = append(errs, &Error{Line: keyLine(lines, table, key), Key: table + "." + key, Msg: fmt.Sprintf(format, a...)})
	}
	oneOf := func(table, key, v string, allowed ...string) {
		if !slices.Contains(allowed, v) {
			add(table, key, "%q is not one of %s", v, strings.Join(allowed, ", "))
		}
	}
	oneOf("approval", "mode", p.Approval.Mode, ApprovalUntrusted, ApprovalOnFailure, ApprovalOnRequest, ApprovalNever)
	oneOf("approval", "prompt", p.Approval.Prompt, "auto", "tty", "deny")
	oneOf("sandbox", "mode", p.Sandbox.Mode, ModeReadOnly, ModeWorkspaceWrite, ModeDangerFullAccess)
	oneOf("env", "inherit", p.Env.Inherit, "all", "core", "none")
	for _, g := range p.Env.Exclude {
		if _, err := path.Match(g, ""); err != nil {
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
	if s := p.Limits.SessionTimeout; s != "" {
		if d, err := time.ParseDuration(s); err != nil || d <= 0 {
			add("limits", "session_timeout", "%q is not a positive duration such as \"30m\" or \"2h\"", s)
		}
	}
	for i, r := range p.Rules {
		at := func(key, format string, a ...any) {
			errs = append(errs, &Error{Line: r.Line, Key: fmt.Sprintf("rule[%d].%s", i, key), Msg: fmt.Sprintf(format, a...)})
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
				return fmt.Errorf("a pattern element must be a word or a list of words, got %T", e)
			}
			out = append(out, s)
		}
		*a = out
	default:
		return fmt.Errorf("a pattern element must be a word or a list of words, got %T", v)
	}
	return nil
}

// coreEnv are the variables kept by inherit = "core".
var coreEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "PWD"}

// Build turns base (NAME=value entries) into the environment of a
// command: inherit all, the core set, or none; drop names matching the
// exclude globs (case-insensitive); then apply set.
func (e Env) Build(base []string) []string {
	var out []string
	for _, kv := range base {
		name, _, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		switch e.Inherit {
		case "none":
			continue
		case "core":
			if !slices.Contains(coreEnv, name) {
				continue
			}
		}
		if e.excluded(name) {
			continue
		}
		if _, ok := e.Set[name]; ok {
			continue
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

func (e Env) excluded(name string) bool {
	up := strings.ToUpper(name)
	for _, g := range e.Exclude {
		if ok, _ := path.Match(strings.ToUpper(g), up); ok {
			return true
		}
	}
	return false
}
