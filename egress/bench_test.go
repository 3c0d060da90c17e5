package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/policy"
)

// source serves n zero bytes to every connection on 127.0.0.2.
func source(b *testing.B, n int64) string {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		b.Skip(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.CopyN(c, zeros{}, n)
			}()
		}
	}()
	return ln.Addr().String()
}

type zeros struct{}

func (zeros) Read(b []byte) (int, error) { clear(b); return len(b), nil }

// BenchmarkTunnelThroughput: 256 MiB through a CONNECT tunnel of an
// in-process proxy against the same read straight from the source.
func BenchmarkTunnelThroughput(b *testing.B) {
	const n = 256 << 20
	addr := source(b, n)
	_, port, _ := net.SplitHostPort(addr)
	rules, _ := Compile(policy.Network{Allow: []string{"src.test:*", "127.0.0.2:*"}})
	p := New(Config{Rules: rules, Resolver: &HostsResolver{Hosts: map[string][]netip.Addr{"src.test": {netip.MustParseAddr("127.0.0.2")}}}, LocalAddrs: func() ([]netip.Addr, error) { return nil, nil }})
	defer p.Close()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	p.Serve(ln, HTTP)
	read := func(proxied bool) float64 {
		t0 := time.Now()
		var c net.Conn
		var r io.Reader
		if proxied {
			c, _ = net.Dial("tcp", ln.Addr().String())
			fmt.Fprintf(c, "CONNECT src.test:%s HTTP/1.1\r\n\r\n", port)
			br := bufio.NewReader(c)
			http.ReadResponse(br, nil)
			r = br
		} else {
			c, _ = net.Dial("tcp", addr)
			r = c
		}
		got, _ := io.Copy(io.Discard, r)
		c.Close()
		if got != n {
			b.Fatalf("read %d", got)
		}
		return float64(n) / time.Since(t0).Seconds() / 1e6
	}
	var pr, dr []float64
	for b.Loop() {
		pr = append(pr, read(true))
		dr = append(dr, read(false))
	}
	b.ReportMetric(median(pr), "proxy-MB/s")
	b.ReportMetric(median(dr), "direct-MB/s")
	b.ReportMetric(median(pr)/median(dr), "proxy/direct")
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
