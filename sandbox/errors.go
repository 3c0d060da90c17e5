package sandbox

import "errors"

// ErrUnavailable is wrapped by [Apply] when this build or host cannot
// enforce a plan at all: not Linux, no cgo (no seccomp), or no Landlock.
// Nothing was applied; the caller must not run the command as if it
// were sandboxed.
var ErrUnavailable = errors.New("sandbox: unavailable in this build or on this host")
