//go:build !(linux && cgo)

package sandbox

import (
	"errors"
	"runtime"
)

// SeccompEnabled reports whether this build can load seccomp filters:
// false off Linux and in builds without cgo (libseccomp needs cgo).
// Landlock alone would still work without cgo on Linux, but it does not
// block sockets, ptrace or io_uring, so [Apply] refuses rather than
// enforce half a plan.
const SeccompEnabled = false

func seccompMissing() string {
	if runtime.GOOS != "linux" {
		return "seccomp is Linux-only"
	}
	return "this binary was built without cgo, so without libseccomp; rebuild with CGO_ENABLED=1"
}

func applySeccomp(Plan) error {
	return errors.New("seccomp: " + seccompMissing())
}

// PrepareSeccomp: nothing to build here.
func PrepareSeccomp(string) {}

func applySeccompThread(Plan) error {
	return errors.New("seccomp: " + seccompMissing())
}
