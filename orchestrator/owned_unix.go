//go:build unix

package orchestrator

import (
	"os"
	"syscall"
)

// ownedPrivate reports whether dir is this user's and writable by no one
// else (in a shared folder such as /var/tmp, another user could have
// made it first).
func ownedPrivate(dir string) bool {
	st, err := os.Lstat(dir)
	if err != nil || !st.IsDir() {
		return false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && int(sys.Uid) == os.Getuid() && st.Mode().Perm()&0o022 == 0
}
