package approval

import (
	"fmt"
	"strings"
)

// KindNetwork asks whether sandboxed commands may connect to a host that
// the policy's [network] lists do not name (allowlist mode, ask = true).
// Approving once lets one connection through; for the session, every
// connection to that host and port until the server exits; a denial
// holds as long.
const KindNetwork = "network"

func (q Question) networkText() string {
	var b strings.Builder
	hp := fmt.Sprintf("%s:%d", q.Host, q.Port)
	if strings.Contains(q.Host, ":") {
		hp = fmt.Sprintf("[%s]:%d", q.Host, q.Port)
	}
	fmt.Fprintf(&b, "Allow sandboxed commands to connect to %s?\n", Escape(hp))
	b.WriteString("  no [network] allow entry names it (the policy asks about such hosts)\n")
	b.WriteString("  once: this connection; session: this host and port until unified-exec exits; no: refused until then\n")
	return b.String()
}
