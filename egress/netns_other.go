//go:build !linux

package egress

import (
	"errors"
	"net"
)

// Namespace is a network namespace; only Linux has them.
type Namespace struct{}

// ErrNoNamespace: this platform has no network namespaces.
var ErrNoNamespace = errors.New("egress: network namespaces need Linux")

// NewNamespace fails: no network namespaces here.
func NewNamespace() (*Namespace, error) { return nil, ErrNoNamespace }

// Enter fails.
func (*Namespace) Enter() error { return ErrNoNamespace }

// Listen fails.
func (*Namespace) Listen(string) (net.Listener, error) { return nil, ErrNoNamespace }

// Close does nothing.
func (*Namespace) Close() error { return nil }
