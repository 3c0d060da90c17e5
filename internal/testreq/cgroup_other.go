//go:build !linux

package testreq

// delegatedCgroup: cgroups are Linux-only.
func delegatedCgroup() bool { return false }
