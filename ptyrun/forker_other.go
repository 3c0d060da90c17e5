//go:build !linux

package ptyrun

// A Forker prepares forking threads in cgroups ahead of need; that needs
// Linux cgroups, so here it does nothing.
type Forker struct{}

// NewForker returns a Forker that does nothing here.
func NewForker(ahead bool) *Forker { return &Forker{} }

// NewWarmForker: nothing is prepared here.
func NewWarmForker(ahead bool, warm Warmer) *Forker { return &Forker{} }

// Close does nothing here.
func (f *Forker) Close() {}

// Prepared is "" here.
func (f *Forker) Prepared() string { return "" }

// A Warmer prepares a forking thread for a sandboxed command (see the
// Linux Forker); unused here.
type Warmer func() (undo func() error, err error)

// A Builder sandboxes a warmed thread ahead (see the Linux Forker);
// unused here.
type Builder func(payload []byte) (fits func(payload []byte) bool, release func(), err error)

// SetBuilder does nothing here.
func (f *Forker) SetBuilder(Builder) {}

// Expect does nothing here.
func (f *Forker) Expect([]byte) {}

// SetWarm does nothing here.
func (f *Forker) SetWarm(Warmer) {}

// Wake does nothing here.
func (f *Forker) Wake() {}

// Refill does nothing here.
func (f *Forker) Refill() {}
