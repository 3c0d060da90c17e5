//go:build !linux

package sandbox

// dirWatcher: no change reports here; the cache checks directories'
// times.
type dirWatcher struct{}

func (*dirWatcher) add(string) int                         { return -1 }
func (*dirWatcher) remove(int)                             {}
func (*dirWatcher) read(func(wd int, gone, overflow bool)) {}

// mountWatch: no mount reports here; no listing is kept without a
// change time (see statKey), so none depends on it.
type mountWatch struct{}

func (*mountWatch) changed() bool { return false }
