//go:build !linux

package sandbox

import "errors"

// Apply fails: there is no sandbox on this platform.
func Apply([]byte) error {
	return errors.New("sandbox: none on this platform; run with sandbox mode danger-full-access or required = false")
}

// LandlockABI is 0: Landlock is Linux-only.
func LandlockABI() int { return 0 }
