package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/unified-exec/unified-exec/egress"
	"github.com/unified-exec/unified-exec/orchestrator"
	"github.com/unified-exec/unified-exec/policy"
)

// handOverWhat names a hand-over in its errors.
const handOverWhat = "wrapping a command whose policy needs the egress proxy (network allowlist)"

// handOver gives a command whose policy needs the egress proxy to
// unified-exec-mcp when this build carries none (egress.Carried: the
// wrapper unified-exec is built without it, for a faster start of every
// other command). Relayed, this program ends first and the relay starts
// unified-exec-mcp as it was started itself (exitHandOver; relay_linux.go):
// no namespace, cgroup or capability of ours is handed on, and nothing
// has read the command's input. Without a relay it is started in our
// stead, before any namespace. ok is false when this program runs the
// command itself; a policy error is the orchestrator's to report.
func handOver(f mainFlags) (code int, ok bool) {
	if egress.Carried {
		return 0, false
	}
	pol, err := effectivePolicy(f)
	if err != nil || !orchestrator.NeedsEgress(pol) {
		return 0, false
	}
	if f.policy != "" {
		if why := readAgainWhy(f.policy); why != "" {
			errorf("--policy %s: %s: unified-exec-mcp, which runs commands that need the egress proxy, reads the policy again; give a regular file (not a link, a pipe or a descriptor), or run unified-exec-mcp itself", f.policy, why)
			return exitInternal, true
		}
	}
	if relayed() {
		return exitHandOver, true
	}
	return execServer(handOverWhat), true
}

// readAgainWhy says why the policy at path may not read the same a
// second time ("" when it will, short of someone rewriting it): a pipe,
// /dev/stdin, /dev/fd/N or any link (a descriptor's read offset has moved,
// a pipe is drained: red team 11 ran a forbidden command under the empty
// policy unified-exec-mcp read from <(cat policy.toml)).
func readAgainWhy(path string) string {
	st, err := os.Lstat(path)
	if err != nil {
		return err.Error()
	}
	switch t := st.Mode().Type(); {
	case t&os.ModeSymlink != 0:
		return "a link"
	case t&os.ModeNamedPipe != 0:
		return "a pipe"
	case !st.Mode().IsRegular():
		return "not a regular file"
	}
	return ""
}

// testResolver is the egress proxy's resolver from the hosts file named
// by UNIFIED_EXEC_TEST_HOSTS, for tests without the internet; nil (the
// system's resolver) when unset.
func testResolver() (egress.Resolver, error) {
	f := os.Getenv(egress.TestHostsEnv)
	if f == "" {
		return nil, nil
	}
	r, err := egress.LoadHosts(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", egress.TestHostsEnv, err)
	}
	return r, nil
}

// networkPolicy renders the [network] table for policy explain and
// sandbox status.
func networkPolicy(pol *policy.Policy) string {
	if pol.NetworkMode() != policy.NetworkAllowlist {
		return ""
	}
	var b strings.Builder
	list := func(name string, entries []string) {
		if len(entries) == 0 {
			fmt.Fprintf(&b, "network %s: none\n", name)
			return
		}
		fmt.Fprintf(&b, "network %s: %s\n", name, strings.Join(entries, ", "))
	}
	list("allow", pol.Network.Allow)
	list("deny", pol.Network.Deny)
	if pol.Network.Ask {
		b.WriteString("network ask: hosts no entry names are asked about (" + askChannel(pol) + ")\n")
	} else {
		b.WriteString("network ask: no (hosts no entry names are refused)\n")
	}
	b.WriteString("network checks: loopback, private, link-local (169.254.169.254), multicast and this host's addresses only when an entry names them by address; IP literals only by address; TLS server name (SNI) = the host asked for; plain HTTP Host header = the target\n")
	return b.String()
}

func askChannel(pol *policy.Policy) string {
	if pol.Approval.Mode == policy.ApprovalNever {
		return "but [approval] mode is never: refused"
	}
	switch pol.Approval.Prompt {
	case "deny":
		return "but [approval] prompt is deny: refused"
	case "tty":
		return "on the terminal"
	}
	return "by MCP elicitation when serving, on the terminal when wrapping"
}

// networkStatus says how allowlist mode runs here, for sandbox status and
// the server's start-up lines.
func networkStatus(o *orchestrator.Orchestrator) string {
	pol := o.Policy()
	if pol.NetworkMode() != policy.NetworkAllowlist {
		return ""
	}
	out := networkPolicy(pol)
	switch svc := o.Egress(); {
	case svc != nil:
		out += fmt.Sprintf("egress: a network namespace with loopback only; proxy HTTP %s, SOCKS5 %s (commands get HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY)\n", svc.HTTPAddr, svc.SOCKSAddr)
	case o.EgressError() != nil:
		out += "egress: UNAVAILABLE: " + o.EgressError().Error() + "\n"
	}
	return out
}
