//go:build !linux

package main

// ignoreStraySignals: no namespace of the program's own here.
func ignoreStraySignals() {}
