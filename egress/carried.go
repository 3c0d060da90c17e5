//go:build !unified_exec_noegress

package egress

// Carried says whether this build carries the egress proxy. The wrapper
// unified-exec is built without it (the tag unified_exec_noegress, see
// scripts/build): net/http and crypto/tls, which the proxy's HTTP and
// TLS parsing need, would be loaded and initialised at every wrapped
// command's start. It hands a command whose policy needs the proxy over
// to unified-exec-mcp, which carries it.
const Carried = true
