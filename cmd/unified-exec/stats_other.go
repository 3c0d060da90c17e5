//go:build !unix

package main

// serveStats is Unix-only (it listens for SIGUSR1).
func serveStats(file string) (stop func()) { return func() {} }
