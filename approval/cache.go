package approval

import (
	"fmt"
	"sync"
)

// Cache remembers "approve for the session" answers, keyed by the exact
// canonical command, cwd, tty and escalation — and nothing else is cached.
// The zero value is ready to use.
type Cache struct {
	// mu guards approved.
	mu       sync.Mutex
	approved map[string]bool
}

func cacheKey(req Request) string {
	return fmt.Sprintf("%s\x00%s\x00%v\x00%v", Canonical(req.Argv), req.Cwd, req.TTY, req.Escalated)
}

// ApproveForSession records an approval for the rest of the session.
func (c *Cache) ApproveForSession(req Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.approved == nil {
		c.approved = map[string]bool{}
	}
	c.approved[cacheKey(req)] = true
}

// Approved reports whether the request was approved for the session.
func (c *Cache) Approved(req Request) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.approved[cacheKey(req)]
}
