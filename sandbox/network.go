package sandbox

import "github.com/unified-exec/unified-exec/policy"

// netFilter is the socket rule of a plan's seccomp filter.
type netFilter int

const (
	// netOff: socket and socketpair of AF_UNIX only.
	netOff netFilter = iota
	// netEgress: the families a network namespace isolates (see
	// egressFamilies); socketpair of AF_UNIX only.
	netEgress
	// netOn: every family.
	netOn
	// netNotify: as netOff, but socket and socketpair of another family
	// go to the filter's listener (see applySeccompThreadListen), which
	// reports them and refuses them; never a plan's own.
	netNotify
	netFilters
)

func netFilterOf(p Plan) netFilter {
	switch {
	case p.Network:
		return netOn
	case p.Egress:
		return netEgress
	}
	return netOff
}

// egressText says what allowlist mode gives a command, for plans.
const egressText = "a network namespace with loopback only, shared by the sandboxed commands of this server; out only through the egress proxy (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY); socket() of AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK with NETLINK_ROUTE only, socketpair of AF_UNIX only"

// WithNetwork returns the plan for a [network] mode (policy.NetworkOff,
// NetworkAllowlist or NetworkOn, as [policy.Policy.NetworkMode] gives):
// allowlist sets Egress, on sets Network. A plan that enforces nothing
// keeps the host's network.
func (p Plan) WithNetwork(mode string) Plan {
	if !p.Enforced() {
		return p
	}
	p.Network = mode == policy.NetworkOn
	p.Egress = mode == policy.NetworkAllowlist
	return p
}
