//go:build linux

package sandbox_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/unified-exec/unified-exec/policy"
	"github.com/unified-exec/unified-exec/sandbox/sandboxtest"
)

// TestApplyEgressSockets: in allowlist mode the filter lets through the
// socket families a network namespace contains and refuses the rest,
// also when the family comes with upper bits set (the kernel reads an
// int). The namespace itself is the orchestrator's (integration tests).
func TestApplyEgressSockets(t *testing.T) {
	sandboxtest.Require(t)
	py := python(t)
	e := newEnv(t)
	plan := e.plan(t, nil).WithNetwork(policy.NetworkAllowlist)
	if !plan.Egress || plan.Network {
		t.Fatalf("plan: egress %v, network %v", plan.Egress, plan.Network)
	}
	if !strings.Contains(plan.String(), "network: allowlist (") {
		t.Fatalf("plan text: %s", plan.String())
	}
	pyrun := py + ` -c "$PY_CODE"`
	try := func(expr string) string {
		return "PY_CODE=import socket, ctypes, errno\ntry:\n    " + expr + "\n    print('ALLOWED')\nexcept OSError as e:\n    print('ERRNO', errno.errorcode.get(e.errno))"
	}
	// socket(2) by number, so the family reaches the kernel as given.
	raw := func(family uint64) string {
		return "libc = ctypes.CDLL(None, use_errno=True)\n    libc.syscall.restype = ctypes.c_long\n    r = libc.syscall(41, ctypes.c_ulong(" + itoa(family) + "), 1, 0)\n    if r < 0: raise OSError(ctypes.get_errno(), 'socket')"
	}
	cases := []struct{ name, expr, want string }{
		{"unix", "socket.socket(socket.AF_UNIX)", "ALLOWED"},
		{"tcp", "socket.socket(socket.AF_INET, socket.SOCK_STREAM)", "ALLOWED"},
		{"udp", "socket.socket(socket.AF_INET, socket.SOCK_DGRAM)", "ALLOWED"},
		{"inet6", "socket.socket(socket.AF_INET6, socket.SOCK_STREAM)", "ALLOWED"},
		{"netlink route", "socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)", "ALLOWED"},
		{"netlink audit", "socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 9)", "ERRNO EPERM"},
		{"netlink uevent", "socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 15)", "ERRNO EPERM"},
		{"packet", "socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)", "ERRNO EPERM"},
		{"vsock", "socket.socket(40, socket.SOCK_STREAM, 0)", "ERRNO EPERM"},
		{"crypto", "socket.socket(38, socket.SOCK_SEQPACKET, 0)", "ERRNO EPERM"},
		{"ax25", "socket.socket(3, socket.SOCK_SEQPACKET, 0)", "ERRNO EPERM"},
		{"socketpair inet", "socket.socketpair(socket.AF_INET)", "ERRNO EPERM"},
		{"inet with upper bits", raw(1<<32 | 2), "ERRNO EPERM"},
		{"unix by number", raw(1), "ALLOWED"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.run(t, plan, false, pyrun, try(c.expr))
			if got := strings.TrimSpace(r.Output); got != c.want {
				t.Errorf("%q, want %q", got, c.want)
			}
		})
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
