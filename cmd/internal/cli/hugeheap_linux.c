//go:build linux && cgo

// Transparent huge pages for a wrapper's Go heap, from its first page.
//
// A wrapped command's start touches about a megabyte of fresh heap, each
// 4 KiB page one fault, and on a virtual machine with shadow paging (this
// kind: 12-24 us a fault) those ~350 faults were a quarter of the start.
// Advice given from Go comes too late: the runtime has touched the first
// 2 MiB of its heap before main, and a huge page is given on a fault only
// where nothing of its 2 MiB is mapped yet. So the advice is given here,
// as the runtime maps the heap: in a program with cgo, the runtime's mmap
// goes through the C library's (runtime/cgo's x_cgo_mmap), and the
// package's LDFLAGS (-Wl,--wrap=mmap, relay_linux.go) route that call,
// and any other outside the C library's own, through __wrap_mmap.
//
// Only in a program that wraps one command (ue_huge_heap, set by the
// relay before the runtime starts): it lives for one command, so a partly
// used huge page costs at most a few MiB for its life. A server's heap
// stays in 4 KiB pages, which its scavenger can give back one by one.

#define _GNU_SOURCE
#include <stddef.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

int ue_huge_heap;

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
	// The system call, as the C library's mmap makes it (errno set and
	// MAP_FAILED returned on failure), without calling it: a build that
	// links this file without the wrap still links.
	void *p = (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	// The runtime maps its heap over its reservation: anonymous, fixed,
	// writable, in chunks of at least 2 MiB (its smaller mappings are
	// metadata, a few pages of each touched).
	if (ue_huge_heap && p != MAP_FAILED && (flags & MAP_ANONYMOUS) && (flags & MAP_FIXED) &&
	    (prot & PROT_WRITE) && len >= (size_t)2 << 20)
		syscall(SYS_madvise, p, len, MADV_HUGEPAGE);
	return p;
}
