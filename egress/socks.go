package egress

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"time"
)

// SOCKS5 (RFC 1928), the part clients use to reach a host: no
// authentication, CONNECT, addresses as IPv4, IPv6 or a name (which the
// proxy resolves: socks5h). BIND and UDP ASSOCIATE are refused. No
// well-kept Go library serves SOCKS5 with a hook between the request and
// the dial, so these few lines are ours.
const (
	socksVersion   = 5
	socksNoAuth    = 0
	socksNoMethods = 0xff
	socksConnect   = 1
	socksIPv4      = 1
	socksName      = 3
	socksIPv6      = 4

	socksOK          = 0
	socksNotAllowed  = 2
	socksUnreachable = 4
	socksRefused     = 5
	socksNoCommand   = 7
	socksNoAddrType  = 8
)

// serveSOCKS serves one SOCKS5 client connection.
func (p *Proxy) serveSOCKS(c net.Conn) {
	br := bufio.NewReader(c)
	// Greeting: VER NMETHODS METHODS...
	var hdr [2]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil || hdr[0] != socksVersion {
		return
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return
	}
	method := byte(socksNoMethods)
	for _, m := range methods {
		if m == socksNoAuth {
			method = socksNoAuth
		}
	}
	if _, err := c.Write([]byte{socksVersion, method}); err != nil || method != socksNoAuth {
		return
	}
	// Request: VER CMD RSV ATYP DST.ADDR DST.PORT
	var req [4]byte
	if _, err := io.ReadFull(br, req[:]); err != nil || req[0] != socksVersion {
		return
	}
	started := time.Now()
	rec := Record{Proto: "socks5"}
	host, err := readSocksAddr(br, req[3])
	if err != nil {
		socksReply(c, socksNoAddrType)
		return
	}
	var pb [2]byte
	if _, err := io.ReadFull(br, pb[:]); err != nil {
		return
	}
	rec.Host, rec.Port = host, binary.BigEndian.Uint16(pb[:])
	defer p.finish(&rec, started)
	if req[1] != socksConnect {
		rec.Decision, rec.Reason = "deny", "SOCKS5 command other than CONNECT"
		socksReply(c, socksNoCommand)
		return
	}
	if rec.Port == 0 {
		rec.Decision, rec.Reason = "deny", "port 0"
		socksReply(c, socksNotAllowed)
		return
	}
	upstream, err := p.open(p.ctx, &rec)
	if err != nil {
		var r *refusal
		switch {
		case errors.As(err, &r) && r.policy:
			socksReply(c, socksNotAllowed)
		case rec.Addr == "":
			socksReply(c, socksUnreachable)
		default:
			socksReply(c, socksRefused)
		}
		return
	}
	defer p.untrack(upstream)
	if socksReply(c, socksOK) != nil {
		return
	}
	up, down, why := tunnel(c, br, upstream, host)
	rec.BytesUp, rec.BytesDown = up, down
	if why != "" {
		rec.Decision, rec.Reason = "deny", why
	}
}

// readSocksAddr reads DST.ADDR of type atyp.
func readSocksAddr(r io.Reader, atyp byte) (string, error) {
	switch atyp {
	case socksIPv4:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return "", err
		}
		return netip.AddrFrom4(b).String(), nil
	case socksIPv6:
		var b [16]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return "", err
		}
		return netip.AddrFrom16(b).String(), nil
	case socksName:
		var n [1]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return "", err
		}
		name := make([]byte, n[0])
		if _, err := io.ReadFull(r, name); err != nil {
			return "", err
		}
		return string(name), nil
	}
	return "", errors.New("unknown address type")
}

// socksReply answers a request; the bound address is not shared.
func socksReply(c net.Conn, code byte) error {
	_, err := c.Write([]byte{socksVersion, code, 0, socksIPv4, 0, 0, 0, 0, 0, 0})
	return err
}
