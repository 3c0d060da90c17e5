//go:build osusergo && linux

package cli

import "github.com/unified-exec/unified-exec/sandbox"

// os/user reads /etc/passwd alone in this build: the name services are
// asked too (see nssHome).
func init() { sandbox.UserHome = nssHome }
