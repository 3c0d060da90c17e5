//go:build !linux

package cli

// ignoreStraySignals: no namespace of the program's own here.
func ignoreStraySignals() {}
