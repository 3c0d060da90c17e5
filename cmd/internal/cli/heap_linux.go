//go:build linux

package cli

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// heapArena is the unit the runtime reserves its heap address space in
// on 64-bit Linux (64 MiB, aligned); the heap starts somewhere inside one
// and grows up, so the arena holding an object and the next cover it.
const heapArena = 64 << 20

// hugeHeap asks for transparent huge pages in the part of the Go heap the
// runtime has mapped so far (MADV_HUGEPAGE; the host's "madvise" setting
// gives them only so). A wrapper's start touches a few MiB of fresh heap,
// each 4 KiB page one fault, and on a virtual machine with shadow paging
// (this kind: ~12 µs a fault, against ~200 µs for a whole 2 MiB page) those
// faults were a fifth of its CPU. Only for the wrapper: one command, then
// exit, so a partly used huge page costs at most a few MiB for its life;
// the server's heap is warm after its first call and stays 4 KiB. Memory
// mapped later, and 2 MiB spans already faulted in part, keep 4 KiB pages;
// calling it again after the heap grew covers the new part. Best effort:
// a host without THP ignores it, and unmapped holes in the span only make
// madvise say ENOMEM for them.
func hugeHeap() {
	base := uintptr(unsafe.Pointer(new([64]byte))) &^ (heapArena - 1)
	// Addresses only: no Go pointer is made of them.
	unix.Syscall(unix.SYS_MADVISE, base, 2*heapArena, unix.MADV_HUGEPAGE)
}
