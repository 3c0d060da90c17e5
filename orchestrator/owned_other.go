//go:build !unix

package orchestrator

import "os"

// ownedPrivate reports whether dir is a folder (no owners to check here).
func ownedPrivate(dir string) bool {
	st, err := os.Lstat(dir)
	return err == nil && st.IsDir()
}
