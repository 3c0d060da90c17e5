//go:build linux

package egress

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/unified-exec/unified-exec/internal/testreq"
	"golang.org/x/sys/unix"
)

// insideDial dials addr from a thread inside the service's namespace
// (retired afterwards) and sends req, returning the first response line.
func insideDial(s *Service, addr, req string) (string, error) {
	type result struct {
		line string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread is retired
		if err := s.Enter(); err != nil {
			ch <- result{err: err}
			return
		}
		c, err := net.Dial("tcp", addr)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer c.Close()
		fmt.Fprint(c, req)
		line, err := bufio.NewReader(c).ReadString('\n')
		ch <- result{strings.TrimSpace(line), err}
	}()
	r := <-ch
	return r.line, r.err
}

func TestServiceNamespace(t *testing.T) {
	if os.Getuid() != 0 {
		// An ordinary user makes the namespace from the program's user
		// namespace (ptyrun.EnterNamespace): the integration tests cover it.
		t.Skip("a network namespace needs CAP_SYS_ADMIN and CAP_NET_ADMIN: as an ordinary user only inside the program namespace (integration tests)")
	}
	r := newRig(t, testPolicy(), nil, nil)
	runtime.GC()
	fds, goroutines := openFDs(t), runtime.NumGoroutine()
	s, err := Start(Config{Rules: r.proxy.cfg.Rules, Resolver: r.proxy.cfg.Resolver, LocalAddrs: r.proxy.cfg.LocalAddrs})
	if err != nil {
		if testreq.Required() || !errors.Is(err, unix.EPERM) {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	// From inside: the proxy answers and reaches the host's upstream.
	line, err := insideDial(s, s.HTTPAddr, "GET http://plain.test:"+r.plainPort+"/ns HTTP/1.1\r\nHost: plain.test:"+r.plainPort+"\r\n\r\n")
	if err != nil || line != "HTTP/1.1 200 OK" {
		t.Fatalf("through the proxy from inside: %q %v", line, err)
	}
	// From inside, the host's upstream itself is out of reach.
	if _, err := insideDial(s, "127.0.0.2:"+r.plainPort, "GET / HTTP/1.0\r\n\r\n"); err == nil {
		t.Fatal("the host's loopback is reachable from inside the namespace")
	}
	// From outside, the proxy's address is not the proxy.
	if line, err := outsideGet(s.HTTPAddr); err == nil && strings.Contains(line, "200") {
		t.Fatalf("the proxy answers on the host's loopback: %q", line)
	}
	env := strings.Join(s.Env(), " ")
	for _, want := range []string{"HTTP_PROXY=http://" + s.HTTPAddr, "https_proxy=http://" + s.HTTPAddr, "ALL_PROXY=socks5h://" + s.SOCKSAddr, "NO_PROXY=localhost,127.0.0.1", "no_proxy="} {
		if !strings.Contains(env, want) {
			t.Errorf("env %q lacks %q", env, want)
		}
	}
	s.Close()
	if err := s.Enter(); err == nil {
		t.Fatal("entered a closed namespace")
	}
	waitFor(t, func() bool { return runtime.NumGoroutine() <= goroutines })
	waitFor(t, func() bool { return openFDs(t) <= fds })
}

func outsideGet(addr string) (string, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	fmt.Fprint(c, "GET http://plain.test/ HTTP/1.1\r\nHost: plain.test\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "", err
	}
	return resp.Status, nil
}
