//go:build unix && !linux

package ptyrun

// BatchScheduling does nothing: SCHED_BATCH is Linux's, and so are the
// scheduling groups it makes up for.
func BatchScheduling(on bool) error { return nil }
