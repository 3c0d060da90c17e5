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
		{"empty pattern", "[[rule]]\npattern = []\ndecision = \"allow\"\n", `p.toml:1: rule[0].pattern: empty pattern`},
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
