package egress

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unified-exec/unified-exec/policy"
)

func mustRules(t *testing.T, n policy.Network) *Rules {
	t.Helper()
	r, err := Compile(n)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDecide(t *testing.T) {
	r := mustRules(t, policy.Network{
		Allow: []string{"pypi.org", "*.pythonhosted.org", "git.test:8443", "203.0.113.0/24", "[2001:db8::1]:443", "any.test:*"},
		Deny:  []string{"bad.pythonhosted.org", "203.0.113.66", "any.test:25"},
	})
	ask := mustRules(t, policy.Network{Allow: []string{"pypi.org"}, Ask: true})
	cases := []struct {
		r     *Rules
		host  string
		port  uint16
		want  Verdict
		entry string
		why   string
	}{
		{r, "pypi.org", 443, Allow, "pypi.org", "allowed by"},
		{r, "PyPI.org.", 80, Allow, "pypi.org", ""},
		{r, "pypi.org", 8080, Deny, "", "no allow entry names pypi.org:8080"},
		{r, "files.pythonhosted.org", 443, Allow, "*.pythonhosted.org", ""},
		{r, "a.b.pythonhosted.org", 443, Allow, "*.pythonhosted.org", ""},
		{r, "pythonhosted.org", 443, Deny, "", "no allow entry"},
		{r, "bad.pythonhosted.org", 443, Deny, "bad.pythonhosted.org", "denied by"},
		{r, "evilpythonhosted.org", 443, Deny, "", ""},
		{r, "git.test", 8443, Allow, "git.test:8443", ""},
		{r, "git.test", 443, Deny, "", ""},
		{r, "any.test", 5432, Allow, "any.test:*", ""},
		{r, "any.test", 25, Deny, "any.test:25", "denied by"},
		{r, "203.0.113.7", 443, Allow, "203.0.113.0/24", ""},
		{r, "203.0.113.66", 443, Deny, "203.0.113.66", "denied by"},
		{r, "198.51.100.1", 443, Deny, "", "IP literals are refused"},
		{r, "[2001:db8::1]", 443, Allow, "[2001:db8::1]:443", ""},
		{r, "2001:db8::1", 80, Deny, "", "IP literals"},
		{r, "::ffff:203.0.113.7", 443, Allow, "203.0.113.0/24", ""},
		{r, "127.0.0.1", 443, Deny, "", "IP literals"},
		{r, "pypi.org/evil", 443, Deny, "", "not a host name"},
		{r, "", 443, Deny, "", "not a host name"},
		{ask, "pypi.org", 443, Allow, "pypi.org", ""},
		{ask, "npmjs.org", 443, Ask, "", "asked"},
		{ask, "10.0.0.1", 443, Deny, "", "IP literals"},
		{&Rules{}, "pypi.org", 443, Deny, "", ""},
	}
	for _, c := range cases {
		d := c.r.Decide(c.host, c.port)
		if d.Verdict != c.want || d.Entry != c.entry || !strings.Contains(d.Reason, c.why) {
			t.Errorf("Decide(%q, %d) = %v %q %q; want %v %q, a reason containing %q", c.host, c.port, d.Verdict, d.Entry, d.Reason, c.want, c.entry, c.why)
		}
	}
}

func TestSpecial(t *testing.T) {
	cases := map[string]string{
		"127.0.0.1":        "loopback",
		"127.255.0.9":      "loopback",
		"::1":              "loopback",
		"::ffff:127.0.0.1": "loopback",
		"10.1.2.3":         "private",
		"172.16.0.1":       "private",
		"172.31.255.255":   "private",
		"192.168.1.1":      "private",
		"fd12::1":          "private",
		"169.254.169.254":  "link-local",
		"fe80::1":          "link-local",
		"224.0.0.1":        "multicast",
		"ff02::1":          "multicast",
		"0.0.0.0":          "this network",
		"::":               "unspecified",
		"100.100.100.100":  "carrier-grade",
		"255.255.255.255":  "reserved",
		"64:ff9b::7f00:1":  "loopback address (through NAT64)",
		"2002:a00:1::":     "private address (through 6to4)",
		"8.8.8.8":          "",
		"172.32.0.1":       "",
		"2606:4700::1111":  "",
		"64:ff9b::808:808": "",
	}
	for in, want := range cases {
		got := Special(netip.MustParseAddr(in))
		if want == "" && got != "" || want != "" && !strings.Contains(got, want) {
			t.Errorf("Special(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestCheckAddr(t *testing.T) {
	r := mustRules(t, policy.Network{Allow: []string{"127.0.0.2:8443", "10.0.0.0/8:5432", "pypi.org"}, Deny: []string{"8.8.4.0/24"}})
	local := []netip.Addr{netip.MustParseAddr("198.18.0.5"), netip.MustParseAddr("93.184.216.34")}
	cases := []struct {
		addr string
		port uint16
		why  string
	}{
		{"8.8.8.8", 443, ""},
		{"8.8.4.4", 443, "denied by"},
		{"127.0.0.1", 443, "loopback"},
		{"127.0.0.2", 8443, ""},
		{"127.0.0.2", 443, "loopback"},
		{"10.9.9.9", 5432, ""},
		{"10.9.9.9", 22, "private"},
		{"169.254.169.254", 80, "link-local"},
		{"93.184.216.34", 443, "an address of this host"},
		{"::ffff:127.0.0.2", 8443, ""},
	}
	for _, c := range cases {
		got := r.CheckAddr(netip.MustParseAddr(c.addr), c.port, local)
		if c.why == "" && got != "" || c.why != "" && !strings.Contains(got, c.why) {
			t.Errorf("CheckAddr(%s, %d) = %q, want %q", c.addr, c.port, got, c.why)
		}
	}
}

func TestHostsResolver(t *testing.T) {
	f := filepath.Join(t.TempDir(), "hosts")
	os.WriteFile(f, []byte("# test\n127.0.0.2 pypi.test Git.Test\n::1 six.test # v6\n10.0.0.1 pypi.test\n"), 0o644)
	r, err := LoadHosts(f)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.LookupNetIP(context.Background(), "ip", "PYPI.test.")
	if err != nil || len(got) != 2 || got[0].String() != "127.0.0.2" {
		t.Fatalf("pypi.test: %v %v", got, err)
	}
	if got, _ := r.LookupNetIP(context.Background(), "ip4", "git.test"); len(got) != 1 {
		t.Fatalf("git.test: %v", got)
	}
	if _, err := r.LookupNetIP(context.Background(), "ip4", "six.test"); err == nil {
		t.Fatal("six.test has no IPv4 address")
	}
	if _, err := r.LookupNetIP(context.Background(), "ip", "pypi.org"); err == nil || !strings.Contains(err.Error(), "not in the test hosts file") {
		t.Fatalf("unknown name: %v", err)
	}
	os.WriteFile(f, []byte("nonsense\n"), 0o644)
	if _, err := LoadHosts(f); err == nil {
		t.Fatal("bad hosts file accepted")
	}
}
