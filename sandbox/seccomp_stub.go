//go:build !(linux && cgo)

package sandbox

import "errors"

// SeccompEnabled reports whether this build can load seccomp filters: not
// without cgo (libseccomp) or off Linux.
const SeccompEnabled = false

func applySeccomp(Plan) error {
	return errors.New("seccomp: this build has no seccomp support (built without cgo or not for Linux); the network and ptrace cannot be blocked")
}
