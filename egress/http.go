//go:build !unified_exec_noegress

package egress

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"slices"
	"strings"
	"time"
)

// serveHTTP speaks HTTP/1 proxy on one client connection: CONNECT opens
// a tunnel (the connection is then the tunnel's); a request with an
// absolute http URI is checked and forwarded on a connection of its
// own, and the client may send another. Requests are parsed and written
// by net/http; each one is judged by itself.
func (p *Proxy) serveHTTP(c net.Conn) {
	br := bufio.NewReaderSize(c, maxHead)
	for {
		// net/http drops the Host header of a request in absolute form
		// (the URI wins): read it first from the head itself.
		hosts, err := peekHostHeaders(br)
		if err != nil {
			if errors.Is(err, errHeadTooLarge) {
				httpError(c, http.StatusRequestHeaderFieldsTooLarge, err.Error())
			}
			return
		}
		req, err := http.ReadRequest(br)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.ErrUnexpectedEOF) {
				httpError(c, http.StatusBadRequest, "bad request: "+err.Error())
			}
			return
		}
		if req.Method == http.MethodConnect {
			p.connect(c, br, req)
			return
		}
		req.Header["Host"] = hosts
		if !p.forward(c, br, req) {
			return
		}
	}
}

// maxHead bounds a request's line and headers.
const maxHead = 64 << 10

var errHeadTooLarge = fmt.Errorf("request headers larger than %d bytes", maxHead)

// peekHostHeaders waits for a whole request head in br, without
// consuming it, and returns its Host header values.
func peekHostHeaders(br *bufio.Reader) ([]string, error) {
	var head []byte
	for {
		b, err := br.Peek(max(br.Buffered(), 1))
		if i := bytes.Index(b, []byte("\r\n\r\n")); i >= 0 {
			head = b[:i+4]
			break
		}
		if i := bytes.Index(b, []byte("\n\n")); i >= 0 {
			head = b[:i+2]
			break
		}
		if err != nil {
			return nil, err
		}
		if len(b) >= br.Size() {
			return nil, errHeadTooLarge
		}
		if _, err := br.Peek(len(b) + 1); err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(head)))
	if _, err := tp.ReadLine(); err != nil {
		return nil, err
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		return nil, nil // net/http says what is wrong
	}
	return h.Values("Host"), nil
}

// connect serves CONNECT host:port.
func (p *Proxy) connect(c net.Conn, br *bufio.Reader, req *http.Request) {
	started := time.Now()
	rec := Record{Proto: "http-connect", Host: req.URL.Host}
	defer p.finish(&rec, started)
	host, port, err := net.SplitHostPort(req.URL.Host)
	n, ok := parsePort(port)
	if err != nil || !ok || host == "" {
		rec.Decision, rec.Reason = "deny", "CONNECT needs host:port"
		httpError(c, http.StatusBadRequest, "CONNECT needs host:port, got "+quote(req.URL.Host))
		return
	}
	rec.Host, rec.Port = host, n
	upstream, err := p.open(p.ctx, &rec)
	if err != nil {
		httpRefuse(c, err)
		return
	}
	defer p.untrack(upstream)
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	up, down, why := tunnel(c, br, upstream, host)
	rec.BytesUp, rec.BytesDown = up, down
	if why != "" {
		rec.Decision, rec.Reason = "deny", why
	}
}

// hopHeaders are meaningful for one connection only and never forwarded.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHopHeaders(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// forward serves one request in absolute form (GET http://host/path) and
// reports whether the client connection may carry another.
func (p *Proxy) forward(c net.Conn, br *bufio.Reader, req *http.Request) bool {
	started := time.Now()
	rec := Record{Proto: "http", Host: req.URL.Host}
	defer p.finish(&rec, started)
	if req.URL.Scheme != "http" || req.URL.Host == "" {
		rec.Decision = "deny"
		if req.URL.Scheme == "https" {
			rec.Reason = "an https URI sent to the proxy in the clear"
			httpError(c, http.StatusBadRequest, "send https through CONNECT")
		} else {
			rec.Reason = "not a proxy request: " + quote(req.RequestURI)
			httpError(c, http.StatusBadRequest, "this is an HTTP proxy: send absolute http:// URIs, or CONNECT")
		}
		return false
	}
	host, port := req.URL.Hostname(), req.URL.Port()
	if port == "" {
		port = "80"
	}
	n, ok := parsePort(port)
	if !ok {
		rec.Decision, rec.Reason = "deny", "bad port "+quote(port)
		httpError(c, http.StatusBadRequest, "bad port "+quote(port))
		return false
	}
	rec.Host, rec.Port = host, n
	// The Host header names the server that answers (virtual hosts):
	// it must be the one the request is checked for.
	if why := hostHeaderMismatch(req.Header.Values("Host"), host, port); why != "" {
		rec.Decision, rec.Reason = "deny", why
		httpError(c, http.StatusForbidden, why)
		return false
	}
	upstream, err := p.open(p.ctx, &rec)
	if err != nil {
		httpRefuse(c, err)
		// The request's body was not read: the connection cannot carry
		// another request.
		return false
	}
	defer p.untrack(upstream)
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		// The client waits for this before its body; the host gets no
		// Expect and the body at once.
		io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n")
		req.Header.Del("Expect")
	}
	clientClose := req.Close
	removeHopHeaders(req.Header)
	req.Header.Del("Host")
	req.Close = true // one request per connection to the host
	up := &countingConn{Conn: upstream}
	// The body goes up while the response comes down: a host may answer
	// before it has read everything (401, 413).
	sent := make(chan error, 1)
	go func() {
		// Owner: forward, which waits for it below.
		sent <- req.Write(up)
	}()
	resp, err := http.ReadResponse(bufio.NewReader(up), req)
	if err != nil {
		p.untrack(upstream)
		werr := <-sent
		rec.BytesUp, rec.BytesDown = up.written, up.read
		rec.Reason += "; no response: " + err.Error()
		if werr != nil {
			err = werr
		}
		httpError(c, http.StatusBadGateway, "forwarding the request to "+quote(host)+": "+err.Error())
		return false
	}
	defer resp.Body.Close()
	removeHopHeaders(resp.Header)
	// The host's connection closes after this response (req.Close); the
	// client's may go on when the response's end is marked otherwise.
	bodyless := req.Method == http.MethodHead || resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified
	delimited := bodyless || resp.ContentLength >= 0 || slices.Contains(resp.TransferEncoding, "chunked")
	keep := !clientClose && delimited
	resp.Close = !keep
	err = resp.Write(c)
	// Whatever of the body the host did not take is not sent on.
	p.untrack(upstream)
	werr := <-sent
	rec.BytesUp, rec.BytesDown = up.written, up.read
	return keep && err == nil && werr == nil
}

// hostHeaderMismatch says why the Host headers of a request for
// host:port disagree with it, or "".
func hostHeaderMismatch(values []string, host, port string) string {
	if len(values) > 1 {
		return "more than one Host header"
	}
	if len(values) == 0 {
		return ""
	}
	hh, hp := values[0], "80"
	if h, p, err := net.SplitHostPort(hh); err == nil {
		hh, hp = h, p
	}
	hh = strings.TrimSuffix(strings.ToLower(strings.Trim(hh, "[]")), ".")
	want := strings.TrimSuffix(strings.ToLower(host), ".")
	if hh != want || hp != port {
		return fmt.Sprintf("the Host header %q is not the request's target %s", values[0], net.JoinHostPort(host, port))
	}
	return ""
}

// httpRefuse answers a refused or failed open: 403 for the policy, 502
// for the network.
func httpRefuse(c net.Conn, err error) {
	var r *refusal
	if errors.As(err, &r) && r.policy {
		httpError(c, http.StatusForbidden, "refused by the sandbox's network policy: "+r.msg)
		return
	}
	httpError(c, http.StatusBadGateway, err.Error())
}

// httpError writes a short response that closes the connection. The
// reason travels in the body and in X-Unified-Exec-Refused, where tools
// that hide bodies still show headers (curl -v).
func httpError(c net.Conn, code int, msg string) {
	msg = "unified-exec egress proxy: " + msg
	header := strings.NewReplacer("\r", " ", "\n", " ").Replace(msg)
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nX-Unified-Exec-Refused: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s\n",
		code, http.StatusText(code), header, len(msg)+1, msg)
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

// countingConn counts the bytes through a connection.
type countingConn struct {
	net.Conn
	read, written int64
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.read += int64(n)
	return n, err
}

func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.written += int64(n)
	return n, err
}
