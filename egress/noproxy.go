//go:build unified_exec_noegress

package egress

import (
	"bufio"
	"net"
)

// Carried: this build carries no egress proxy (see carried.go). [Start]
// refuses; a [Proxy] made with [New] refuses every connection.
const Carried = false

func (p *Proxy) serveHTTP(c net.Conn) { c.Close() }

func tunnel(client net.Conn, br *bufio.Reader, upstream net.Conn, expect string) (up, down int64, refused string) {
	return 0, 0, errNotCarried.Error()
}
