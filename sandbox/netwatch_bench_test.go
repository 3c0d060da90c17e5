//go:build linux && cgo

package sandbox

import "testing"

// BenchmarkNetWatch: what counting refusals adds to a sandboxed spawn
// (besides loading a second, small filter): a socket pair, its receiving
// goroutine, and their end.
func BenchmarkNetWatch(b *testing.B) {
	if err := NetWatchAvailable(); err != nil {
		b.Skip(err)
	}
	for b.Loop() {
		w, err := NewNetWatch()
		if err != nil {
			b.Fatal(err)
		}
		w.Started()
		w.Refused()
		w.Close()
	}
}
