//go:build !linux

package userns

import (
	"errors"
	"syscall"
)

// Kind is how this process can give a child new namespaces: never here.
type Kind int

const (
	None Kind = iota
	Direct
	User
)

func (k Kind) String() string { return "none" }

// Attr returns nil: namespaces are Linux-only.
func Attr(kind Kind, extra uintptr) *syscall.SysProcAttr { return nil }

// Probe reports that namespaces are Linux-only.
func Probe() (Kind, error) { return None, errors.New("namespaces are Linux-only") }

// ClearAmbient does nothing off Linux.
func ClearAmbient() error { return nil }

// ClearAmbientAllThreads does nothing off Linux.
func ClearAmbientAllThreads() error { return nil }

// HasAmbient reports false off Linux.
func HasAmbient() bool { return false }

// Known does nothing off Linux.
func Known(k Kind) {}
