package egress

import "net/netip"

// specialRanges are the addresses the proxy never reaches for a name
// unless an allow entry names them by address: they lead back into the
// host or its private networks rather than to the internet.
var specialRanges = []struct {
	prefix netip.Prefix
	kind   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "a 'this network' address"},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (carrier-grade NAT) address"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address (cloud metadata lives at 169.254.169.254)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol address"},
	{netip.MustParsePrefix("192.0.2.0/24"), "a documentation address"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("198.51.100.0/24"), "a documentation address"},
	{netip.MustParsePrefix("203.0.113.0/24"), "a documentation address"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
	{netip.MustParsePrefix("::/128"), "the unspecified address"},
	{netip.MustParsePrefix("::1/128"), "a loopback address"},
	{netip.MustParsePrefix("100::/64"), "a discard address"},
	{netip.MustParsePrefix("2001:db8::/32"), "a documentation address"},
	{netip.MustParsePrefix("fc00::/7"), "a private (unique local) address"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address"},
	{netip.MustParsePrefix("fec0::/10"), "a site-local address"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast address"},
}

// Translated IPv6 ranges that carry an IPv4 address: a NAT64 or 6to4
// gateway would deliver to the IPv4 address inside.
var (
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4 = netip.MustParsePrefix("2002::/16")
)

// Special names the kind of a special address ("a loopback address"), or
// "" for an ordinary public one. IPv4-mapped, NAT64 and 6to4 addresses
// are judged by the IPv4 address they carry.
func Special(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	if !a.IsValid() {
		return "not an address"
	}
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64.Contains(a):
			if k := Special(netip.AddrFrom4([4]byte(b[12:16]))); k != "" {
				return k + " (through NAT64)"
			}
		case sixTo4.Contains(a):
			if k := Special(netip.AddrFrom4([4]byte(b[2:6]))); k != "" {
				return k + " (through 6to4)"
			}
		}
	}
	for _, r := range specialRanges {
		if r.prefix.Contains(a) {
			return r.kind
		}
	}
	return ""
}
