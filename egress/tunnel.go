//go:build !unified_exec_noegress

package egress

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// tunnel relays between the client (reading through br, which may hold
// bytes the client sent ahead) and the host until both directions end.
// The host's reply direction starts at once (protocols where the server
// speaks first work); the client's first bytes are held back until they
// are known not to be a TLS ClientHello naming another server than
// expect (the host the client asked for): the SNI check against domain
// fronting. It returns the bytes each way and why it refused, if it did.
func tunnel(client net.Conn, br *bufio.Reader, upstream net.Conn, expect string) (up, down int64, refused string) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		// Owner: tunnel, which waits for it.
		defer wg.Done()
		down, _ = io.Copy(client, upstream)
		closeWrite(client)
	}()
	hello, why := peekHello(br, expect)
	if why != "" {
		// Nothing of the client's went out: end both directions now.
		upstream.Close()
		client.Close()
		wg.Wait()
		return 0, down, why
	}
	n, err := upstream.Write(hello)
	up = int64(n)
	if err == nil {
		var m int64
		m, _ = copyBuffered(upstream, br, client)
		up += m
	}
	closeWrite(upstream)
	wg.Wait()
	return up, down, ""
}

// copyBuffered writes what br holds, then copies from c itself, so the
// kernel can splice between the two sockets.
func copyBuffered(dst net.Conn, br *bufio.Reader, c net.Conn) (int64, error) {
	var n int64
	if k := br.Buffered(); k > 0 {
		b, _ := br.Peek(k)
		m, err := dst.Write(b)
		n += int64(m)
		br.Discard(k)
		if err != nil {
			return n, err
		}
	}
	m, err := io.Copy(dst, c)
	return n + m, err
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	} else {
		c.Close()
	}
}

// tlsRecordHandshake is the content type of a TLS handshake record.
const tlsRecordHandshake = 0x16

// peekHello reads the client's first bytes when they begin a TLS
// handshake, and returns them (consumed from br: the caller forwards
// them) with "" when their server name is expect or absent, else the
// reason to refuse. Anything else is left in br, and hello is empty.
func peekHello(br *bufio.Reader, expect string) (hello []byte, refused string) {
	first, err := br.Peek(1)
	if err != nil || first[0] != tlsRecordHandshake {
		return nil, ""
	}
	var rec bytes.Buffer
	name, err := clientHelloName(io.TeeReader(br, &rec))
	if err != nil {
		return nil, "the client's TLS ClientHello could not be read: " + err.Error()
	}
	if name != "" && !strings.EqualFold(strings.TrimSuffix(name, "."), strings.Trim(expect, "[]")) {
		return nil, fmt.Sprintf("the TLS server name (SNI) %q is not the host asked for, %q", name, expect)
	}
	return rec.Bytes(), ""
}

// errHelloRead stops the TLS handshake once the ClientHello is parsed.
var errHelloRead = errors.New("client hello read")

// clientHelloName parses a TLS ClientHello from r with crypto/tls and
// returns the server name it carries ("" for none). Nothing is written
// back: the handshake stops as soon as the hello is parsed.
func clientHelloName(r io.Reader) (string, error) {
	var name string
	var seen bool
	conn := tls.Server(helloConn{r: r}, &tls.Config{
		GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			name, seen = h.ServerName, true
			return nil, errHelloRead
		},
	})
	err := conn.Handshake()
	if seen {
		return name, nil
	}
	if err == nil {
		err = errors.New("no ClientHello")
	}
	return "", err
}

// helloConn is the net.Conn crypto/tls parses a ClientHello from: reads
// come from r, writes (alerts) go nowhere.
type helloConn struct{ r io.Reader }

func (c helloConn) Read(b []byte) (int, error)     { return c.r.Read(b) }
func (c helloConn) Write(b []byte) (int, error)    { return len(b), nil }
func (helloConn) Close() error                     { return nil }
func (helloConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (helloConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (helloConn) SetDeadline(time.Time) error      { return nil }
func (helloConn) SetReadDeadline(time.Time) error  { return nil }
func (helloConn) SetWriteDeadline(time.Time) error { return nil }
