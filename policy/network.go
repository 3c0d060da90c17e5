package policy

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Network modes of the [network] table.
const (
	// NetworkOff: only Unix-domain sockets (the default).
	NetworkOff = "off"
	// NetworkAllowlist: commands run in a network namespace with loopback
	// only, and reach the hosts the policy names through the server's
	// egress proxy.
	NetworkAllowlist = "allowlist"
	// NetworkOn: the host's network, unfiltered.
	NetworkOn = "on"
)

// Network is the [network] table.
type Network struct {
	// Mode is off, allowlist or on; "" takes [sandbox] network (the old
	// spelling: true is on, false off).
	Mode string `toml:"mode"`
	// Allow and Deny are host entries (see [ParseHostEntry]); a deny
	// entry wins over an allow entry.
	Allow []string `toml:"allow"`
	Deny  []string `toml:"deny"`
	// Ask: a host no entry names is asked about (approval flow) rather
	// than refused.
	Ask bool `toml:"ask"`
}

// NetworkMode is the network mode in force: [Network.Mode], or the old
// spelling [Sandbox.Network] (which also carries the wrapper's --network).
func (p *Policy) NetworkMode() string {
	if p.Sandbox.Network {
		return NetworkOn
	}
	if p.Network.Mode == "" {
		return NetworkOff
	}
	return p.Network.Mode
}

// DefaultPorts are the ports of an allow entry that names none.
var DefaultPorts = []uint16{80, 443}

// HostEntry is one entry of [network] allow or deny, parsed.
type HostEntry struct {
	// Text is the entry as written.
	Text string
	// Domain is a lower-case name without a trailing dot ("" for an IP
	// entry). With Wildcard it is the parent whose subdomains match, at
	// any depth ("*.example.com": a.example.com, a.b.example.com, not
	// example.com); Domain "*" alone matches every name (not IP literals).
	Domain   string
	Wildcard bool
	// Prefix is the address or network of an IP entry.
	Prefix netip.Prefix
	// Ports are the ports it covers; nil covers every port ("host:*").
	Ports []uint16
}

// IsIP reports whether the entry names addresses rather than names.
func (e HostEntry) IsIP() bool { return e.Prefix.IsValid() }

// CoversPort reports whether the entry covers port.
func (e HostEntry) CoversPort(port uint16) bool {
	return e.Ports == nil || slices.Contains(e.Ports, port)
}

// MatchesName reports whether a name entry covers host (lower-case, no
// trailing dot).
func (e HostEntry) MatchesName(host string) bool {
	switch {
	case e.IsIP():
		return false
	case e.Domain == "*":
		return true
	case e.Wildcard:
		return strings.HasSuffix(host, "."+e.Domain)
	}
	return host == e.Domain
}

// ParseHostEntry parses an allow (deny false) or deny (deny true) entry:
//
//	example.com          the name, ports 80 and 443 (deny: every port)
//	example.com:8443     one port; "example.com:*" every port
//	*.example.com        every subdomain (not example.com itself)
//	*                    every name (IP literals still need IP entries)
//	203.0.113.7          an address; 203.0.113.0/24 a network
//	10.0.0.0/8:5432      with a port
//	[2001:db8::1]:443    IPv6 in brackets with a port; bare without one
//
// Names are ASCII (write internationalized names in their xn-- form).
func ParseHostEntry(s string, deny bool) (HostEntry, error) {
	e := HostEntry{Text: s}
	host, port := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return e, fmt.Errorf("%q: no closing ] after an IPv6 address", s)
		}
		host, port = s[1:end], s[end+1:]
		if port != "" {
			p, ok := strings.CutPrefix(port, ":")
			if !ok {
				return e, fmt.Errorf("%q: want [ADDRESS]:PORT", s)
			}
			port = p
			if port == "" {
				return e, fmt.Errorf("%q: empty port", s)
			}
		}
	} else if strings.Count(s, ":") < 2 {
		if i := strings.LastIndexByte(s, ':'); i >= 0 {
			host, port = s[:i], s[i+1:]
			if port == "" {
				return e, fmt.Errorf("%q: empty port", s)
			}
		}
	}
	switch {
	case port == "*":
		e.Ports = nil
	case port != "":
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 {
			return e, fmt.Errorf("%q: port %q is not a number from 1 to 65535 or *", s, port)
		}
		e.Ports = []uint16{uint16(n)}
	case deny:
		e.Ports = nil
	default:
		e.Ports = slices.Clone(DefaultPorts)
	}
	if host == "" {
		return e, fmt.Errorf("%q: no host", s)
	}
	if strings.Contains(host, "/") {
		p, err := netip.ParsePrefix(host)
		if err != nil {
			return e, fmt.Errorf("%q: not an address/prefix-length network: %v", s, err)
		}
		if p.Masked() != p {
			return e, fmt.Errorf("%q: the network has host bits set; write %s", s, p.Masked())
		}
		e.Prefix = unmapPrefix(p)
		return e, nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return e, fmt.Errorf("%q: an address with a zone cannot be allowed", s)
		}
		a = a.Unmap()
		e.Prefix = netip.PrefixFrom(a, a.BitLen())
		return e, nil
	}
	if strings.Contains(host, ":") {
		return e, fmt.Errorf("%q: not an IPv6 address (write [ADDRESS]:PORT to give a port)", s)
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if name == "*" {
		e.Domain = "*"
		return e, nil
	}
	if rest, ok := strings.CutPrefix(name, "*."); ok {
		e.Wildcard = true
		name = rest
	}
	if err := CheckHostname(name); err != nil {
		return e, fmt.Errorf("%q: %v", s, err)
	}
	if isAllDigitsAndDots(name) {
		return e, fmt.Errorf("%q: not a valid IPv4 address", s)
	}
	e.Domain = name
	return e, nil
}

// unmapPrefix turns an IPv4-mapped IPv6 network into the IPv4 one.
func unmapPrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p
}

func isAllDigitsAndDots(s string) bool {
	for _, c := range s {
		if c != '.' && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// CheckHostname accepts a lower-case ASCII host name: labels of letters,
// digits, '-' and '_' of at most 63 bytes, at most 253 in all.
func CheckHostname(name string) error {
	if name == "" {
		return fmt.Errorf("empty name")
	}
	if len(name) > 253 {
		return fmt.Errorf("name longer than 253 bytes")
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" {
			return fmt.Errorf("empty label in %q", name)
		}
		if len(label) > 63 {
			return fmt.Errorf("label longer than 63 bytes in %q", name)
		}
		for _, c := range label {
			switch {
			case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
			case c > 127:
				return fmt.Errorf("non-ASCII name %q: write it in its xn-- (punycode) form", name)
			default:
				return fmt.Errorf("character %q is not allowed in a host name", c)
			}
		}
	}
	return nil
}

// validateNetwork checks the [network] table.
func (p *Policy) validateNetwork(loc *locator, defined func(key ...string) bool) Errors {
	var errs Errors
	add := func(key, format string, a ...any) {
		errs = append(errs, &Error{Line: loc.line("network."+key, -1), Key: "network." + key, Msg: fmt.Sprintf(format, a...)})
	}
	n := p.Network
	if n.Mode != "" && !slices.Contains([]string{NetworkOff, NetworkAllowlist, NetworkOn}, n.Mode) {
		add("mode", "%q is not one of off, allowlist, on", n.Mode)
	}
	if n.Mode != "" && defined("sandbox", "network") && (n.Mode == NetworkOn) != p.Sandbox.Network {
		add("mode", "%q disagrees with [sandbox] network = %v (the old spelling): remove one", n.Mode, p.Sandbox.Network)
	}
	for _, s := range n.Allow {
		if _, err := ParseHostEntry(s, false); err != nil {
			add("allow", "%v", err)
		}
	}
	for _, s := range n.Deny {
		if _, err := ParseHostEntry(s, true); err != nil {
			add("deny", "%v", err)
		}
	}
	if m := p.NetworkMode(); m != NetworkAllowlist && (len(n.Allow) > 0 || len(n.Deny) > 0 || n.Ask) {
		add("mode", "the network is %s, so allow, deny and ask would be ignored: set mode = \"allowlist\"", m)
	}
	return errs
}
