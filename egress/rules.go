package egress

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/unified-exec/unified-exec/policy"
)

// Verdict is what the policy says about a destination.
type Verdict int

// Verdicts.
const (
	Deny Verdict = iota
	Allow
	Ask
)

func (v Verdict) String() string {
	return [...]string{"deny", "allow", "ask"}[v]
}

// Decision is a [Verdict] with what decided it.
type Decision struct {
	Verdict Verdict
	// Entry is the allow or deny entry that decided, as written ("" when
	// none did).
	Entry string
	// Reason says why, for the audit log and the refusal a client sees.
	Reason string
}

// Rules are the [network] table, compiled: pure decisions, no I/O.
// Their zero value refuses everything.
type Rules struct {
	allow, deny []policy.HostEntry
	ask         bool
}

// Compile parses the allow and deny entries of n (a validated policy has
// no bad ones; the first bad one is an error).
func Compile(n policy.Network) (*Rules, error) {
	r := &Rules{ask: n.Ask}
	for _, s := range n.Allow {
		e, err := policy.ParseHostEntry(s, false)
		if err != nil {
			return nil, fmt.Errorf("egress: [network] allow: %w", err)
		}
		r.allow = append(r.allow, e)
	}
	for _, s := range n.Deny {
		e, err := policy.ParseHostEntry(s, true)
		if err != nil {
			return nil, fmt.Errorf("egress: [network] deny: %w", err)
		}
		r.deny = append(r.deny, e)
	}
	return r, nil
}

// NormalizeHost lower-cases a host, drops a trailing dot and the brackets
// of an IPv6 literal, and says whether it is an IP literal.
func NormalizeHost(host string) (string, netip.Addr, bool) {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if a, err := netip.ParseAddr(h); err == nil {
		return h, a.Unmap(), true
	}
	return h, netip.Addr{}, false
}

// Decide judges a destination as the client named it: a name or an IP
// literal, and a port. A deny entry wins; then an allow entry; then ask,
// if the policy asks; else deny. An IP literal is allowed only by an
// entry that names the address; a name must be a valid host name.
func (r *Rules) Decide(host string, port uint16) Decision {
	h, addr, isIP := NormalizeHost(host)
	if isIP {
		if addr.Zone() != "" {
			return Decision{Reason: "an address with a zone is refused"}
		}
		if e, ok := r.coversAddr(r.deny, addr, port); ok {
			return Decision{Entry: e.Text, Reason: fmt.Sprintf("%s is denied by %q", hostPort(h, port), e.Text)}
		}
		if e, ok := r.coversAddr(r.allow, addr, port); ok {
			return Decision{Verdict: Allow, Entry: e.Text, Reason: fmt.Sprintf("allowed by %q", e.Text)}
		}
		return Decision{Reason: fmt.Sprintf("%s is an IP address, and no allow entry names it (IP literals are refused unless allowed by address)", hostPort(h, port))}
	}
	if err := policy.CheckHostname(h); err != nil {
		return Decision{Reason: "not a host name: " + err.Error()}
	}
	for _, e := range r.deny {
		if e.MatchesName(h) && e.CoversPort(port) {
			return Decision{Entry: e.Text, Reason: fmt.Sprintf("%s is denied by %q", hostPort(h, port), e.Text)}
		}
	}
	for _, e := range r.allow {
		if e.MatchesName(h) && e.CoversPort(port) {
			return Decision{Verdict: Allow, Entry: e.Text, Reason: fmt.Sprintf("allowed by %q", e.Text)}
		}
	}
	if r.ask {
		return Decision{Verdict: Ask, Reason: fmt.Sprintf("no entry names %s: asked", hostPort(h, port))}
	}
	return Decision{Reason: fmt.Sprintf("no allow entry names %s", hostPort(h, port))}
}

// CheckAddr judges an address the proxy is about to connect to, whatever
// name led there: denied by an IP deny entry; or special (loopback,
// private, link-local, multicast, one of local: the host's own) and not
// named by an IP allow entry. It returns "" when the address may be
// used, else the reason.
func (r *Rules) CheckAddr(addr netip.Addr, port uint16, local []netip.Addr) string {
	addr = addr.Unmap()
	if e, ok := r.coversAddr(r.deny, addr, port); ok {
		return fmt.Sprintf("%s is denied by %q", netip.AddrPortFrom(addr, port), e.Text)
	}
	kind := Special(addr)
	if kind == "" {
		for _, l := range local {
			if l.Unmap() == addr.WithZone("") {
				kind = "an address of this host"
				break
			}
		}
	}
	if kind == "" {
		return ""
	}
	if _, ok := r.coversAddr(r.allow, addr, port); ok {
		return ""
	}
	return fmt.Sprintf("%s is %s; only an allow entry naming the address reaches it", addr, kind)
}

func (r *Rules) coversAddr(list []policy.HostEntry, addr netip.Addr, port uint16) (policy.HostEntry, bool) {
	for _, e := range list {
		if e.IsIP() && e.Prefix.Contains(addr.WithZone("")) && e.CoversPort(port) {
			return e, true
		}
	}
	return policy.HostEntry{}, false
}

func hostPort(h string, port uint16) string {
	if strings.Contains(h, ":") {
		return fmt.Sprintf("[%s]:%d", h, port)
	}
	return fmt.Sprintf("%s:%d", h, port)
}
