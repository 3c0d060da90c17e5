package egress

import (
	"errors"
	"fmt"
	"strings"
)

// errNotCarried is Start's error in a build without the proxy (Carried).
var errNotCarried = errors.New("egress: this build carries no egress proxy (unified-exec hands such commands to unified-exec-mcp)")

// Service is the egress of one program: a [Namespace] with only
// loopback, and a [Proxy] listening on it (HTTP and SOCKS5) that dials
// from the host's namespace. Commands started inside the namespace
// (see [Service.Enter]) with [Service.Env] reach the outside through it
// and nowhere else.
type Service struct {
	ns    *Namespace
	proxy *Proxy
	// HTTPAddr and SOCKSAddr are the proxy's addresses inside the
	// namespace (127.0.0.1:PORT).
	HTTPAddr, SOCKSAddr string
}

// Start makes the namespace and serves the proxy there.
func Start(cfg Config) (*Service, error) {
	if !Carried {
		return nil, errNotCarried
	}
	ns, err := NewNamespace()
	if err != nil {
		return nil, err
	}
	s := &Service{ns: ns, proxy: New(cfg)}
	for _, l := range []struct {
		proto string
		addr  *string
	}{{HTTP, &s.HTTPAddr}, {SOCKS5, &s.SOCKSAddr}} {
		ln, err := ns.Listen("127.0.0.1:0")
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("egress: listening in the namespace: %w", err)
		}
		*l.addr = ln.Addr().String()
		if err := s.proxy.Serve(ln, l.proto); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// Enter moves the calling thread into the namespace; see
// [Namespace.Enter].
func (s *Service) Enter() error { return s.ns.Enter() }

// Env are the variables that point commands at the proxy: the HTTP
// proxy for http and https, SOCKS5 (names resolved by the proxy) for the
// rest, loopback direct; upper- and lower-case, since tools read one or
// the other. NODE_USE_ENV_PROXY makes Node's own fetch use them.
func (s *Service) Env() []string {
	http := "http://" + s.HTTPAddr
	socks := "socks5h://" + s.SOCKSAddr
	noProxy := "localhost,127.0.0.1"
	var env []string
	for _, kv := range [][2]string{{"HTTP_PROXY", http}, {"HTTPS_PROXY", http}, {"ALL_PROXY", socks}, {"NO_PROXY", noProxy}} {
		env = append(env, kv[0]+"="+kv[1], strings.ToLower(kv[0])+"="+kv[1])
	}
	return append(env, "NODE_USE_ENV_PROXY=1")
}

// Close ends the proxy (its listeners, connections and goroutines) and
// releases the namespace.
func (s *Service) Close() error {
	s.proxy.Close()
	return s.ns.Close()
}

// Proxy is the service's proxy.
func (s *Service) Proxy() *Proxy { return s.proxy }
