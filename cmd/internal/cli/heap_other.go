//go:build !linux

package cli

// hugeHeap: transparent huge pages are asked for on Linux only.
func hugeHeap() {}
