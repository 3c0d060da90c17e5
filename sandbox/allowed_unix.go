//go:build unix

package sandbox

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// serverAllows is this process's own view of path, unsandboxed: whether
// it may read it, or write it (for a path that is not there, create it:
// write and search the nearest existing folder on the way). The kernel
// answers (faccessat with the effective ids), so a read-only file
// system, file modes and, as root, the capabilities count.
func serverAllows(path string, write bool) bool {
	if !write {
		return unix.Faccessat(unix.AT_FDCWD, path, unix.R_OK, unix.AT_EACCESS) == nil
	}
	if _, err := os.Lstat(path); err == nil {
		return unix.Faccessat(unix.AT_FDCWD, path, unix.W_OK, unix.AT_EACCESS) == nil
	}
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(dir); err == nil {
			return unix.Faccessat(unix.AT_FDCWD, dir, unix.W_OK|unix.X_OK, unix.AT_EACCESS) == nil
		}
		if dir == "/" || dir == "." {
			return false
		}
	}
}
