package egress

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
)

// Resolver finds the addresses of a name; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// TestHostsEnv names a hosts file (lines "ADDRESS NAME..."; # comments)
// that replaces DNS for the proxy: a name it lists resolves to its
// addresses, every other name fails. It exists so tests can map names to
// local servers without the internet; the addresses it gives are
// checked like any others (loopback and private ones need an allow entry
// naming them). It is read by the server from its own environment, which
// commands cannot change.
const TestHostsEnv = "UNIFIED_EXEC_TEST_HOSTS"

// HostsResolver resolves from a fixed map, as a hosts file says.
type HostsResolver struct {
	// Source names the file, for errors.
	Source string
	Hosts  map[string][]netip.Addr
}

// LoadHosts reads a hosts file.
func LoadHosts(file string) (*HostsResolver, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("egress: test hosts: %w", err)
	}
	defer f.Close()
	r := &HostsResolver{Source: file, Hosts: map[string][]netip.Addr{}}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		a, err := netip.ParseAddr(fields[0])
		if err != nil || len(fields) < 2 {
			return nil, fmt.Errorf("egress: test hosts %s:%d: want an address, then one name or more", file, line)
		}
		for _, name := range fields[1:] {
			name = strings.TrimSuffix(strings.ToLower(name), ".")
			r.Hosts[name] = append(r.Hosts[name], a)
		}
	}
	return r, sc.Err()
}

// LookupNetIP returns the addresses listed for host (network "ip",
// "ip4" or "ip6").
func (r *HostsResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, a := range r.Hosts[strings.TrimSuffix(strings.ToLower(host), ".")] {
		if network == "ip" || network == "ip4" && a.Unmap().Is4() || network == "ip6" && a.Is6() && !a.Is4In6() {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, &net.DNSError{Err: "not in the test hosts file " + r.Source, Name: host, IsNotFound: true}
	}
	return out, nil
}
