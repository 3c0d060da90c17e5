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
// way of naming that thread as a signal's target we know of:
//   - kill, tkill, rt_sigqueueinfo and pidfd_open with its thread id;
//   - tgkill and rt_tgsigqueueinfo with its thread id as the thread;
//   - pidfd_send_signal, whose target (a pidfd, or a /proc/<tid> folder
//     opened, which serves as one) no filter can see; a program that
//     finds it refused falls back to kill (Go's os.Process does);
//   - fcntl F_SETOWN with its thread id (or minus it), which aims a file's
//     I/O signal (any, with F_SETSIG) at that thread (red team 40), and
//     the ways that hide the owner behind a pointer: fcntl F_SETOWN_EX
//     and ioctl FIOSETOWN and SIOCSPGRP;
//   - on x86_64, every x32 call (numbered apart, where a kernel has them).
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
	var a bpfAsm
	const x32 = 0x40000000 // __X32_SYSCALL_BIT
	a.ld(seccompArch)
	a.jeq(arch, "", "allow")
	a.ld(seccompNr)
	if runtime.GOARCH == "amd64" {
		// x32 calls (where the kernel has them) number kill and the
		// rest otherwise: refused whole.
		a.jge(x32, "deny", "")
	}
	for _, nr := range []uint32{unix.SYS_KILL, unix.SYS_TKILL, unix.SYS_RT_SIGQUEUEINFO, unix.SYS_PIDFD_OPEN} {
		a.jeq(nr, "arg0", "")
	}
	for _, nr := range []uint32{unix.SYS_TGKILL, unix.SYS_RT_TGSIGQUEUEINFO} {
		a.jeq(nr, "arg1", "")
	}
	a.jeq(unix.SYS_PIDFD_SEND_SIGNAL, "deny", "")
	a.jeq(unix.SYS_FCNTL, "fcntl", "")
	a.jeq(unix.SYS_IOCTL, "ioctl", "")
	a.ret(unix.SECCOMP_RET_ALLOW)

	a.label("arg0")
	a.ld(seccompArgLow(0))
	a.jeq(tid, "deny", "allow")
	a.label("arg1")
	a.ld(seccompArgLow(1))
	a.jeq(tid, "deny", "allow")
	// fcntl(fd, F_SETOWN, tid), or -tid (a group), and F_SETOWN_EX,
	// whose owner lies behind a pointer.
	a.label("fcntl")
	a.ld(seccompArgLow(1))
	a.jeq(unix.F_SETOWN_EX, "deny", "")
	a.jeq(unix.F_SETOWN, "", "allow")
	a.ld(seccompArgLow(2))
	a.jeq(tid, "deny", "")
	a.jeq(-tid, "deny", "allow")
	// ioctl FIOSETOWN and SIOCSPGRP set a file's owner as F_SETOWN does,
	// from behind a pointer: refused whole.
	a.label("ioctl")
	a.ld(seccompArgLow(1))
	a.jeq(fioSetOwn, "deny", "")
	a.jeq(unix.SIOCSPGRP, "deny", "allow")

	a.label("deny")
	a.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	a.label("allow")
	a.ret(unix.SECCOMP_RET_ALLOW)
	return a.assemble()
}

// bpfAsm assembles a classic BPF program with jumps to labels ("": the
// next instruction).
type bpfAsm struct {
	prog   []unix.SockFilter
	labels map[string]int
	jumps  []bpfJump
}

type bpfJump struct {
	at     int
	jt, jf string
}

func (a *bpfAsm) ld(off uint32) {
	a.prog = append(a.prog, unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off})
}

func (a *bpfAsm) ret(k uint32) {
	a.prog = append(a.prog, unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k})
}

func (a *bpfAsm) jeq(k uint32, jt, jf string) { a.jump(unix.BPF_JEQ, k, jt, jf) }
func (a *bpfAsm) jge(k uint32, jt, jf string) { a.jump(unix.BPF_JGE, k, jt, jf) }

func (a *bpfAsm) jump(op uint16, k uint32, jt, jf string) {
	a.jumps = append(a.jumps, bpfJump{len(a.prog), jt, jf})
	a.prog = append(a.prog, unix.SockFilter{Code: unix.BPF_JMP | op | unix.BPF_K, K: k})
}

func (a *bpfAsm) label(name string) {
	if a.labels == nil {
		a.labels = map[string]int{}
	}
	a.labels[name] = len(a.prog)
}

// assemble resolves the jumps (forward only, as BPF's are) and returns
// the program; it panics on a label missing or behind a jump, or out of
// a jump's reach (a mistake in the program above).
func (a *bpfAsm) assemble() []unix.SockFilter {
	off := func(at int, name string) uint8 {
		if name == "" {
			return 0
		}
		to, ok := a.labels[name]
		if !ok || to <= at || to-at-1 > 255 {
			panic("bpf: bad jump to " + name)
		}
		return uint8(to - at - 1)
	}
	for _, j := range a.jumps {
		a.prog[j.at].Jt, a.prog[j.at].Jf = off(j.at, j.jt), off(j.at, j.jf)
	}
	return a.prog
}

// fioSetOwn is FIOSETOWN (linux/sockios.h, the same on the architectures
// of auditArch).
const fioSetOwn = 0x8901
