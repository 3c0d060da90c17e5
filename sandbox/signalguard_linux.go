//go:build linux

package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A command forked from a sandboxed thread is in that thread's Landlock
// domain, and Landlock's signal scope lets a process signal those of its
// own domain: for as long as the forking thread lives (until the thread
// retires, a moment after the command starts; for the whole command where
// a parent-death signal keeps it), the command could signal it. Sent to a
// thread of this program, a signal is the program's: SIGABRT or SIGQUIT
// kills a server and every session in it, SIGTERM ends it (red team 39
// found the thread in /proc/1/task and sent SIGABRT, in a third of calls).
// guardForkingThread loads, on the calling thread (the one that forks the
// command), a filter the command inherits that refuses with EPERM every
// way of naming that thread as a signal's target:
//   - kill, tkill, rt_sigqueueinfo and pidfd_open with its thread id;
//   - tgkill and rt_tgsigqueueinfo with its thread id as the thread;
//   - pidfd_send_signal, whose target (a pidfd, or a /proc/<tid> folder
//     opened, which serves as one) no filter can see; a program that
//     finds it refused falls back to kill (Go's os.Process does);
//   - fcntl F_SETOWN_EX, which can name a thread (F_OWNER_TID) to get
//     the signals of a file's I/O (F_SETOWN names a process or a group:
//     the thread's id names none of those).
//
// Every other thread of the program is of another domain, which
// Landlock's scope already keeps signals from.
func guardForkingThread() error {
	arch, ok := auditArch[runtime.GOARCH]
	if !ok {
		return fmt.Errorf("seccomp: no audit architecture known for %s: the forking thread cannot be kept from its command's signals", runtime.GOARCH)
	}
	prog := signalGuard(arch, uint32(unix.Gettid()))
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return fmt.Errorf("seccomp: loading the signal guard on this thread: %w", e)
	}
	return nil
}

// auditArch is the seccomp architecture of each GOARCH this builds for.
var auditArch = map[string]uint32{
	"amd64":   unix.AUDIT_ARCH_X86_64,
	"arm64":   unix.AUDIT_ARCH_AARCH64,
	"riscv64": unix.AUDIT_ARCH_RISCV64,
	"ppc64le": unix.AUDIT_ARCH_PPC64LE,
	"s390x":   unix.AUDIT_ARCH_S390X,
	"loong64": unix.AUDIT_ARCH_LOONGARCH64,
}

// seccomp_data offsets: nr, arch, then the arguments, each 64 bits (the
// low half first, on the little-endian machines above; s390x is big
// endian).
const (
	seccompNr   = 0
	seccompArch = 4
)

func seccompArgLow(i int) uint32 {
	off := uint32(16 + 8*i)
	if runtime.GOARCH == "s390x" {
		off += 4
	}
	return off
}

// signalGuard is the filter of guardForkingThread for the thread tid: on
// another architecture than arch it allows (the plan's filter refuses
// those).
func signalGuard(arch, tid uint32) []unix.SockFilter {
	const (
		ld    = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret   = unix.BPF_RET | unix.BPF_K
		allow = unix.SECCOMP_RET_ALLOW
		eperm = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	)
	stmt := func(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
	jump := func(k uint32, jt, jf uint8) unix.SockFilter { return unix.SockFilter{Code: jeq, Jt: jt, Jf: jf, K: k} }
	// Laid out as: arch check; the syscalls whose first argument is a
	// thread, then those whose second is, then those refused whole, each
	// jumping to its check; the checks; the two returns.
	first := []uint32{unix.SYS_KILL, unix.SYS_TKILL, unix.SYS_RT_SIGQUEUEINFO, unix.SYS_PIDFD_OPEN}
	second := []uint32{unix.SYS_TGKILL, unix.SYS_RT_TGSIGQUEUEINFO}
	whole := []uint32{unix.SYS_PIDFD_SEND_SIGNAL}
	var p []unix.SockFilter
	p = append(p, stmt(ld, seccompArch))
	// Filled in below, once the places of the labels are known.
	archAt := len(p)
	p = append(p, unix.SockFilter{})
	p = append(p, stmt(ld, seccompNr))
	type fix struct{ at, to int }
	var fixes []fix
	const (
		toFirst = iota
		toSecond
		toDeny
		toFcntl
		toAllow
	)
	for _, nr := range first {
		fixes = append(fixes, fix{len(p), toFirst})
		p = append(p, jump(nr, 0, 0))
	}
	for _, nr := range second {
		fixes = append(fixes, fix{len(p), toSecond})
		p = append(p, jump(nr, 0, 0))
	}
	for _, nr := range whole {
		fixes = append(fixes, fix{len(p), toDeny})
		p = append(p, jump(nr, 0, 0))
	}
	fixes = append(fixes, fix{len(p), toFcntl})
	p = append(p, jump(unix.SYS_FCNTL, 0, 0))
	allowAt := len(p)
	p = append(p, stmt(ret, allow))
	firstAt := len(p)
	p = append(p, stmt(ld, seccompArgLow(0)), jump(tid, 0, 0))
	firstJump := len(p) - 1
	secondAt := len(p)
	p = append(p, stmt(ld, seccompArgLow(1)), jump(tid, 0, 0))
	secondJump := len(p) - 1
	fcntlAt := len(p)
	p = append(p, stmt(ld, seccompArgLow(1)), jump(unix.F_SETOWN_EX, 0, 0))
	fcntlJump := len(p) - 1
	denyAt := len(p)
	p = append(p, stmt(ret, eperm))
	finalAllow := len(p)
	p = append(p, stmt(ret, allow))
	rel := func(from, to int) uint8 { return uint8(to - from - 1) }
	p[archAt] = jump(arch, 0, rel(archAt, finalAllow))
	for _, f := range fixes {
		to := map[int]int{toFirst: firstAt, toSecond: secondAt, toDeny: denyAt, toFcntl: fcntlAt, toAllow: allowAt}[f.to]
		p[f.at].Jt, p[f.at].Jf = rel(f.at, to), 0
	}
	for _, j := range []int{firstJump, secondJump, fcntlJump} {
		p[j].Jt, p[j].Jf = rel(j, denyAt), rel(j, finalAllow)
	}
	return p
}
