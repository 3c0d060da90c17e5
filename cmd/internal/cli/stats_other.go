//go:build !unix

package cli

// serveStats is Unix-only (it listens for SIGUSR1).
func serveStats(file string) (stop func()) { return func() {} }
