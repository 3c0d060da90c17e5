package policy

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func TestParseHostEntry(t *testing.T) {
	pfx := netip.MustParsePrefix
	cases := []struct {
		in     string
		deny   bool
		domain string
		wild   bool
		prefix string
		ports  []uint16
	}{
		{in: "example.com", domain: "example.com", ports: []uint16{80, 443}},
		{in: "Example.COM.", domain: "example.com", ports: []uint16{80, 443}},
		{in: "example.com", deny: true, domain: "example.com", ports: nil},
		{in: "example.com:8443", domain: "example.com", ports: []uint16{8443}},
		{in: "example.com:*", domain: "example.com", ports: nil},
		{in: "*.example.com", domain: "example.com", wild: true, ports: []uint16{80, 443}},
		{in: "*", domain: "*", ports: []uint16{80, 443}},
		{in: "files_1.example-2.com", domain: "files_1.example-2.com", ports: []uint16{80, 443}},
		{in: "203.0.113.7", prefix: "203.0.113.7/32", ports: []uint16{80, 443}},
		{in: "203.0.113.0/24", prefix: "203.0.113.0/24", ports: []uint16{80, 443}},
		{in: "10.0.0.0/8:5432", prefix: "10.0.0.0/8", ports: []uint16{5432}},
		{in: "[2001:db8::1]:443", prefix: "2001:db8::1/128", ports: []uint16{443}},
		{in: "[2001:db8::/32]:*", prefix: "2001:db8::/32", ports: nil},
		{in: "2001:db8::1", prefix: "2001:db8::1/128", ports: []uint16{80, 443}},
		{in: "::ffff:127.0.0.1", prefix: "127.0.0.1/32", ports: []uint16{80, 443}},
		{in: "fd00::/8", prefix: "fd00::/8", ports: []uint16{80, 443}},
	}
	for _, c := range cases {
		e, err := ParseHostEntry(c.in, c.deny)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if e.Domain != c.domain || e.Wildcard != c.wild || !slices.Equal(e.Ports, c.ports) {
			t.Errorf("%q: got %+v", c.in, e)
		}
		if c.prefix != "" && e.Prefix != pfx(c.prefix) || c.prefix == "" && e.IsIP() {
			t.Errorf("%q: prefix %v, want %q", c.in, e.Prefix, c.prefix)
		}
	}
	bad := map[string]string{
		"":                  "no host",
		"example.com:":      "empty port",
		"example.com:0":     "port",
		"example.com:http":  "port",
		"example.com:70000": "port",
		"exa mple.com":      "not allowed",
		"bücher.de":         "xn--",
		"a..b":              "empty label",
		"10.0.0.1/8":        "host bits",
		"[::1":              "closing",
		"[::1]443":          "[ADDRESS]:PORT",
		"1.2.3":             "not a valid IPv4",
		"999.1.1.1":         "not a valid IPv4",
		"fe80::1%eth0":      "zone",
		"**.example.com":    "not allowed",
		"a:b:c":             "IPv6",
	}
	for in, want := range bad {
		if _, err := ParseHostEntry(in, false); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error containing %q", in, err, want)
		}
	}
}

func TestHostEntryMatches(t *testing.T) {
	e, _ := ParseHostEntry("*.example.com", false)
	for host, want := range map[string]bool{"a.example.com": true, "a.b.example.com": true, "example.com": false, "badexample.com": false, "example.com.evil": false} {
		if e.MatchesName(host) != want {
			t.Errorf("*.example.com on %q: want %v", host, want)
		}
	}
	e, _ = ParseHostEntry("example.com", false)
	if !e.MatchesName("example.com") || e.MatchesName("a.example.com") || !e.CoversPort(443) || e.CoversPort(8443) {
		t.Errorf("example.com: %+v", e)
	}
	e, _ = ParseHostEntry("10.0.0.0/8", false)
	if e.MatchesName("10.0.0.1") {
		t.Error("an IP entry matched a name")
	}
}

func TestParseNetwork(t *testing.T) {
	p, err := Parse([]byte("[network]\nmode = \"allowlist\"\nallow = [\"pypi.org\", \"*.pythonhosted.org\"]\ndeny = [\"evil.pypi.org\"]\nask = true\n"), "p.toml")
	if err != nil {
		t.Fatal(err)
	}
	if p.NetworkMode() != NetworkAllowlist || len(p.Network.Allow) != 2 || !p.Network.Ask {
		t.Fatalf("%+v", p.Network)
	}
	if Default().NetworkMode() != NetworkOff {
		t.Fatal("the default policy has network")
	}
	old, err := Parse([]byte("[sandbox]\nnetwork = true\n"), "p.toml")
	if err != nil || old.NetworkMode() != NetworkOn {
		t.Fatalf("old spelling: %v %v", err, old.NetworkMode())
	}
	cases := []struct{ text, want string }{
		{"[network]\nmode = \"some\"\n", `p.toml:2: network.mode: "some" is not one of off, allowlist, on`},
		{"[sandbox]\nnetwork = true\n[network]\nmode = \"allowlist\"\n", `p.toml:4: network.mode: "allowlist" disagrees with [sandbox] network = true`},
		{"[sandbox]\nnetwork = false\n[network]\nmode = \"on\"\n", `disagrees with [sandbox] network = false`},
		{"[network]\nmode = \"allowlist\"\nallow = [\"a.com\", \"b .com\"]\n", `p.toml:3: network.allow: "b .com": character ' '`},
		{"[network]\nmode = \"allowlist\"\ndeny = [\"a.com:x\"]\n", `p.toml:3: network.deny: "a.com:x": port "x"`},
		{"[network]\nallow = [\"a.com\"]\n", `network.mode: the network is off, so allow, deny and ask would be ignored`},
		{"[network]\nmode = \"on\"\nask = true\n", `the network is on, so allow`},
		{"[network]\nmode = \"allowlist\"\nallowed = []\n", `p.toml:3: network.allowed: unknown key (known keys of [network]: mode, allow, deny, ask)`},
		{"[network]\nmode = \"allowlist\"\nask = \"yes\"\n", `p.toml:3: network.ask: wrong type`},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.text), "p.toml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\ngot  %v\nwant %s", c.text, err, c.want)
		}
	}
}
