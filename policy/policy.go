package policy

import (
	"strings"
	"time"
)

// Policy is one decoded policy.toml.
type Policy struct {
	Approval Approval `toml:"approval"`
	Sandbox  Sandbox  `toml:"sandbox"`
	Network  Network  `toml:"network"`
	Rules    []Rule   `toml:"rule"`
	Env      Env      `toml:"env"`
	Limits   Limits   `toml:"limits"`
	Audit    Audit    `toml:"audit"`

	// Source names where the policy came from ("embedded default" or a
	// file path); it is not a TOML key.
	Source string `toml:"-"`

	// loc finds keys' lines in the file, for messages.
	loc *locator
}

// Line is the line of the file where key ("sandbox.writable_roots")
// is set, 0 when unknown or unset.
func (p *Policy) Line(key string) int {
	if p.loc == nil {
		return 0
	}
	return p.loc.line(key, -1)
}

// Approval is the [approval] table.
type Approval struct {
	Mode   string `toml:"mode"`   // untrusted | on-failure | on-request | never
	Prompt string `toml:"prompt"` // auto | tty | deny
}

// Sandbox modes.
const (
	ModeReadOnly         = "read-only"
	ModeWorkspaceWrite   = "workspace-write"
	ModeDangerFullAccess = "danger-full-access"
)

// Sandbox is the [sandbox] table.
type Sandbox struct {
	Mode                string   `toml:"mode"`
	Network             bool     `toml:"network"`
	WritableRoots       []string `toml:"writable_roots"`
	ExcludeSlashTmp     bool     `toml:"exclude_slash_tmp"`
	ExcludeTmpdirEnvVar bool     `toml:"exclude_tmpdir_env_var"`
	// Protected are names (relative to each writable root) or absolute
	// paths that stay read-only inside writable roots.
	Protected []string `toml:"protected"`
	// DenyRead are paths that cannot be read ("~/" is both $HOME and the
	// account's own home where they differ; "~user/" that user's).
	DenyRead []string `toml:"deny_read"`
	// Git is how much of the git repositories inside writable roots
	// commands may change: [GitCommit] or [GitReadOnly].
	Git string `toml:"git"`
	// Required refuses to run when the sandbox cannot be enforced.
	Required bool `toml:"required"`
	// CommandEnv is the environment commands get ([Env] Build of this
	// program's, [env] set included), when the caller knows it: a HOME,
	// a moved secret store (DOCKER_CONFIG...) or a git configuration
	// variable set there is covered as this program's own are. Not read
	// from the policy file.
	CommandEnv []string `toml:"-"`
}

// CommandValue is the value of the variable name in CommandEnv (its last
// entry), or "".
func (s Sandbox) CommandValue(name string) string {
	for i := len(s.CommandEnv) - 1; i >= 0; i-- {
		if k, v, _ := strings.Cut(s.CommandEnv[i], "="); k == name {
			return v
		}
	}
	return ""
}

// Values of [Sandbox] Git.
const (
	// GitCommit: what git writes for everyday work (index, objects, refs,
	// logs, HEAD) is writable; what makes git run a program (hooks/,
	// config, config.worktree, the directory core.hooksPath names, ...)
	// stays read-only, in every repository under the writable roots.
	GitCommit = "commit"
	// GitReadOnly: every repository under the writable roots is
	// read-only whole.
	GitReadOnly = "read-only"
)

// DefaultProtected are the names kept read-only inside writable roots.
// Git repositories are kept by [Sandbox] Git, not by this list.
var DefaultProtected = []string{".agents", ".codex"}

// DefaultDenyRead are the secret stores that sandboxed commands cannot
// read: keys, cloud and registry credentials, the agents' own (Codex,
// Claude), password stores, and shell and REPL histories (commands typed
// with secrets in them).
var DefaultDenyRead = []string{
	"~/.ssh", "~/.aws", "~/.gnupg", "~/.config/gh", "~/.netrc", "~/.docker",
	"~/.kube", "~/.config/gcloud", "~/.azure", "~/.git-credentials", "~/.npmrc", "~/.pypirc",
	"~/.codex/auth.json", "~/.claude/.credentials.json", "~/.claude.json", "~/.config/git/credentials",
	"~/.pgpass", "~/.my.cnf", "~/.vault-token", "~/.cargo/credentials", "~/.cargo/credentials.toml",
	"~/.gem/credentials", "~/.terraform.d/credentials.tfrc.json", "~/.config/op", "~/.password-store",
	"~/.local/share/keyrings", "~/.s3cfg", "~/.boto", "~/.config/rclone", "~/.config/hub",
	"~/.bash_history", "~/.zsh_history", "~/.histfile", "~/.local/share/fish/fish_history",
	"~/.python_history", "~/.psql_history", "~/.mysql_history", "~/.sqlite_history", "~/.node_repl_history",
	"~/.lesshst", "~/.rediscli_history",
}

// DefaultSandbox is the [sandbox] table when the policy says nothing.
func DefaultSandbox() Sandbox {
	return Sandbox{
		Mode:      ModeWorkspaceWrite,
		Git:       GitCommit,
		Protected: append([]string(nil), DefaultProtected...),
		DenyRead:  append([]string(nil), DefaultDenyRead...),
		Required:  true,
	}
}

// Rule is one [[rule]] entry.
type Rule struct {
	// Pattern is an argv prefix; each element lists the words it accepts
	// (one word, or a list of alternatives in the file).
	Pattern  []Alternatives `toml:"pattern"`
	Decision string         `toml:"decision"` // allow | prompt | forbid
	Reason   string         `toml:"reason"`
	// Sandbox, when set, is the sandbox mode for commands this rule
	// matches (e.g. danger-full-access for `git push`).
	Sandbox string `toml:"sandbox"`
	// Line is the line of the rule in its file, for messages.
	Line int `toml:"-"`
}

// Alternatives is one element of a rule pattern: the words it matches.
type Alternatives []string

// Env is the [env] table.
type Env struct {
	Inherit string `toml:"inherit"` // all | core | none
	// Exclude are globs (case-insensitive) of names never passed on; a
	// glob after "!" keeps the names it matches whatever else matches.
	Exclude []string          `toml:"exclude"`
	Set     map[string]string `toml:"set"`
}

// DefaultMaxProcesses is [limits] max_processes when the policy says
// nothing: room for parallel builds and thread-heavy tools, well short of
// what a fork bomb needs to hurt the machine.
const DefaultMaxProcesses = 2048

// Limits is the [limits] table.
type Limits struct {
	MaxSessions       int    `toml:"max_sessions"`
	MaxOutputTokens   int    `toml:"max_output_tokens"`
	OutputBufferBytes int    `toml:"output_buffer_bytes"`
	SessionTimeout    string `toml:"session_timeout"` // Go duration; "" = none
	// MaxProcesses caps the processes and threads of one session; 0 = no
	// limit.
	MaxProcesses int `toml:"max_processes"`
}

// IdleTimeout is session_timeout as a duration; 0 when there is none (a
// policy that passed validation has either).
func (l Limits) IdleTimeout() time.Duration {
	d, err := time.ParseDuration(l.SessionTimeout)
	if err != nil || d < 0 {
		return 0
	}
	return d
}

// Audit is the [audit] table.
type Audit struct {
	Path     string `toml:"path"`
	Required bool   `toml:"required"`
}
