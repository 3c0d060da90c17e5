package approval

import (
	"fmt"
	"sync"
)

// Cache remembers "approve for the session" answers. An answer covers
// what its question showed and nothing wider: the exact canonical command
// (shell and flags included), cwd, tty, escalation and the sandbox the
// command was to run in. So approving a command for the session in the
// sandbox does not approve running it without the sandbox; approving that
// (a retry or an escalation question) covers that exact command only.
// Nothing else is cached. The zero value is ready to use.
type Cache struct {
	// mu guards approved.
	mu       sync.Mutex
	approved map[string]bool
}

func cacheKey(q Question) string {
	r := q.Request
	return fmt.Sprintf("%s\x00%s\x00%v\x00%v\x00%s", Canonical(r.Argv), r.Cwd, r.TTY, r.Escalated, q.Sandbox)
}

// ApproveForSession records an approval of q for the rest of the session.
func (c *Cache) ApproveForSession(q Question) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.approved == nil {
		c.approved = map[string]bool{}
	}
	c.approved[cacheKey(q)] = true
}

// Approved reports whether a question asking the same (command, cwd, tty,
// escalation, sandbox) was approved for the session.
func (c *Cache) Approved(q Question) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.approved[cacheKey(q)]
}
