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
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/unified-exec/unified-exec/egress/egresstest"
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

func newNetEnv(t *testing.T, extra string, opts serverOpts) *netEnv {
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
func (e *netEnv) run(t *testing.T, cmd string) (int, string) {
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
func (e *netEnv) auditLines(t *testing.T) []map[string]any {
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

// servePackageIndex serves a PEP 503 index with one wheel, tinypkg 0.1.
func servePackageIndex(t *testing.T, mux *http.ServeMux) {
	wheel := tinyWheel(t)
	sum := sha256.Sum256(wheel)
	mux.HandleFunc("/simple/tinypkg/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!DOCTYPE html><html><body><a href="/files/tinypkg-0.1-py3-none-any.whl#sha256=%s">tinypkg-0.1-py3-none-any.whl</a></body></html>`, hex.EncodeToString(sum[:]))
	})
	mux.HandleFunc("/files/tinypkg-0.1-py3-none-any.whl", func(w http.ResponseWriter, r *http.Request) { w.Write(wheel) })
}

func tinyWheel(t *testing.T) []byte {
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
func serveGit(t *testing.T, mux *http.ServeMux, dir string) string {
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
