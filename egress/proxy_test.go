package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/egress/egresstest"
	"github.com/unified-exec/unified-exec/policy"
)

// upstreamAddr is where the test's servers listen: loopback, but not the
// proxy's own 127.0.0.1.
const upstreamAddr = "127.0.0.2:0"

// rig is a proxy on loopback with a TLS and a plain upstream behind
// names the test resolves.
type rig struct {
	t         *testing.T
	ca        *egresstest.CA
	proxy     *Proxy
	httpAddr  string
	socksAddr string
	tlsPort   string
	plainPort string
	records   chan Record
}

// hello answers with the host the request named.
var hello = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	fmt.Fprintf(w, "hello from %s %s", r.Host, r.URL.Path)
})

func newRig(t *testing.T, n policy.Network, asker Asker, resolver Resolver) *rig {
	t.Helper()
	ca := egresstest.NewCA(t)
	r := &rig{t: t, ca: ca, records: make(chan Record, 64)}
	ln, err := net.Listen("tcp", upstreamAddr)
	if err != nil {
		t.Skipf("no 127.0.0.2 here: %v", err)
	}
	up := httptest.NewUnstartedServer(hello)
	up.Listener.Close()
	up.Listener = ln
	up.TLS = ca.ServerConfig(t, "good.test", "loop.test", "127.0.0.2")
	up.StartTLS()
	t.Cleanup(up.Close)
	_, r.tlsPort, _ = net.SplitHostPort(ln.Addr().String())
	pln, err := net.Listen("tcp", upstreamAddr)
	if err != nil {
		t.Fatal(err)
	}
	plain := httptest.NewUnstartedServer(hello)
	plain.Listener.Close()
	plain.Listener = pln
	plain.Start()
	t.Cleanup(plain.Close)
	_, r.plainPort, _ = net.SplitHostPort(pln.Addr().String())

	for i, s := range n.Allow {
		n.Allow[i] = strings.NewReplacer("TLS", r.tlsPort, "PLAIN", r.plainPort).Replace(s)
	}
	rules, err := Compile(n)
	if err != nil {
		t.Fatal(err)
	}
	if resolver == nil {
		resolver = &HostsResolver{Source: "test", Hosts: map[string][]netip.Addr{
			"good.test":   {netip.MustParseAddr("127.0.0.2")},
			"plain.test":  {netip.MustParseAddr("127.0.0.2")},
			"evil.test":   {netip.MustParseAddr("127.0.0.2")},
			"denied.test": {netip.MustParseAddr("127.0.0.2")},
			"loop.test":   {netip.MustParseAddr("127.0.0.1")},
			"asked.test":  {netip.MustParseAddr("127.0.0.2")},
			"refuse.test": {netip.MustParseAddr("127.0.0.2")},
		}}
	}
	r.proxy = New(Config{
		Rules:      rules,
		Resolver:   resolver,
		Asker:      asker,
		Audit:      func(rec Record) { r.records <- rec },
		LocalAddrs: func() ([]netip.Addr, error) { return nil, nil },
	})
	t.Cleanup(func() { r.proxy.Close() })
	for _, l := range []struct {
		proto string
		addr  *string
	}{{HTTP, &r.httpAddr}, {SOCKS5, &r.socksAddr}} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		*l.addr = ln.Addr().String()
		if err := r.proxy.Serve(ln, l.proto); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// testPolicy allows good.test and plain.test on the upstreams' ports,
// and the upstreams' address by IP (it is loopback), names loop.test
// (which resolves to 127.0.0.1, not allowed by address) and denies
// denied.test.
func testPolicy() policy.Network {
	return policy.Network{
		Mode:  policy.NetworkAllowlist,
		Allow: []string{"good.test:TLS", "plain.test:PLAIN", "evil.test:*", "loop.test:*", "127.0.0.2:TLS", "127.0.0.2:PLAIN"},
		Deny:  []string{"denied.test"},
	}
}

func (r *rig) client() *http.Client {
	u, _ := url.Parse("http://" + r.httpAddr)
	return &http.Client{Transport: &http.Transport{
		Proxy:             http.ProxyURL(u),
		TLSClientConfig:   &tls.Config{RootCAs: r.ca.Pool},
		DisableKeepAlives: true,
	}, Timeout: 30 * time.Second}
}

func (r *rig) get(u string) (string, error) {
	resp, err := r.client().Get(u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return string(b), fmt.Errorf("status %s: %s", resp.Status, b)
	}
	return string(b), err
}

// record waits for the next audit record (connections end
// asynchronously; the deadline only turns a hang into a failure).
func (r *rig) record() Record {
	r.t.Helper()
	select {
	case rec := <-r.records:
		return rec
	case <-time.After(30 * time.Second):
		r.t.Fatal("no audit record")
	}
	return Record{}
}

func TestProxyConnect(t *testing.T) {
	r := newRig(t, testPolicy(), nil, nil)
	body, err := r.get("https://good.test:" + r.tlsPort + "/x")
	if err != nil || body != "hello from good.test:"+r.tlsPort+" /x" {
		t.Fatalf("%q %v", body, err)
	}
	rec := r.record()
	if rec.Proto != "http-connect" || rec.Host != "good.test" || rec.Decision != "allow" || rec.Addr != "127.0.0.2:"+r.tlsPort || rec.BytesUp == 0 || rec.BytesDown == 0 || rec.Duration <= 0 || !strings.Contains(rec.Reason, "good.test:") {
		t.Fatalf("record: %+v", rec)
	}
}

// rawConnect sends CONNECT target and returns the status line, the
// refusal header and the connection.
func (r *rig) rawConnect(target string) (string, string, net.Conn, *bufio.Reader) {
	r.t.Helper()
	c, err := net.Dial("tcp", r.httpAddr)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		r.t.Fatal(err)
	}
	return resp.Status, resp.Header.Get("X-Unified-Exec-Refused"), c, br
}

func TestProxyRefusals(t *testing.T) {
	r := newRig(t, testPolicy(), nil, nil)
	cases := []struct{ target, why string }{
		{"denied.test:" + r.tlsPort, `denied by "denied.test"`},
		{"unknown.test:443", "no allow entry names unknown.test:443"},
		{"good.test:443", "no allow entry names good.test:443"},
		{"loop.test:" + r.tlsPort, "loop.test resolves to 127.0.0.1 is a loopback address"},
		{"127.0.0.1:" + r.tlsPort, "IP literals are refused"},
		{"169.254.169.254:80", "IP literals are refused"},
		{"[::1]:" + r.tlsPort, "IP literals are refused"},
	}
	for _, c := range cases {
		status, why, _, _ := r.rawConnect(c.target)
		if !strings.HasPrefix(status, "403") || !strings.Contains(why, c.why) {
			t.Errorf("CONNECT %s: %s %q, want 403 with %q", c.target, status, why, c.why)
		}
		if rec := r.record(); rec.Decision != "deny" || !strings.Contains(rec.Reason, c.why) {
			t.Errorf("CONNECT %s: record %+v", c.target, rec)
		}
	}
	// Allowed by address: the literal reaches it.
	if body, err := r.get("https://127.0.0.2:" + r.tlsPort + "/"); err != nil || !strings.HasPrefix(body, "hello") {
		t.Fatalf("allowed IP literal: %q %v", body, err)
	}
}

func TestProxySNIMismatch(t *testing.T) {
	r := newRig(t, testPolicy(), nil, nil)
	status, _, c, _ := r.rawConnect("good.test:" + r.tlsPort)
	if !strings.HasPrefix(status, "200") {
		t.Fatal(status)
	}
	tc := tls.Client(c, &tls.Config{ServerName: "evil.test", RootCAs: r.ca.Pool})
	if err := tc.Handshake(); err == nil {
		t.Fatal("a ClientHello for evil.test went through a tunnel to good.test")
	}
	rec := r.record()
	if rec.Decision != "deny" || !strings.Contains(rec.Reason, `(SNI) "evil.test" is not the host asked for, "good.test"`) || rec.BytesUp != 0 {
		t.Fatalf("record: %+v", rec)
	}
	// The same name passes.
	_, _, c2, _ := r.rawConnect("good.test:" + r.tlsPort)
	tc = tls.Client(c2, &tls.Config{ServerName: "GOOD.test", RootCAs: r.ca.Pool})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
}

// rawHTTP sends requests on one connection and returns each response's
// status and refusal header.
func (r *rig) rawHTTP(reqs ...string) []string {
	r.t.Helper()
	c, err := net.Dial("tcp", r.httpAddr)
	if err != nil {
		r.t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	var out []string
	for _, req := range reqs {
		if _, err := io.WriteString(c, req); err != nil {
			break
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			out = append(out, "error: "+err.Error())
			break
		}
		b, _ := io.ReadAll(resp.Body)
		out = append(out, resp.Status+" "+resp.Header.Get("X-Unified-Exec-Refused")+" "+string(b))
	}
	return out
}

func TestProxyHTTPForward(t *testing.T) {
	r := newRig(t, testPolicy(), nil, nil)
	target := "plain.test:" + r.plainPort
	body, err := r.get("http://" + target + "/page")
	if err != nil || body != "hello from "+target+" /page" {
		t.Fatalf("%q %v", body, err)
	}
	if rec := r.record(); rec.Proto != "http" || rec.Decision != "allow" || rec.BytesDown == 0 {
		t.Fatalf("record: %+v", rec)
	}
	// Keep-alive: each request is judged by itself.
	got := r.rawHTTP(
		"GET http://"+target+"/one HTTP/1.1\r\nHost: "+target+"\r\n\r\n",
		"GET http://denied.test:"+r.plainPort+"/two HTTP/1.1\r\nHost: denied.test:"+r.plainPort+"\r\n\r\n",
	)
	if len(got) != 2 || !strings.HasPrefix(got[0], "200") || !strings.Contains(got[0], "/one") || !strings.HasPrefix(got[1], "403") {
		t.Fatalf("keep-alive: %q", got)
	}
	r.record()
	r.record()
	// The Host header must be the target.
	got = r.rawHTTP("GET http://" + target + "/ HTTP/1.1\r\nHost: evil.test\r\n\r\n")
	if len(got) != 1 || !strings.HasPrefix(got[0], "403") || !strings.Contains(got[0], `the Host header "evil.test" is not the request's target`) {
		t.Fatalf("host mismatch: %q", got)
	}
	r.record()
	got = r.rawHTTP("GET http://" + target + "/ HTTP/1.1\r\nHost: " + target + "\r\nHost: evil.test\r\n\r\n")
	if len(got) != 1 || !strings.HasPrefix(got[0], "400") {
		t.Fatalf("two Host headers: %q", got)
	}
	// Not a proxy request; https in the clear.
	for _, req := range []string{"GET / HTTP/1.1\r\nHost: " + target + "\r\n\r\n", "GET https://good.test:" + r.tlsPort + "/ HTTP/1.1\r\nHost: good.test\r\n\r\n"} {
		if got := r.rawHTTP(req); len(got) != 1 || !strings.HasPrefix(got[0], "400") {
			t.Fatalf("%q: %q", req, got)
		}
		r.record()
	}
	// A body, with Expect: 100-continue.
	c := r.client()
	resp, err := c.Post("http://"+target+"/post", "text/plain", strings.NewReader(strings.Repeat("x", 100000)))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("post: %v %v", resp, err)
	}
	resp.Body.Close()
	if rec := r.record(); rec.BytesUp < 100000 {
		t.Fatalf("post record: %+v", rec)
	}
}

// socks connects through the SOCKS5 listener; atyp 3 (name) or 1 (IPv4).
func (r *rig) socks(cmd byte, host string, port uint16) (byte, net.Conn) {
	r.t.Helper()
	c, err := net.Dial("tcp", r.socksAddr)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { c.Close() })
	c.Write([]byte{5, 1, 0})
	var g [2]byte
	if _, err := io.ReadFull(c, g[:]); err != nil || g != [2]byte{5, 0} {
		r.t.Fatalf("greeting: %v %v", g, err)
	}
	req := []byte{5, cmd, 0}
	if a, err := netip.ParseAddr(host); err == nil && a.Is4() {
		b := a.As4()
		req = append(append(req, 1), b[:]...)
	} else {
		req = append(append(req, 3, byte(len(host))), host...)
	}
	req = binary.BigEndian.AppendUint16(req, port)
	c.Write(req)
	var rep [10]byte
	if _, err := io.ReadFull(c, rep[:]); err != nil {
		r.t.Fatalf("reply: %v", err)
	}
	return rep[1], c
}

func TestProxySOCKS5(t *testing.T) {
	r := newRig(t, testPolicy(), nil, nil)
	port := uint16(mustAtoi(t, r.tlsPort))
	code, c := r.socks(1, "good.test", port)
	if code != 0 {
		t.Fatalf("reply %d", code)
	}
	tc := tls.Client(c, &tls.Config{ServerName: "good.test", RootCAs: r.ca.Pool})
	fmt.Fprintf(tc, "GET /s HTTP/1.1\r\nHost: good.test\r\nConnection: close\r\n\r\n")
	b, _ := io.ReadAll(tc)
	c.Close()
	if !strings.Contains(string(b), "hello from good.test /s") {
		t.Fatalf("%q", b)
	}
	if rec := r.record(); rec.Proto != "socks5" || rec.Decision != "allow" || rec.BytesDown == 0 {
		t.Fatalf("record: %+v", rec)
	}
	for _, c := range []struct {
		cmd  byte
		host string
		want byte
	}{
		{1, "denied.test", 2}, {1, "loop.test", 2}, {1, "127.0.0.1", 2}, {1, "nowhere.test", 2}, {2, "good.test", 7},
	} {
		if code, _ := r.socks(c.cmd, c.host, port); code != c.want {
			t.Errorf("%d %s: reply %d, want %d", c.cmd, c.host, code, c.want)
		}
		if rec := r.record(); rec.Decision != "deny" {
			t.Errorf("%s: record %+v", c.host, rec)
		}
	}
	// SNI mismatch through SOCKS too.
	_, c = r.socks(1, "good.test", port)
	if err := tls.Client(c, &tls.Config{ServerName: "evil.test", RootCAs: r.ca.Pool}).Handshake(); err == nil {
		t.Fatal("SNI mismatch passed through SOCKS5")
	}
	if rec := r.record(); rec.Decision != "deny" || !strings.Contains(rec.Reason, "SNI") {
		t.Fatalf("record: %+v", rec)
	}
}

func mustAtoi(t *testing.T, s string) int {
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// stubAsker approves asked.test, refuses the rest, and counts.
type stubAsker struct{ n atomic.Int32 }

func (a *stubAsker) AskNetwork(_ context.Context, host string, port uint16) (bool, string) {
	a.n.Add(1)
	if host == "asked.test" {
		return true, "approved once by the user"
	}
	return false, "denied by the user"
}

func TestProxyAsk(t *testing.T) {
	n := testPolicy()
	n.Allow = append(n.Allow, "127.0.0.2:*")
	n.Ask = true
	a := &stubAsker{}
	r := newRig(t, n, a, nil)
	if _, err := r.get("http://asked.test:" + r.plainPort + "/"); err != nil {
		t.Fatal(err)
	}
	if rec := r.record(); rec.Decision != "allow" || rec.Reason != "approved once by the user" {
		t.Fatalf("record: %+v", rec)
	}
	status, why, _, _ := r.rawConnect("refuse.test:" + r.tlsPort)
	if !strings.HasPrefix(status, "403") || !strings.Contains(why, "denied by the user") {
		t.Fatalf("%s %q", status, why)
	}
	r.record()
	// Named hosts are not asked about; denied ones neither.
	r.get("https://good.test:" + r.tlsPort + "/")
	r.rawConnect("denied.test:" + r.tlsPort)
	r.record()
	r.record()
	if a.n.Load() != 2 {
		t.Fatalf("asked %d times, want 2", a.n.Load())
	}
}

// flipResolver answers good.test with the allowed address once, then
// with loopback: a rebinding name.
type flipResolver struct{ n atomic.Int32 }

func (f *flipResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	if f.n.Add(1) == 1 {
		return []netip.Addr{netip.MustParseAddr("127.0.0.2")}, nil
	}
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

func TestProxyRebinding(t *testing.T) {
	r := newRig(t, testPolicy(), nil, &flipResolver{})
	if _, err := r.get("https://good.test:" + r.tlsPort + "/"); err != nil {
		t.Fatal(err)
	}
	r.record()
	status, why, _, _ := r.rawConnect("good.test:" + r.tlsPort)
	if !strings.HasPrefix(status, "403") || !strings.Contains(why, "loopback") {
		t.Fatalf("rebound name: %s %q", status, why)
	}
}

// blockingAsker waits for ctx: a question nobody answers.
type blockingAsker struct{ asked chan struct{} }

func (b *blockingAsker) AskNetwork(ctx context.Context, _ string, _ uint16) (bool, string) {
	close(b.asked)
	<-ctx.Done()
	return false, "gone"
}

func openFDs(t *testing.T) int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(es)
}

// TestProxyCloseLeaks: Close ends open tunnels, pending questions,
// listeners and every goroutine, and leaves no fd behind.
func TestProxyCloseLeaks(t *testing.T) {
	n := testPolicy()
	n.Ask = true
	a := &blockingAsker{asked: make(chan struct{})}
	r := newRig(t, n, a, nil)
	// Warm up what the runtime and the upstreams start once.
	r.get("https://good.test:" + r.tlsPort + "/")
	r.record()
	runtime.GC()
	fds, goroutines := openFDs(t), runtime.NumGoroutine()
	before := fdLinks()

	p := New(Config{Rules: r.proxy.cfg.Rules, Resolver: r.proxy.cfg.Resolver, Asker: a, LocalAddrs: r.proxy.cfg.LocalAddrs})
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	sln, _ := net.Listen("tcp", "127.0.0.1:0")
	p.Serve(ln, HTTP)
	p.Serve(sln, SOCKS5)
	// An open tunnel, a question waiting, an idle client.
	tunnelC, _ := net.Dial("tcp", ln.Addr().String())
	fmt.Fprintf(tunnelC, "CONNECT good.test:%s HTTP/1.1\r\n\r\n", r.tlsPort)
	resp, err := http.ReadResponse(bufio.NewReader(tunnelC), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatal(resp, err)
	}
	askC, _ := net.Dial("tcp", ln.Addr().String())
	fmt.Fprintf(askC, "CONNECT someone.test:443 HTTP/1.1\r\n\r\n")
	<-a.asked
	idleC, _ := net.Dial("tcp", sln.Addr().String())
	var wg sync.WaitGroup
	for _, c := range []net.Conn{tunnelC, askC, idleC} {
		wg.Go(func() { io.Copy(io.Discard, c) }) // ends when the proxy closes its side
	}
	p.Close()
	wg.Wait()
	for _, c := range []net.Conn{tunnelC, askC, idleC} {
		c.Close()
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("still listening after Close")
	}
	waitFor(t, func() bool { return runtime.NumGoroutine() <= goroutines })
	// A tunnel copies with splice(2) through a pipe the runtime keeps in
	// a pool (internal/poll) until a collection or two drop it: collect
	// while waiting, so that only descriptors something holds remain.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.GC(); openFDs(t) > fds; runtime.GC() {
		if time.Now().After(deadline) {
			t.Fatalf("%d fds before, %d after Close; new ones: %v", fds, openFDs(t), newLinks(before, fdLinks()))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fdLinks maps this process's open descriptors to what they are.
func fdLinks() map[string]string {
	links := map[string]string{}
	es, _ := os.ReadDir("/proc/self/fd")
	for _, e := range es {
		l, _ := os.Readlink("/proc/self/fd/" + e.Name())
		links[e.Name()] = l
	}
	return links
}

// newLinks lists the descriptors in after that were not in before.
func newLinks(before, after map[string]string) []string {
	var out []string
	for fd, l := range after {
		if before[fd] != l {
			out = append(out, fd+" -> "+l)
		}
	}
	return out
}

// waitFor polls cond, failing after a generous deadline: for goroutines
// and fds the kernel and runtime release a little after the fact.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("condition not met; goroutines:\n%s", buf[:n])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
