//go:build !linux

package main

// hugeHeap: transparent huge pages are asked for on Linux only.
func hugeHeap() {}
