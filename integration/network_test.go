//go:build linux

package integration

import (
	"archive/zip"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/unified-exec/unified-exec/egress/egresstest"
	"github.com/unified-exec/unified-exec/internal/proctree"
)

// netEnv is a server in allowlist mode and the "internet" it may reach:
// HTTPS and HTTP servers on 127.0.0.2 (the host's loopback, outside the
// commands' namespace) behind names that a hosts file given to the
// server (UNIFIED_EXEC_TEST_HOSTS) maps, with a CA of the test's own.
type netEnv struct {
	*server
	ws, dir   string
	ca        string // the CA certificate's path, readable in the sandbox
	tlsPort   string
	plainPort string
	audit     string
	py        string
}

// netPolicy is the allowlist of the tests: pypi.test and git.test (HTTPS)
// and plain.test (HTTP) on the upstreams' ports, and their address by
// IP (it is loopback, so only an entry naming it lets the proxy
// connect there). loop.test and meta.test are allowed by name, but
// resolve to 127.0.0.1 and 169.254.169.254: never reached.
const netPolicy = `[network]
mode = "allowlist"
allow = ["pypi.test:TLS", "git.test:TLS", "plain.test:PLAIN", "127.0.0.2:TLS", "127.0.0.2:PLAIN", "loop.test:*", "meta.test:*"]
deny = ["evil.test"]
`

func newNetEnv(t testing.TB, extra string, opts serverOpts) *netEnv {
	t.Helper()
	requireSandbox(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	e := &netEnv{ws: ws, dir: dir, py: python(t), audit: filepath.Join(dir, "audit.jsonl")}
	ca := egresstest.NewCA(t)
	e.ca = ca.WriteFile(t, ws)

	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 on this host: %v", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "hello from %s", r.Host) })
	mux.HandleFunc("/bytes", serveBytes)
	servePackageIndex(t, mux)
	serveGit(t, mux, dir)
	up := httptest.NewUnstartedServer(mux)
	up.Listener.Close()
	up.Listener = ln
	up.TLS = ca.ServerConfig(t, "pypi.test", "git.test", "evil.test", "loop.test", "asked.test", "refused.test", "127.0.0.2")
	up.StartTLS()
	t.Cleanup(up.Close)
	_, e.tlsPort, _ = net.SplitHostPort(ln.Addr().String())
	pln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	plain := httptest.NewUnstartedServer(mux)
	plain.Listener.Close()
	plain.Listener = pln
	plain.Start()
	t.Cleanup(plain.Close)
	_, e.plainPort, _ = net.SplitHostPort(pln.Addr().String())

	hosts := filepath.Join(dir, "hosts")
	os.WriteFile(hosts, []byte("127.0.0.2 pypi.test git.test plain.test evil.test asked.test refused.test\n127.0.0.1 loop.test\n169.254.169.254 meta.test\n"), 0o644)
	pol := strings.NewReplacer("TLS", e.tlsPort, "PLAIN", e.plainPort).Replace(netPolicy) + extra +
		fmt.Sprintf("\n[audit]\npath = %q\n", e.audit)
	pf := filepath.Join(dir, "policy.toml")
	os.WriteFile(pf, []byte(pol), 0o644)
	opts.args = append(opts.args, "--policy", pf)
	opts.workspace = ws
	opts.env = append(append(opts.env, "UNIFIED_EXEC_TEST_HOSTS="+hosts), spawnEnv...)
	e.server = startServer(t, opts)
	return e
}

// run executes cmd (it must finish within its window) and returns its
// exit code and output.
func (e *netEnv) run(t testing.TB, cmd string) (int, string) {
	t.Helper()
	text, isErr, res := e.call("exec_command", map[string]any{"cmd": cmd, "login": false, "yield_time_ms": 30000})
	if isErr {
		t.Fatalf("exec_command %q: %s", cmd, text)
	}
	code, ok := structured(t, res)["exit_code"].(float64)
	if !ok {
		t.Fatalf("%q did not finish: %s", cmd, text)
	}
	return int(code), output(text)
}

// script writes a Python script into the workspace and returns the
// command that runs it.
func (e *netEnv) script(name, code string) string {
	os.WriteFile(filepath.Join(e.ws, name), []byte(code), 0o644)
	return e.py + " " + name
}

// auditLines returns the audit log's network lines.
func (e *netEnv) auditLines(t testing.TB) []map[string]any {
	t.Helper()
	b, _ := os.ReadFile(e.audit)
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["event"] == "network" {
			out = append(out, m)
		}
	}
	return out
}

// serveBytes answers /bytes?n=N with N zero bytes.
func serveBytes(w http.ResponseWriter, r *http.Request) {
	var n int64
	fmt.Sscan(r.URL.Query().Get("n"), &n)
	w.Header().Set("Content-Length", fmt.Sprint(n))
	buf := make([]byte, 256<<10)
	for n > 0 {
		k := min(n, int64(len(buf)))
		if _, err := w.Write(buf[:k]); err != nil {
			return
		}
		n -= k
	}
}

// servePackageIndex serves a PEP 503 index with one wheel, tinypkg 0.1.
func servePackageIndex(t testing.TB, mux *http.ServeMux) {
	wheel := tinyWheel(t)
	sum := sha256.Sum256(wheel)
	mux.HandleFunc("/simple/tinypkg/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!DOCTYPE html><html><body><a href="/files/tinypkg-0.1-py3-none-any.whl#sha256=%s">tinypkg-0.1-py3-none-any.whl</a></body></html>`, hex.EncodeToString(sum[:]))
	})
	mux.HandleFunc("/files/tinypkg-0.1-py3-none-any.whl", func(w http.ResponseWriter, r *http.Request) { w.Write(wheel) })
}

func tinyWheel(t testing.TB) []byte {
	files := [][2]string{
		{"tinypkg/__init__.py", "VERSION = '0.1'\n"},
		{"tinypkg-0.1.dist-info/METADATA", "Metadata-Version: 2.1\nName: tinypkg\nVersion: 0.1\n"},
		{"tinypkg-0.1.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: unified-exec-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	var record strings.Builder
	for _, f := range files {
		w, _ := z.Create(f[0])
		w.Write([]byte(f[1]))
		sum := sha256.Sum256([]byte(f[1]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f[0], base64.RawURLEncoding.EncodeToString(sum[:]), len(f[1]))
	}
	record.WriteString("tinypkg-0.1.dist-info/RECORD,,\n")
	w, _ := z.Create("tinypkg-0.1.dist-info/RECORD")
	w.Write([]byte(record.String()))
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// serveGit serves a bare repository with one commit at /git/repo.git
// through git http-backend (smart HTTP), and returns its commit.
func serveGit(t testing.TB, mux *http.ServeMux, dir string) string {
	backend := "/usr/lib/git-core/git-http-backend"
	if _, err := os.Stat(backend); err != nil {
		return ""
	}
	src, bare := filepath.Join(dir, "src"), filepath.Join(dir, "git", "repo.git")
	gitEnv := []string{"GIT_CONFIG_NOSYSTEM=1", "HOME=" + dir, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", src},
		{"-C", src, "commit", "-q", "--allow-empty", "-m", "first"},
		{"clone", "-q", "--bare", src, bare},
	} {
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), gitEnv...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	head, _ := exec.Command("git", "-C", bare, "rev-parse", "HEAD").Output()
	mux.Handle("/git/", &cgi.Handler{
		Path: backend,
		Env:  append([]string{"GIT_PROJECT_ROOT=" + dir, "GIT_HTTP_EXPORT_ALL=1"}, gitEnv...),
	})
	return strings.TrimSpace(string(head))
}

// TestNetworkAllowlistTools: curl, Python's urllib, pip download and git
// ls-remote reach allowed hosts over https through the proxy, by the
// variables the server sets; each connection is an audit line.
func TestNetworkAllowlistTools(t *testing.T) {
	e := newNetEnv(t, "", serverOpts{})
	hp := "pypi.test:" + e.tlsPort
	if code, out := e.run(t, "curl -sS --cacert ca.pem https://"+hp+"/hello"); code != 0 || out != "hello from "+hp {
		t.Fatalf("curl: %d %q", code, out)
	}
	if code, out := e.run(t, "curl -sS http://plain.test:"+e.plainPort+"/hello"); code != 0 || !strings.Contains(out, "hello from plain.test") {
		t.Fatalf("curl http: %d %q", code, out)
	}
	if code, out := e.run(t, "curl -sS --cacert ca.pem --proxy \"$ALL_PROXY\" https://"+hp+"/hello"); code != 0 || !strings.Contains(out, "hello") {
		t.Fatalf("curl socks5h: %d %q", code, out)
	}
	urllib := e.script("fetch.py", fmt.Sprintf("import urllib.request\nprint(urllib.request.urlopen('https://%s/hello', timeout=30).read().decode())\n", hp))
	if code, out := e.run(t, "SSL_CERT_FILE=ca.pem "+urllib); code != 0 || !strings.Contains(out, "hello from "+hp) {
		t.Fatalf("urllib: %d %q", code, out)
	}
	if exec.Command(e.py, "-m", "pip", "--version").Run() == nil {
		code, out := e.run(t, fmt.Sprintf("PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_FIND_LINKS= PIP_CERT=ca.pem REQUESTS_CA_BUNDLE=ca.pem %s -m pip download --no-cache-dir --no-deps --cert ca.pem --index-url https://%s/simple -d dl tinypkg && ls dl", e.py, hp))
		if code != 0 || !strings.Contains(out, "tinypkg-0.1-py3-none-any.whl") {
			t.Fatalf("pip download: %d %s", code, out)
		}
	} else {
		t.Log("pip is not installed for " + e.py + ": pip download not tried")
	}
	code, out := e.run(t, "GIT_CONFIG_NOSYSTEM=1 GIT_SSL_CAINFO=ca.pem git ls-remote https://git.test:"+e.tlsPort+"/git/repo.git")
	if code != 0 || !strings.Contains(out, "refs/heads/main") {
		t.Fatalf("git ls-remote: %d %s", code, out)
	}
	lines := e.auditLines(t)
	found := false
	for _, l := range lines {
		if l["host"] == "pypi.test" && l["decision"] == "allow" && l["addr"] == "127.0.0.2:"+e.tlsPort && l["bytes_up"].(float64) > 0 && l["bytes_down"].(float64) > 0 && l["duration_ms"] != nil {
			found = true
		}
	}
	if !found {
		t.Fatalf("no audit line for pypi.test with bytes: %v", lines)
	}
}

// TestNetworkDenied: a denied domain and one no entry names are refused
// with the reason, and logged.
func TestNetworkDenied(t *testing.T) {
	e := newNetEnv(t, "", serverOpts{})
	for host, why := range map[string]string{
		"evil.test:" + e.tlsPort:     `denied by "evil.test"`,
		"unlisted.test:" + e.tlsPort: "no allow entry names unlisted.test",
	} {
		code, out := e.run(t, "curl -sS -v --cacert ca.pem https://"+host+"/hello 2>&1")
		if code == 0 || !strings.Contains(out, "403") || !strings.Contains(out, why) {
			t.Errorf("%s: %d %s", host, code, out)
		}
	}
	denied := 0
	for _, l := range e.auditLines(t) {
		if l["decision"] == "deny" {
			denied++
		}
	}
	if denied != 2 {
		t.Fatalf("%d deny lines in the audit log", denied)
	}
}

// TestNetworkAsk: with ask = true, a host no entry names is put to the
// person by MCP elicitation, while the command waits on its connection:
// approved, the command gets through; denied, it is refused, and not
// asked again.
func TestNetworkAsk(t *testing.T) {
	for _, proto := range []string{"", "2025-06-18"} {
		name := proto
		if name == "" {
			name = "latest"
		}
		t.Run(name, func(t *testing.T) {
			el := &elicitor{answers: []*mcp.ElicitResult{decision("approve"), decision("deny")}}
			e := newNetEnv(t, "ask = true\n", serverOpts{client: &mcp.ClientOptions{ElicitationHandler: el.handle}, protocol: proto})
			allowIP := "" // asked.test resolves to 127.0.0.2, named by address in the policy
			_ = allowIP
			text := e.exec(map[string]any{"cmd": "curl -sS --cacert ca.pem https://asked.test:" + e.tlsPort + "/hello", "yield_time_ms": 30000})
			if msgs := el.asked(); len(msgs) != 1 || !strings.Contains(msgs[0], "asked.test:"+e.tlsPort) {
				t.Fatalf("questions: %q", msgs)
			}
			if !strings.Contains(text, "Network: asked.test:"+e.tlsPort+" was approved for one connection") {
				t.Fatalf("no note of the answer: %s", text)
			}
			// The command goes on after the answer: its output is in this
			// response or the next poll.
			out := text
			if !strings.Contains(out, "exited with code") {
				id := sessionID(t, text)
				out = e.exec(map[string]any{"cmd": "true"}) // any call
				_ = out
				out, _, _ = e.call("write_stdin", map[string]any{"session_id": id, "yield_time_ms": 30000})
			}
			if !strings.Contains(out, "hello from asked.test") && !strings.Contains(text, "hello from asked.test") {
				t.Fatalf("approved connection did not go through: %s\n%s", text, out)
			}
			// Denied: refused, and remembered for the session.
			text = e.exec(map[string]any{"cmd": "curl -sS -v --cacert ca.pem https://refused.test:" + e.tlsPort + "/hello 2>&1; curl -sS --cacert ca.pem https://refused.test:" + e.tlsPort + "/hello 2>&1", "yield_time_ms": 30000})
			if !strings.Contains(text, "refused by the user") {
				t.Fatalf("no note of the refusal: %s", text)
			}
			if n := len(el.asked()); n != 2 {
				t.Fatalf("asked %d times, want 2: %q", n, el.asked())
			}
			code, out := e.run(t, "curl -sS -v --cacert ca.pem https://refused.test:"+e.tlsPort+"/hello 2>&1")
			if code == 0 || !strings.Contains(out, "denied for the session by the user") || len(el.asked()) != 2 {
				t.Fatalf("denial not remembered: %d %s (asked %d)", code, out, len(el.asked()))
			}
		})
	}
}

// TestNetworkAskNobody: without elicitation, or under approval mode
// never, asking is refusing.
func TestNetworkAskNobody(t *testing.T) {
	e := newNetEnv(t, "ask = true\n", serverOpts{})
	code, out := e.run(t, "curl -sS -v --cacert ca.pem https://asked.test:"+e.tlsPort+"/hello 2>&1")
	if code == 0 || !strings.Contains(out, "does not support elicitation") {
		t.Fatalf("no elicitation: %d %s", code, out)
	}
	e = newNetEnv(t, "ask = true\n[approval]\nmode = \"never\"\n", serverOpts{})
	code, out = e.run(t, "curl -sS -v --cacert ca.pem https://asked.test:"+e.tlsPort+"/hello 2>&1")
	if code == 0 || !strings.Contains(out, "mode is never") {
		t.Fatalf("never: %d %s", code, out)
	}
}

// TestNetworkDevServerAcrossSessions: loopback TCP works between
// sessions: a server started by one answers curl from another.
func TestNetworkDevServerAcrossSessions(t *testing.T) {
	e := newNetEnv(t, "", serverOpts{})
	srv := e.script("serve.py", `import http.server, socketserver
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"dev server here")
s = socketserver.TCPServer(("127.0.0.1", 0), H)
open("port", "w").write(str(s.server_address[1]))
print("listening", flush=True)
s.serve_forever()
`)
	text := e.exec(map[string]any{"cmd": "rm -f port; exec " + srv, "yield_time_ms": 1000})
	id := sessionID(t, text)
	waitFor(t, func() bool { _, err := os.Stat(filepath.Join(e.ws, "port")); return err == nil })
	code, out := e.run(t, "curl -sS http://127.0.0.1:$(cat port)/ && curl -sS http://localhost:$(cat port)/")
	if code != 0 || out != "dev server heredev server here" {
		t.Fatalf("curl to the dev server: %d %q", code, out)
	}
	e.call("kill_session", map[string]any{"session_id": id})
	// From the host, the dev server is out of reach: another namespace.
	port, _ := os.ReadFile(filepath.Join(e.ws, "port"))
	if c, err := net.Dial("tcp", "127.0.0.1:"+string(port)); err == nil {
		c.Close()
		// Something of the host's may own that port; it is not ours if
		// it does not answer as the dev server.
		t.Log("a host service listens on the dev server's port number")
	}
}

// TestWrapAllowlist: the wrapper runs its command in the namespace too.
func TestWrapAllowlist(t *testing.T) {
	e := newNetEnv(t, "", serverOpts{})
	pf := filepath.Join(e.dir, "policy.toml")
	cmd := exec.Command(binary, "--policy", pf, "--workspace", e.ws, "--", "sh", "-c", "curl -sS --cacert ca.pem https://pypi.test:"+e.tlsPort+"/hello; curl -sS --noproxy '*' http://127.0.0.2:"+e.plainPort+"/hello")
	cmd.Dir = e.ws
	cmd.Env = append(os.Environ(), "UNIFIED_EXEC_TEST_HOSTS="+filepath.Join(e.dir, "hosts"))
	out, err := cmd.CombinedOutput()
	if !strings.Contains(string(out), "hello from pypi.test") || strings.Count(string(out), "hello from") != 1 || err == nil {
		t.Fatalf("wrap: %v %s", err, out)
	}
}

// hostAddress is a non-loopback address of this host, or "".
func hostAddress() string {
	as, _ := net.InterfaceAddrs()
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	return ""
}

// inNamespace is Python that stops (exit 9) unless the process is in a
// network namespace without routes, so that a direct connection attempt
// cannot leave the machine if the sandbox were broken.
const inNamespace = `
import sys
if len(open("/proc/self/net/route").read().splitlines()) > 1:
    print("ROUTES PRESENT: not in the egress namespace"); sys.exit(9)
`

// TestNetworkEscapes: in allowlist mode every way out but the proxy's
// policy fails, on both spawn paths.
func TestNetworkEscapes(t *testing.T) {
	for _, m := range []struct {
		name string
		env  []string
	}{{"thread", nil}, {"helper", []string{"UNIFIED_EXEC_SPAWN=helper"}}} {
		t.Run(m.name, func(t *testing.T) {
			spawnEnv = m.env
			defer func() { spawnEnv = nil }()
			networkEscapes(t)
		})
	}
}

func networkEscapes(t *testing.T) {
	e := newNetEnv(t, "", serverOpts{})
	// A service of the host on its own loopback, and one on its
	// non-loopback address: both outside the commands' namespace.
	secret := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "HOST-SECRET") })
	hostSvc := httptest.NewServer(secret)
	defer hostSvc.Close()
	_, hostPort, _ := net.SplitHostPort(hostSvc.Listener.Addr().String())
	outside := ""
	if a := hostAddress(); a != "" {
		if ln, err := net.Listen("tcp", net.JoinHostPort(a, "0")); err == nil {
			s := httptest.NewUnstartedServer(secret)
			s.Listener.Close()
			s.Listener = ln
			s.Start()
			defer s.Close()
			outside = ln.Addr().String()
		}
	}
	tls := e.tlsPort
	fails := func(name, cmd string, want ...string) {
		t.Run(name, func(t *testing.T) {
			code, out := e.run(t, cmd)
			if code == 0 || strings.Contains(out, "HOST-SECRET") || strings.Contains(out, "hello from evil") || strings.Contains(out, "ROUTES PRESENT") {
				t.Fatalf("got through: exit %d: %s", code, out)
			}
			for _, w := range want {
				if !strings.Contains(out, w) {
					t.Fatalf("exit %d, output lacks %q: %s", code, w, out)
				}
			}
		})
	}
	direct := func(host, port string) string {
		return e.script("direct.py", inNamespace+`
import errno, socket
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
except OSError as e:
    print("errno", errno.errorcode.get(e.errno, e.errno)); sys.exit(1)
print("CONNECTED HOST-SECRET")
`) + " " + host + " " + port
	}
	if outside != "" {
		h, p, _ := net.SplitHostPort(outside)
		fails("direct to an outside address", direct(h, p), "ENETUNREACH")
	} else {
		t.Log("no non-loopback address here: the outside-address case is not tried")
	}
	// The namespace's loopback is its own: its proxy may have the host
	// service's port number there (CI saw it once, as the ordinary user,
	// whose proxy runs in a namespace of its own): that is not the host's
	// service, and says nothing of a way to it.
	fails("direct to a host service on 127.0.0.1", `p=${HTTP_PROXY##*:}; p=${p%%/*}; if [ "$p" = "`+hostPort+`" ]; then echo "Couldn't connect: the proxy has the port number here"; exit 7; fi; curl -sS --noproxy '*' http://127.0.0.1:`+hostPort+"/ 2>&1", "Couldn't connect")
	fails("a host service on 127.0.0.1 through the proxy (IP literal)", "curl -sS -v -f --noproxy '' http://127.0.0.1:"+hostPort+"/ 2>&1", "403", "IP literals are refused")
	fails("a name resolving to 127.0.0.1", "curl -sS -v -f http://loop.test:"+hostPort+"/ 2>&1", "403", "loop.test resolves to 127.0.0.1 is a loopback address")
	fails("the metadata address through the proxy", "curl -sS -v -f http://169.254.169.254/latest/meta-data/ 2>&1", "403", "IP literals are refused")
	fails("a name resolving to the metadata address", "curl -sS -v -f http://meta.test/latest/meta-data/ 2>&1", "403", "link-local")
	fails("the metadata address directly", direct("169.254.169.254", "80"), "ENETUNREACH")
	fails("an IP literal", "curl -sS -v --cacert ca.pem https://192.0.2.10/ 2>&1", "403", "IP literals are refused")
	fails("a DNS query", e.script("dns.py", inNamespace+`
import errno, socket
try:
    socket.getaddrinfo("pypi.test", 443)
    print("RESOLVED")
except OSError as e:
    print("getaddrinfo:", e)
ns = [l.split()[1] for l in open("/etc/resolv.conf") if l.startswith("nameserver")] or ["127.0.0.53"]
query = bytes.fromhex("1234010000010000000000000470797069047465737400000100 01".replace(" ", ""))
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
try:
    s.sendto(query, (ns[0], 53))
    s.recvfrom(512)
    print("DNS ANSWERED HOST-SECRET")
except OSError as e:
    print("errno", errno.errorcode.get(e.errno, e.errno) if e.errno else e); sys.exit(1)
`), "getaddrinfo:")
	fails("an SNI other than the CONNECT host", e.script("sni.py", `
import os, socket, ssl, sys
proxy = os.environ["HTTPS_PROXY"].split("//")[1].split(":")
s = socket.create_connection((proxy[0], int(proxy[1])))
s.sendall(b"CONNECT pypi.test:`+tls+` HTTP/1.1\r\nHost: pypi.test\r\n\r\n")
print(s.recv(4096).split(b"\r\n")[0].decode())
ctx = ssl.create_default_context(cafile="ca.pem")
ctx.check_hostname = False
try:
    t = ctx.wrap_socket(s, server_hostname="evil.test")
    t.sendall(b"GET /hello HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n")
    print(t.recv(4096).decode())
except (OSError, ssl.SSLError) as e:
    print("refused:", e); sys.exit(1)
`), "200 Connection established", "refused:")
	fails("a CONNECT relayed by a process in the sandbox", e.script("relay.py", `
import os, socket, subprocess, sys, threading
proxy = os.environ["HTTP_PROXY"].split("//")[1].split(":")
ln = socket.socket(); ln.bind(("127.0.0.1", 0)); ln.listen()
def pump(a, b):
    try:
        while (d := a.recv(65536)):
            b.sendall(d)
    except OSError:
        pass
    finally:
        try: b.shutdown(socket.SHUT_WR)
        except OSError: pass
def serve():
    while True:
        c, _ = ln.accept()
        u = socket.create_connection((proxy[0], int(proxy[1])))
        threading.Thread(target=pump, args=(c, u), daemon=True).start()
        threading.Thread(target=pump, args=(u, c), daemon=True).start()
threading.Thread(target=serve, daemon=True).start()
relay = "http://127.0.0.1:%d" % ln.getsockname()[1]
ok = subprocess.run(["curl", "-sS", "--cacert", "ca.pem", "-x", relay, "https://pypi.test:`+tls+`/hello"], capture_output=True, text=True)
print("allowed through the relay:", ok.stdout)
bad = subprocess.run(["curl", "-sS", "-v", "--cacert", "ca.pem", "-x", relay, "https://evil.test:`+tls+`/hello"], capture_output=True, text=True)
print(bad.stdout, bad.stderr)
sys.exit(0 if bad.returncode == 0 else 1)
`), "allowed through the relay: hello", "403", `denied by "evil.test"`)
	fails("a CONNECT nested in an allowed tunnel", e.script("nested.py", `
import os, socket, sys
proxy = os.environ["HTTP_PROXY"].split("//")[1].split(":")
s = socket.create_connection((proxy[0], int(proxy[1])))
s.sendall(b"CONNECT 127.0.0.2:`+e.plainPort+` HTTP/1.1\r\n\r\n")
print("outer:", s.recv(4096).split(b"\r\n")[0].decode())
s.sendall(b"CONNECT evil.test:`+tls+` HTTP/1.1\r\nHost: evil.test:`+tls+`\r\n\r\n")
inner = s.recv(4096).split(b"\r\n")[0].decode()
print("inner:", inner)
sys.exit(0 if " 200 " in inner + " " else 1)
`), "outer: HTTP/1.1 200 Connection established", "inner: HTTP/1.1 4")
	fails("a Host header other than the target", e.script("host.py", `
import os, socket, sys
proxy = os.environ["HTTP_PROXY"].split("//")[1].split(":")
s = socket.create_connection((proxy[0], int(proxy[1])))
s.sendall(b"GET http://plain.test:`+e.plainPort+`/hello HTTP/1.1\r\nHost: evil.test\r\n\r\n")
r = s.recv(4096).decode()
print(r)
sys.exit(0 if "hello from" in r else 1)
`), "403", `the Host header "evil.test"`)
	for name, fam := range map[string]string{"packet": "socket.AF_PACKET, socket.SOCK_RAW, 0", "netlink audit": "socket.AF_NETLINK, socket.SOCK_RAW, 9", "vsock": "40, socket.SOCK_STREAM, 0", "crypto API": "38, socket.SOCK_SEQPACKET, 0", "raw inet": "socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP"} {
		fails("socket family: "+name, e.script("fam.py", `
import errno, socket, sys
try:
    socket.socket(`+fam+`)
except OSError as e:
    print("errno", errno.errorcode.get(e.errno, e.errno)); sys.exit(1)
print("OPENED")
`), "errno")
	}
	fails("reconfiguring the namespace", "ip addr add 10.9.9.9/8 dev lo 2>&1 || exit 1; ip route add default dev lo 2>&1", "Operation not permitted")
	t.Run("allowed inside: loopback, netlink route, the proxy", func(t *testing.T) {
		code, out := e.run(t, e.script("ok.py", `
import socket
socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).close()
a = socket.socket(); a.bind(("127.0.0.1", 0)); a.listen()
b = socket.create_connection(a.getsockname()); c, _ = a.accept(); b.sendall(b"hi"); print(c.recv(2).decode())
s6 = socket.socket(socket.AF_INET6); s6.bind(("::1", 0)); s6.listen(); print("v6 ok")
`)+" && ip -o link | cut -d: -f2")
		if code != 0 || !strings.Contains(out, "hi") || !strings.Contains(out, "v6 ok") || strings.TrimSpace(strings.Split(out, "v6 ok")[1]) != "lo" {
			t.Fatalf("%d %s", code, out)
		}
	})
	denied := 0
	for _, l := range e.auditLines(t) {
		if l["decision"] == "deny" {
			denied++
		}
	}
	if denied < 8 {
		t.Fatalf("%d deny lines in the audit log", denied)
	}
}

// TestNetworkNoLeaks: the proxy's goroutines and fds end with its
// connections, allowed, refused and cut alike: after rounds of them the
// server is back where it was.
func TestNetworkNoLeaks(t *testing.T) {
	stats := filepath.Join(t.TempDir(), "stats")
	e := newNetEnv(t, "", serverOpts{env: []string{"UNIFIED_EXEC_STATS=" + stats}})
	goroutines := func() int {
		os.Remove(stats)
		e.cmd.Process.Signal(syscall.SIGUSR1)
		n := -1
		waitFor(t, func() bool {
			b, _ := os.ReadFile(stats)
			_, err := fmt.Sscanf(string(b), "goroutines %d", &n)
			return err == nil
		})
		return n
	}
	round := fmt.Sprintf("for i in 1 2 3 4 5; do curl -s --cacert ca.pem https://pypi.test:%[1]s/hello; curl -s --cacert ca.pem https://evil.test:%[1]s/; curl -s http://plain.test:%[2]s/hello; curl -s --cacert ca.pem --max-time 1 https://pypi.test:%[1]s/bytes?n=100000000 -o /dev/null; done; echo round", e.tlsPort, e.plainPort)
	if code, out := e.run(t, round); code != 0 || !strings.Contains(out, "round") {
		t.Fatalf("%d %s", code, out)
	}
	pid := proctree.ServingPid(e.cmd.Process.Pid)
	base, fds, open := goroutines(), countFDs(pid), fdTargets(pid)
	for i := 0; i < 3; i++ {
		e.run(t, round)
	}
	var last string
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(last)
		}
	})
	waitWithin(t, time.Minute, func() bool {
		g, f := goroutines(), countFDs(pid)
		last = fmt.Sprintf("goroutines %d (base %d), fds %d (base %d): %q, at base %q", g, base, f, fds, fdTargets(pid), open)
		return g <= base && f <= fds
	})
}

// TestWrapAskNetwork: the wrapper asks about an unlisted host on its
// terminal while the command waits: o lets the connection through, n
// refuses it.
func TestWrapAskNetwork(t *testing.T) {
	e := newNetEnv(t, "ask = true\n", serverOpts{})
	for _, c := range []struct{ answer, want string }{{"o", "hello from asked.test"}, {"n", "denied by the user"}} {
		cmd := exec.Command(binary, "--policy", filepath.Join(e.dir, "policy.toml"), "--workspace", e.ws, "--",
			"sh", "-c", "curl -sS -v --cacert ca.pem https://asked.test:"+e.tlsPort+"/hello 2>&1")
		cmd.Dir = e.ws
		cmd.Env = append(os.Environ(), "UNIFIED_EXEC_TEST_HOSTS="+filepath.Join(e.dir, "hosts"))
		tty, err := pty.Start(cmd)
		if err != nil {
			t.Fatal(err)
		}
		var out lockedBuffer
		read := make(chan struct{})
		go func() {
			// Owner: this test; it ends when the terminal reports EIO.
			defer close(read)
			io.Copy(&out, tty)
		}()
		waitFor(t, func() bool {
			return strings.Contains(out.String(), "Allow sandboxed commands to connect to asked.test:"+e.tlsPort+"?")
		})
		io.WriteString(tty, c.answer+"\n")
		cmd.Wait()
		<-read
		tty.Close()
		if !strings.Contains(out.String(), c.want) {
			t.Fatalf("answer %s: %s", c.answer, out.String())
		}
	}
}
