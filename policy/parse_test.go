package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestDefaultParses(t *testing.T) {
	p := Default()
	if p.Approval.Mode != ApprovalOnRequest || p.Sandbox.Mode != ModeWorkspaceWrite || p.Sandbox.Network || !p.Sandbox.Required {
		t.Fatalf("default policy: %+v", p)
	}
	if len(p.Rules) == 0 || p.Rules[0].Line == 0 {
		t.Fatalf("rules: %+v", p.Rules)
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, text, want string
	}{
		{"unknown key", "[approval]\nmode = \"never\"\nmood = \"x\"\n", `p.toml:3: approval.mood: unknown key (known keys of [approval]: mode, prompt)`},
		{"unknown table", "[aproval]\nmode = \"never\"\n", `p.toml:1: aproval: unknown key`},
		{"wrong type", "[sandbox]\nnetwork = \"yes\"\n", `p.toml:2: sandbox.network: wrong type`},
		{"bad enum", "[approval]\n\nmode = \"sometimes\"\n", `p.toml:3: approval.mode: "sometimes" is not one of`},
		{"not toml", "this is = = not toml", `p.toml:1`},
		{"empty pattern", "[[rule]]\npattern = []\ndecision = \"allow\"\n", `p.toml:2: rule[0].pattern: empty pattern`},
		{"bad decision", "[[rule]]\npattern = [\"ls\"]\ndecision = \"maybe\"\n", `rule[0].decision: "maybe" is not one of`},
		{"bad duration", "[limits]\nsession_timeout = \"soon\"\n", `p.toml:2: limits.session_timeout`},
		{"bad sessions", "[limits]\nmax_sessions = 0\n", `limits.max_sessions`},
		{"pattern element type", "[[rule]]\npattern = [1]\ndecision = \"allow\"\n", `pattern element`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.text), "p.toml")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v\nwant it to contain %s", err, c.want)
			}
		})
	}
}

func TestParseKeepsDefaults(t *testing.T) {
	p, err := Parse([]byte("[sandbox]\nnetwork = true\n[[rule]]\npattern = [\"git\", [\"push\", \"fetch\"]]\ndecision = \"prompt\"\n"), "p.toml")
	if err != nil {
		t.Fatal(err)
	}
	if !p.Sandbox.Network || !p.Sandbox.Required || p.Sandbox.Mode != ModeWorkspaceWrite || p.Approval.Mode != ApprovalOnRequest {
		t.Fatalf("%+v", p)
	}
	if !slices.Equal(p.Rules[0].Pattern[1], Alternatives{"push", "fetch"}) || p.Rules[0].Line != 3 {
		t.Fatalf("rule: %+v", p.Rules[0])
	}
}

func TestLoad(t *testing.T) {
	f := filepath.Join(t.TempDir(), "policy.toml")
	os.WriteFile(f, []byte("[approval]\nmode = \"never\"\n"), 0o644)
	p, err := Load(f)
	if err != nil || p.Approval.Mode != ApprovalNever || p.Source != f {
		t.Fatal(err, p)
	}
	if _, err := Load(f + ".missing"); err == nil {
		t.Fatal("missing file accepted")
	}
}

func TestEnvBuild(t *testing.T) {
	base := []string{"PATH=/bin", "HOME=/h", "GITHUB_TOKEN=x", "aws_secret_access_key=y", "MY_PASSWORD=z", "EDITOR=vi"}
	e := Env{Inherit: "all", Exclude: DefaultExclude, Set: map[string]string{"FOO": "1", "EDITOR": "nano"}}
	got := strings.Join(e.Build(base), " ")
	if got != "PATH=/bin HOME=/h EDITOR=nano FOO=1" {
		t.Fatalf("all: %s", got)
	}
	e.Inherit = "core"
	if got := strings.Join(e.Build(base), " "); got != "PATH=/bin HOME=/h EDITOR=nano FOO=1" {
		t.Fatalf("core: %s", got)
	}
	e = Env{Inherit: "none"}
	if got := e.Build(base); len(got) != 0 {
		t.Fatalf("none: %v", got)
	}
}

func TestParseErrorLines(t *testing.T) {
	cases := []struct {
		name, text, want string
	}{
		{"rule key in second rule", "[[rule]]\npattern = [\"ls\"]\ndecision = \"allow\"\n\n[[rule]]\npattern = [\"x\"]\ndecision = \"allow\"\nmood = 2\n",
			`p.toml:8: rule.mood: unknown key (known keys of [rule]: pattern, decision, reason, sandbox)`},
		{"bad decision in second rule", "[[rule]]\npattern = [\"ls\"]\ndecision = \"allow\"\n[[rule]]\npattern = [\"x\"]\n# comment\ndecision = \"maybe\"\n",
			`p.toml:7: rule[1].decision: "maybe" is not one of allow, prompt, forbid`},
		{"bad rule sandbox", "[[rule]]\npattern = [\"ls\"]\ndecision = \"allow\"\nsandbox = \"none\"\n", `p.toml:4: rule[0].sandbox: "none" is not one of`},
		{"empty alternatives", "[[rule]]\npattern = [\"ls\", []]\ndecision = \"allow\"\n", `p.toml:2: rule[0].pattern: element 1 is an empty list of alternatives`},
		{"empty word", "[[rule]]\npattern = [\"ls\", [\"a\", \"\"]]\ndecision = \"allow\"\n", `p.toml:2: rule[0].pattern: element 1 contains an empty word`},
		{"pattern element is a table", "[[rule]]\npattern = [\"ls\", {a = 1}]\ndecision = \"allow\"\n", `p.toml:2: rule.pattern: wrong type: a pattern element must be a word or a list of words, got a table`},
		{"rule decision type", "[[rule]]\npattern = [\"ls\"]\ndecision = 1\n", `p.toml:3: rule.decision: wrong type: want a string, got an integer`},
		{"inline table unknown key", "approval = { mode = \"never\", mood = \"x\" }\n", `p.toml:1: approval.mood: unknown key`},
		{"dotted key type", "approval.mode = 3\n", `p.toml:1: approval.mode: wrong type: want a string, got an integer`},
		{"dotted key unknown", "sandbox.netwrok = true\n", `p.toml:1: sandbox.netwrok: unknown key`},
		{"string for integer", "[limits]\nmax_sessions = \"64\"\n", `p.toml:2: limits.max_sessions: wrong type: want an integer, got a string`},
		{"string for array", "[env]\nexclude = \"*KEY*\"\n", `p.toml:2: env.exclude: wrong type: want an array, got a string`},
		{"env set value type", "[env.set]\nFOO = 1\n", `p.toml:2: env.set.FOO: wrong type: want a string, got an integer`},
		{"env bad glob", "[env]\nexclude = [\"[\"]\n", `p.toml:2: env.exclude: bad glob "["`},
		{"prompt enum", "[approval]\nprompt = \"email\"\n", `p.toml:2: approval.prompt: "email" is not one of auto, tty, deny`},
		{"sandbox enum", "[sandbox]\nmode = \"strict\"\n", `p.toml:2: sandbox.mode: "strict" is not one of`},
		{"git enum", "[sandbox]\ngit = \"writable\"\n", `p.toml:2: sandbox.git: "writable" is not one of commit, read-only`},
		{"inherit enum", "[env]\ninherit = \"some\"\n", `p.toml:2: env.inherit: "some" is not one of all, core, none`},
		{"buffer range", "[limits]\noutput_buffer_bytes = 10\n", `p.toml:2: limits.output_buffer_bytes: 10 is out of range`},
		{"tokens range", "[limits]\nmax_output_tokens = 0\n", `p.toml:2: limits.max_output_tokens`},
		{"negative duration", "[limits]\nsession_timeout = \"-5m\"\n", `p.toml:2: limits.session_timeout: "-5m" is not a positive duration`},
		{"duplicate table", "[approval]\nmode = \"never\"\n[approval]\n", `p.toml:3: not valid TOML`},
		{"key in a multi-line string is not a key", "[[rule]]\npattern = [\"ls\"]\nreason = \"\"\"\nmood = 1\n\"\"\"\ndecision = \"allow\"\nmood = 2\n", `p.toml:7: rule.mood: unknown key`},
		{"unknown top-level key", "colour = \"red\"\n", `p.toml:1: colour: unknown key (known keys at the top level: approval, sandbox, network, rule, env, limits, audit)`},
		{"all errors at once", "[approval]\nmode = \"x\"\nprompt = \"y\"\n", `p.toml:2: approval.mode: "x" is not one of untrusted, on-failure, on-request, never` + "\n" + `p.toml:3: approval.prompt`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.text), "p.toml")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v\nwant it to contain %s", err, c.want)
			}
		})
	}
}

func TestParseReplacesDefaultLists(t *testing.T) {
	p, err := Parse([]byte("[env]\nexclude = [\"AWS_*\"]\n[sandbox]\nprotected = []\n"), "p.toml")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Env.Exclude, []string{"AWS_*"}) || len(p.Sandbox.Protected) != 0 || len(p.Sandbox.DenyRead) == 0 {
		t.Fatalf("exclude %v protected %v deny_read %v", p.Env.Exclude, p.Sandbox.Protected, p.Sandbox.DenyRead)
	}
	// Defaults hands out fresh slices: a parse never changes the next one.
	if !slices.Equal(Defaults().Env.Exclude, DefaultExclude) {
		t.Fatal("DefaultExclude was modified")
	}
}

func TestDefaultTOMLIsTheDefault(t *testing.T) {
	p, err := Parse(DefaultTOML(), "x")
	if err != nil {
		t.Fatal(err)
	}
	d := Defaults()
	// Every value the embedded file spells out equals the built-in default,
	// so its comments ("Default ...") cannot drift from the code.
	if p.Approval != d.Approval || p.Limits != d.Limits || p.Audit != d.Audit ||
		p.Sandbox.Mode != d.Sandbox.Mode || p.Sandbox.Network != d.Sandbox.Network || p.Sandbox.Required != d.Sandbox.Required ||
		!slices.Equal(p.Sandbox.Protected, d.Sandbox.Protected) || !slices.Equal(p.Sandbox.DenyRead, d.Sandbox.DenyRead) ||
		p.Env.Inherit != d.Env.Inherit || !slices.Equal(p.Env.Exclude, d.Env.Exclude) || len(p.Env.Set) != 0 {
		t.Fatalf("embedded policy.toml differs from Defaults():\n%+v\n%+v", p, d)
	}
}

// TestEnvDefaultExclude: the default exclude drops the names secrets go
// by, and keeps the few that match one but are none (a path, an author).
func TestEnvDefaultExclude(t *testing.T) {
	e := Env{Inherit: "all", Exclude: DefaultExclude}
	dropped := []string{"GITHUB_TOKEN", "API_KEY", "MY_SECRET", "PGPASSWORD", "DB_PASS", "MYSQL_PASSWD", "AWS_CREDENTIALS",
		"GOOGLE_APPLICATION_CREDENTIALS", "BASIC_AUTH", "SSH_AUTH_SOCK", "SESSION_COOKIE", "GPG_PRIVATE", "GH_PAT",
		"DATABASE_URL", "database_url", "SENTRY_DSN", "Db_Password", "REGISTRY_CREDS", "ID_JWT", "API_BEARER",
		"BASH_FUNC_git%%", "BASH_FUNC_ls%%"}
	kept := []string{"PATH", "HOME", "XAUTHORITY", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "PATHEXT", "EDITOR", "DSN_HOST",
		"GOPATH", "JAVA_HOME", "NODE_OPTIONS", "PYTHONPATH", "CARGO_HOME", "HTTPS_PROXY", "NO_PROXY", "CI", "GITHUB_ACTIONS", "SSL_CERT_FILE"}
	for _, n := range dropped {
		if got := e.Build([]string{n + "=x"}); len(got) != 0 {
			t.Errorf("%s was kept", n)
		}
	}
	for _, n := range kept {
		if got := e.Build([]string{n + "=x"}); len(got) != 1 {
			t.Errorf("%s was dropped", n)
		}
	}
}

func TestEnvBuildTable(t *testing.T) {
	base := []string{"PATH=/bin", "HOME=/h", "LC_TIME=C", "Github_Token=x", "EDITOR=vi", "NOEQUALS"}
	cases := []struct {
		name string
		env  Env
		want string
	}{
		{"all with defaults", Env{Inherit: "all", Exclude: DefaultExclude}, "PATH=/bin HOME=/h LC_TIME=C EDITOR=vi"},
		{"case-insensitive exclude", Env{Inherit: "all", Exclude: []string{"*token*", "editor"}}, "PATH=/bin HOME=/h LC_TIME=C"},
		{"core keeps LC_*", Env{Inherit: "core"}, "PATH=/bin HOME=/h LC_TIME=C"},
		{"none with set", Env{Inherit: "none", Set: map[string]string{"B": "2", "A": "1"}}, "A=1 B=2"},
		{"kept by !", Env{Inherit: "all", Exclude: []string{"*_TIME", "*", "!PATH", "!LC_*"}}, "PATH=/bin LC_TIME=C"},
		{"set overrides and survives exclude", Env{Inherit: "all", Exclude: []string{"*TOKEN*"}, Set: map[string]string{"GITHUB_TOKEN": "ci", "PATH": "/x"}}, "HOME=/h LC_TIME=C EDITOR=vi GITHUB_TOKEN=ci PATH=/x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := strings.Join(c.env.Build(base), " "); got != c.want {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

// TestEnvProxyUserinfo: a proxy URL goes on without its user name and
// password, unless a "!" glob names the variable.
func TestEnvProxyUserinfo(t *testing.T) {
	e := Env{Inherit: "all", Exclude: DefaultExclude}
	for in, want := range map[string]string{
		"HTTPS_PROXY=http://u:pw@proxy:3128":    "HTTPS_PROXY=http://proxy:3128",
		"http_proxy=http://u:p%40w@proxy:3128/": "http_proxy=http://proxy:3128/",
		"ALL_PROXY=socks5://tok@proxy:1080":     "ALL_PROXY=socks5://proxy:1080",
		"HTTP_PROXY=u:pw@proxy:3128":            "HTTP_PROXY=proxy:3128",
		"HTTPS_PROXY=http://proxy:3128":         "HTTPS_PROXY=http://proxy:3128",
		"NO_PROXY=localhost,.corp":              "NO_PROXY=localhost,.corp",
		"HTTPS_PROXY=http://proxy/a@b":          "HTTPS_PROXY=http://proxy/a@b",
	} {
		if got := e.Build([]string{in}); len(got) != 1 || got[0] != want {
			t.Errorf("%s: got %q, want %s", in, got, want)
		}
	}
	kept := Env{Inherit: "all", Exclude: append(slices.Clone(DefaultExclude), "!HTTPS_PROXY")}
	if got := kept.Build([]string{"HTTPS_PROXY=http://u:pw@proxy:3128"}); got[0] != "HTTPS_PROXY=http://u:pw@proxy:3128" {
		t.Errorf("kept by !: %q", got)
	}
}
