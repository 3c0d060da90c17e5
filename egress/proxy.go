package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// Asker asks a person whether a command may reach host:port, which no
// entry names, and says why the answer is what it is. It may block until
// someone answers or ctx ends; ok false refuses.
type Asker interface {
	AskNetwork(ctx context.Context, host string, port uint16) (ok bool, why string)
}

// Record is one connection, for the audit log.
type Record struct {
	// Proto is how the client asked: "http-connect", "http" (an
	// absolute-URI request) or "socks5".
	Proto string `json:"proto"`
	// Host and Port are the destination as the client named it.
	Host string `json:"host"`
	Port uint16 `json:"port"`
	// Addr is the address connected to, or the last one tried.
	Addr string `json:"addr,omitempty"`
	// Decision is "allow" or "deny"; Reason says why (the entry, the
	// answer, the refused address, the mismatched name).
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
	// BytesUp went from the command to the host, BytesDown back.
	BytesUp   int64 `json:"bytes_up"`
	BytesDown int64 `json:"bytes_down"`
	// Duration runs from the request to the end of the connection.
	Duration time.Duration `json:"-"`
}

// Config sets up a [Proxy].
type Config struct {
	// Rules decide; nil refuses everything.
	Rules *Rules
	// Resolver finds addresses; nil is net.DefaultResolver.
	Resolver Resolver
	// Asker is asked about hosts the rules leave to a person; nil
	// refuses them.
	Asker Asker
	// Audit receives one record per connection, from the connection's
	// goroutine; nil drops them. It must not block for long.
	Audit func(Record)
	// LocalAddrs lists the host's own addresses (refused unless an
	// entry names them); nil asks the kernel on every connection.
	LocalAddrs func() ([]netip.Addr, error)
	// DialTimeout bounds one connection attempt; 0 is 30 s.
	DialTimeout time.Duration
}

// Proxy serves HTTP (CONNECT and absolute-URI requests) and SOCKS5 on
// the listeners given to [Proxy.Serve], and connects only where its
// rules allow. It dials from the network namespace of the process, the
// host's, while its listeners may live in another (see [Namespace]).
//
// Goroutines: one accept loop per listener and one per client
// connection (plus one copying the reply direction while a tunnel is
// open), all owned by the Proxy; [Proxy.Close] ends them and waits.
type Proxy struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// mu guards the fields below.
	mu        sync.Mutex
	closed    bool
	listeners []net.Listener
	conns     map[net.Conn]struct{}
}

// New returns a Proxy for cfg; it serves once given listeners.
func New(cfg Config) *Proxy {
	if cfg.Rules == nil {
		cfg.Rules = &Rules{}
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.LocalAddrs == nil {
		cfg.LocalAddrs = hostAddrs
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 30 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Proxy{cfg: cfg, ctx: ctx, cancel: cancel, conns: map[net.Conn]struct{}{}}
}

// Protocols a listener serves.
const (
	HTTP   = "http"
	SOCKS5 = "socks5"
)

// Serve accepts connections on ln, speaking proto (HTTP or SOCKS5), until
// the Proxy is closed; the Proxy owns ln from then on.
func (p *Proxy) Serve(ln net.Listener, proto string) error {
	if proto != HTTP && proto != SOCKS5 {
		return fmt.Errorf("egress: unknown protocol %q", proto)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		ln.Close()
		return net.ErrClosed
	}
	p.listeners = append(p.listeners, ln)
	p.wg.Add(1)
	go p.accept(ln, proto)
	return nil
}

// accept is a listener's loop. Owner: the Proxy; it ends when the
// listener is closed.
func (p *Proxy) accept(ln net.Listener, proto string) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// EMFILE and the like: wait for a connection to end.
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		if !p.track(c) {
			c.Close()
			return
		}
		p.wg.Add(1)
		go func() {
			// Owner: the Proxy; it ends with the client's connection.
			defer p.wg.Done()
			defer p.untrack(c)
			if proto == HTTP {
				p.serveHTTP(c)
			} else {
				p.serveSOCKS(c)
			}
		}()
	}
}

// track registers a connection so Close can end it; false once closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// Close stops accepting, ends every connection (and every question
// waiting for an answer) and waits for every goroutine of the Proxy.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		p.cancel()
		for _, ln := range p.listeners {
			ln.Close()
		}
		for c := range p.conns {
			c.Close()
		}
	}
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}

// refusal is a connection the proxy would not or could not open.
type refusal struct {
	// policy: refused by the rules, an answer or an address check (not
	// a failure to reach the host).
	policy bool
	msg    string
}

func (r *refusal) Error() string { return r.msg }

// open decides, asks, resolves, checks and dials host:port for rec,
// filling rec's decision, reason and address. The connection is the
// caller's, to end with untrack.
func (p *Proxy) open(ctx context.Context, rec *Record) (net.Conn, error) {
	d := p.cfg.Rules.Decide(rec.Host, rec.Port)
	rec.Reason = d.Reason
	switch d.Verdict {
	case Deny:
		rec.Decision = "deny"
		return nil, &refusal{policy: true, msg: d.Reason}
	case Ask:
		host, _, _ := NormalizeHost(rec.Host)
		ok, why := false, "nobody can be asked"
		if p.cfg.Asker != nil {
			ok, why = p.cfg.Asker.AskNetwork(ctx, host, rec.Port)
		}
		rec.Reason = why
		if !ok {
			rec.Decision = "deny"
			return nil, &refusal{policy: true, msg: fmt.Sprintf("%s: %s", hostPort(host, rec.Port), why)}
		}
	}
	host, lit, isIP := NormalizeHost(rec.Host)
	var addrs []netip.Addr
	if isIP {
		addrs = []netip.Addr{lit}
	} else {
		rctx, cancel := context.WithTimeout(ctx, p.cfg.DialTimeout)
		found, err := p.cfg.Resolver.LookupNetIP(rctx, "ip", host)
		cancel()
		if err != nil {
			rec.Decision, rec.Reason = "deny", "resolving: "+err.Error()
			return nil, &refusal{msg: fmt.Sprintf("%s does not resolve: %v", host, err)}
		}
		addrs = found
	}
	local, _ := p.cfg.LocalAddrs()
	var refused []string
	var lastErr error
	dialer := net.Dialer{Timeout: p.cfg.DialTimeout}
	for _, a := range addrs {
		// The address connected to is the one checked: a name that
		// resolves elsewhere next time (DNS rebinding) changes nothing.
		if why := p.cfg.Rules.CheckAddr(a, rec.Port, local); why != "" {
			refused = append(refused, why)
			rec.Addr = netip.AddrPortFrom(a.Unmap(), rec.Port).String()
			continue
		}
		ap := netip.AddrPortFrom(a.Unmap(), rec.Port)
		rec.Addr = ap.String()
		c, err := dialer.DialContext(ctx, "tcp", ap.String())
		if err == nil {
			if !p.track(c) {
				c.Close()
				return nil, &refusal{msg: "the proxy is closing"}
			}
			rec.Decision = "allow"
			return c, nil
		}
		lastErr = err
	}
	if lastErr == nil && len(refused) == 0 {
		rec.Decision, rec.Reason = "deny", "resolving: no address"
		return nil, &refusal{msg: host + " has no address"}
	}
	if lastErr == nil {
		msg := refused[0]
		if !isIP {
			msg = host + " resolves to " + msg
		}
		rec.Decision, rec.Reason = "deny", msg
		return nil, &refusal{policy: true, msg: msg}
	}
	rec.Decision, rec.Reason = "allow", rec.Reason+"; connecting failed: "+lastErr.Error()
	return nil, &refusal{msg: fmt.Sprintf("connecting to %s: %v", hostPort(host, rec.Port), unwrapOp(lastErr))}
}

// unwrapOp drops net.OpError's "dial tcp ADDR:" prefix.
func unwrapOp(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err
	}
	return err
}

// finish completes rec and hands it to the audit sink.
func (p *Proxy) finish(rec *Record, started time.Time) {
	rec.Duration = time.Since(started)
	if p.cfg.Audit != nil {
		p.cfg.Audit(*rec)
	}
}

// hostAddrs are the addresses of this host's interfaces.
func hostAddrs() ([]netip.Addr, error) {
	as, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out, nil
}

func parsePort(s string) (uint16, bool) {
	n, err := strconv.ParseUint(s, 10, 16)
	return uint16(n), err == nil && n > 0
}
