// Package egress is the network of sandboxed commands in allowlist mode:
// a network namespace with only loopback, and an egress proxy (HTTP
// CONNECT and absolute-URI requests, SOCKS5) listening there that reaches
// the hosts the policy names, and nothing else.
//
// # Decisions
//
// [Rules] (compiled from the policy's [network] table by [Compile]) are
// pure and table-tested: [Rules.Decide] judges a destination as the
// client named it (deny entries win, then allow entries, then ask or
// refuse; an IP literal only by an entry naming the address), and
// [Rules.CheckAddr] judges each address the proxy is about to connect to
// (loopback, private, link-local, multicast and the host's own addresses,
// see [Special], only when an entry names them by address). The proxy
// resolves names itself ([Resolver]; [HostsResolver] for tests, see
// [TestHostsEnv]) and connects to an address it checked, so a name that
// resolves elsewhere the next time changes nothing.
//
// # Serving
//
// [Proxy] speaks the protocols with net/http (requests and responses) and
// crypto/tls (it peeks at a tunnel's TLS ClientHello and refuses a server
// name other than the host asked for); SOCKS5 is a few lines of its own.
// Every connection ends as a [Record] for the audit log: host, port,
// address, decision, bytes each way, duration.
//
// # The namespace
//
// [Service] makes a [Namespace] from a thread of its own, listens inside
// it, and dials from the process's namespace (the host's): no bridge
// process. A command forked from a thread that called [Service.Enter]
// lives in the namespace; with [Service.Env] it finds the proxy.
package egress
