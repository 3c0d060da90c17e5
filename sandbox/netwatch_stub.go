//go:build !(linux && cgo)

package sandbox

import (
	"errors"
	"os"
)

// NetWatchAvailable reports that refused socket calls cannot be counted
// in this build (see [SeccompEnabled]).
func NetWatchAvailable() error { return errors.New("seccomp: " + seccompMissing()) }

// NetWatch counts refused socket calls where seccomp user notifications
// exist (Linux with cgo); here it cannot be made.
type NetWatch struct{}

// NewNetWatch fails here (see [NetWatchAvailable]).
func NewNetWatch() (*NetWatch, error) { return nil, NetWatchAvailable() }

// HelperFile is nil here.
func (w *NetWatch) HelperFile() *os.File { return nil }

// Thread applies payload as [ApplyThread] does.
func (w *NetWatch) Thread(payload []byte, tty string) error { return ApplyThread(payload, tty) }

// Started does nothing here.
func (w *NetWatch) Started() {}

// Refused is empty here.
func (w *NetWatch) Refused() NetRefusals { return NetRefusals{} }

// Close does nothing here.
func (w *NetWatch) Close() {}

func applySeccompThreadListen(Plan) (int, error) { return -1, NetWatchAvailable() }

func applySeccompReport(Plan) error { return NetWatchAvailable() }
