//go:build !linux

package sandbox

// dirWatcher: no change reports here; the cache checks directories'
// times.
type dirWatcher struct{}

func (*dirWatcher) add(string) int                         { return -1 }
func (*dirWatcher) remove(int)                             {}
func (*dirWatcher) read(func(wd int, gone, overflow bool)) {}
