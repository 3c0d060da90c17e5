//go:build !linux

package sandbox

import (
	"fmt"
	"os"
	"runtime"
)

// Apply enforces nothing here: it returns an error wrapping
// [ErrUnavailable] for any enforced plan (Landlock and seccomp are
// Linux-only), and nil for danger-full-access.
func Apply(payload []byte) error {
	plan, err := Unmarshal(payload)
	if err != nil {
		return err
	}
	if !plan.Enforced() {
		return nil
	}
	return fmt.Errorf("%w: no Landlock or seccomp on %s; use mode danger-full-access or required = false", ErrUnavailable, runtime.GOOS)
}

func landlockABI() int { return 0 }

// ThreadAvailable reports that thread sandboxes are Linux-only.
func ThreadAvailable() error {
	return fmt.Errorf("%w: no Landlock or seccomp on %s", ErrUnavailable, runtime.GOOS)
}

// ApplyThread enforces nothing here (see [Apply]).
func ApplyThread(payload []byte, _ string) error { return Apply(payload) }

// SeedDevices: no thread sandbox here, no device layer to build.
func SeedDevices(string) {}

// WarmThread prepares nothing here: there is no thread sandbox.
func WarmThread() (undo func() error, err error) { return nil, ErrUnavailable }

// BuildThread builds nothing here: there is no thread sandbox.
func BuildThread([]byte) (fits func([]byte) bool, release func(), err error) { return nil, nil, nil }

// BuiltThreads is 0, 0 here.
func BuiltThreads() (used, unfit uint64) { return 0, 0 }

// WarmedThreads is 0, 0 here.
func WarmedThreads() (used, stale uint64) { return 0, 0 }

// KeptRulesets is 0 here.
func KeptRulesets() int { return 0 }

// mkdirNoLinks is os.Mkdir here (no sandbox to protect).
func mkdirNoLinks(path string, mode uint32) error { return os.Mkdir(path, os.FileMode(mode)) }
