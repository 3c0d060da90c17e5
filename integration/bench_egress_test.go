//go:build linux

package integration

import (
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func medianOf(xs []float64) float64 {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// BenchmarkEgressThroughput: 1 GiB from a server on the host's loopback,
// read by curl inside the sandbox through the egress proxy (a CONNECT
// tunnel, curl -p) and by the same curl on the host directly;
// interleaved, medians of each iteration's runs.
func BenchmarkEgressThroughput(b *testing.B) {
	e := newNetEnv(b, "", serverOpts{})
	const n = 1 << 30
	url := fmt.Sprintf("/bytes?n=%d", n)
	var proxied, direct []float64
	for b.Loop() {
		code, out := e.run(b, "curl -sS -p -o /dev/null -w '%{speed_download}' 'http://plain.test:"+e.plainPort+url+"'")
		if code != 0 {
			b.Fatalf("through the proxy: %d %s", code, out)
		}
		v, _ := strconv.ParseFloat(strings.TrimSpace(out), 64)
		proxied = append(proxied, v/1e6)
		o, err := exec.Command("curl", "-sS", "--noproxy", "*", "-o", "/dev/null", "-w", "%{speed_download}", "http://127.0.0.2:"+e.plainPort+url).Output()
		if err != nil {
			b.Fatalf("direct: %v", err)
		}
		v, _ = strconv.ParseFloat(strings.TrimSpace(string(o)), 64)
		direct = append(direct, v/1e6)
	}
	p, d := medianOf(proxied), medianOf(direct)
	b.ReportMetric(p, "proxy-MB/s")
	b.ReportMetric(d, "direct-MB/s")
	b.ReportMetric(p/d, "proxy/direct")
}

// connectLoop times N sequential connections: through the proxy
// (CONNECT, then a request) when the variable HTTP_PROXY is set, else
// straight to the server; it prints milliseconds per connection.
const connectLoop = `
import os, socket, sys, time
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
proxy = os.environ.get("HTTP_PROXY", "")
t0 = time.perf_counter()
for _ in range(n):
    if proxy:
        p = proxy.split("//")[1].split(":")
        s = socket.create_connection((p[0], int(p[1])))
        s.sendall(b"CONNECT %s:%d HTTP/1.1\r\n\r\n" % (host.encode(), port))
        assert b" 200 " in s.recv(4096)
    else:
        s = socket.create_connection((host, port))
    s.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    while s.recv(65536):
        pass
    s.close()
print("%.3f" % ((time.perf_counter() - t0) * 1000 / n))
`

// BenchmarkEgressConnectSetup: the cost of a connection and a small
// request through the proxy from inside the sandbox against the same
// loop on the host, straight to the server; interleaved, medians.
func BenchmarkEgressConnectSetup(b *testing.B) {
	e := newNetEnv(b, "", serverOpts{})
	cmd := e.script("connect.py", connectLoop)
	var proxied, direct []float64
	for b.Loop() {
		code, out := e.run(b, cmd+" plain.test "+e.plainPort+" 200")
		if code != 0 {
			b.Fatalf("through the proxy: %d %s", code, out)
		}
		v, _ := strconv.ParseFloat(strings.TrimSpace(out), 64)
		proxied = append(proxied, v)
		c := exec.Command(e.py, "connect.py", "127.0.0.2", e.plainPort, "200")
		c.Dir = e.ws
		c.Env = []string{"PATH=/usr/bin:/bin"}
		o, err := c.Output()
		if err != nil {
			b.Fatalf("direct: %v", err)
		}
		v, _ = strconv.ParseFloat(strings.TrimSpace(string(o)), 64)
		direct = append(direct, v)
	}
	p, d := medianOf(proxied), medianOf(direct)
	b.ReportMetric(p, "proxy-ms/conn")
	b.ReportMetric(d, "direct-ms/conn")
	b.ReportMetric((p-d)*1000, "overhead-us/conn")
}

// BenchmarkEgressSpawnRatio: exec_command of `true` in allowlist mode
// and with the network off (the default), two servers, alternated;
// medians and their ratio.
func BenchmarkEgressSpawnRatio(b *testing.B) {
	allow := newNetEnv(b, "", serverOpts{})
	off := startServer(b, serverOpts{workspace: b.TempDir()})
	run := func(s *server) float64 {
		t0 := time.Now()
		text := s.exec(map[string]any{"cmd": "true"})
		if !strings.Contains(text, "exited with code 0") {
			b.Fatal(text)
		}
		return float64(time.Since(t0).Microseconds()) / 1000
	}
	run(allow.server)
	run(off)
	var a, o []float64
	for b.Loop() {
		a = append(a, run(allow.server))
		o = append(o, run(off))
	}
	ma, mo := medianOf(a), medianOf(o)
	b.ReportMetric(ma, "allowlist-ms")
	b.ReportMetric(mo, "off-ms")
	b.ReportMetric(ma/mo, "allowlist/off")
}
