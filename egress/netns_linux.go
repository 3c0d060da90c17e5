//go:build linux

package egress

import (
	"fmt"
	"net"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// Namespace is a network namespace with only loopback, up: nothing in it
// is routable but 127.0.0.0/8 and ::1. A socket created in it stays in it
// wherever its fd goes, so the proxy's listeners live here while the
// process that owns them dials from the host's namespace.
//
// Making and entering one needs CAP_SYS_ADMIN and CAP_NET_ADMIN over the
// user namespace that owns it: root, or a program in a user namespace of
// its own (ptyrun.EnterNamespace gives an ordinary user one).
type Namespace struct {
	// mu guards fd.
	mu sync.Mutex
	fd int // -1 once closed
}

// NewNamespace makes a network namespace and brings its loopback up. The
// work happens on a thread of its own, retired afterwards: the calling
// thread and the process stay in their namespace.
func NewNamespace() (*Namespace, error) {
	fd, err := onRetiredThread(func() (int, error) {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return -1, fmt.Errorf("egress: making a network namespace: %w", err)
		}
		fd, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, fmt.Errorf("egress: opening the network namespace: %w", err)
		}
		if err := loopbackUp(); err != nil {
			unix.Close(fd)
			return -1, err
		}
		return fd, nil
	})
	if err != nil {
		return nil, err
	}
	return &Namespace{fd: fd}, nil
}

// onRetiredThread runs fn on a locked OS thread that ends with it, so
// whatever fn changed about its thread (its namespace) goes with it.
func onRetiredThread(fn func() (int, error)) (int, error) {
	type result struct {
		n   int
		err error
	}
	ch := make(chan result, 1)
	go func() {
		// Owner: onRetiredThread. Locked and never unlocked: the runtime
		// ends the thread with the goroutine.
		runtime.LockOSThread()
		n, err := fn()
		ch <- result{n, err}
	}()
	r := <-ch
	return r.n, r.err
}

// loopbackUp sets IFF_UP on lo in the calling thread's namespace.
func loopbackUp() error {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("egress: bringing up loopback: %w", err)
	}
	defer unix.Close(s)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(s, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("egress: reading loopback's flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("egress: bringing up loopback: %w", err)
	}
	return nil
}

// Enter moves the calling thread into the namespace. The caller must
// hold the thread (runtime.LockOSThread) and retire it afterwards, as a
// thread that forks a command does.
func (n *Namespace) Enter() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fd < 0 {
		return fmt.Errorf("egress: the network namespace is closed")
	}
	if err := unix.Setns(n.fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("egress: entering the network namespace: %w", err)
	}
	return nil
}

// Listen opens a TCP listener inside the namespace (from a retired
// thread).
func (n *Namespace) Listen(addr string) (net.Listener, error) {
	var ln net.Listener
	_, err := onRetiredThread(func() (int, error) {
		if err := n.Enter(); err != nil {
			return 0, err
		}
		var err error
		ln, err = net.Listen("tcp", addr)
		return 0, err
	})
	return ln, err
}

// Close releases the namespace; it ends once nothing is left in it.
func (n *Namespace) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fd < 0 {
		return nil
	}
	err := unix.Close(n.fd)
	n.fd = -1
	return err
}
