//go:build linux && cgo

package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"unsafe"

	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// NetWatchAvailable reports whether this host can count the socket calls
// the sandbox refuses (seccomp user notifications, Linux ≥ 5.7 for the
// helper's TSYNC with a listener), and if not, why.
func NetWatchAvailable() error {
	notifyProbe.once.Do(func() {
		if _, err := notifyProgram(); err != nil {
			notifyProbe.err = err
			return
		}
		var sizes struct{ notif, resp, data uint16 }
		if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_NOTIF_SIZES, 0, uintptr(unsafe.Pointer(&sizes))); e != 0 {
			notifyProbe.err = fmt.Errorf("seccomp: no user notifications here: %w", e)
			return
		}
		if int(sizes.notif) < int(unsafe.Sizeof(notif{})) || int(sizes.resp) < int(unsafe.Sizeof(notifResp{})) {
			notifyProbe.err = fmt.Errorf("seccomp: unexpected notification sizes %d/%d", sizes.notif, sizes.resp)
		}
	})
	return notifyProbe.err
}

var notifyProbe struct {
	once sync.Once
	err  error
}

// NetWatch counts, for one run of a command, the socket calls its
// sandbox refuses. With the network off, socket and socketpair of every
// family but AF_UNIX go to a seccomp user notification instead of
// failing in the filter: the server answers each with EPERM — what the
// filter alone would have answered — and counts it by family, before the
// command can go on. So when the command has exited, the count is exact.
//
// The command's thread or helper loads that filter with a listener
// ([SECCOMP_FILTER_FLAG_NEW_LISTENER]) and hands the listener over: the
// thread sandbox through [NetWatch.Thread], in this process; the
// re-executed helper over a socket it inherits ([NetWatch.HelperFile],
// named by Plan.NotifyFD).
//
// Goroutines: one receives the helper's listener (it ends when the
// helper has sent it or is gone, see [NetWatch.Started]); one per
// listener answers it (it ends when the last process under that filter is
// gone, or at Close). Owner: whoever made the NetWatch, which calls Close
// once the run is judged and has exited; a run still going on as a
// session is left to end on its own.
type NetWatch struct {
	// ours is this process's end of the socket pair; peer is the
	// helper's, until Started.
	ours *net.UnixConn
	peer *os.File
	wg   sync.WaitGroup

	// mu guards the fields below.
	mu        sync.Mutex
	closed    bool
	listeners []*os.File
	refused   NetRefusals
}

// NewNetWatch returns a NetWatch, or an error where this host cannot
// count refusals (see [NetWatchAvailable]).
func NewNetWatch() (*NetWatch, error) {
	if err := NetWatchAvailable(); err != nil {
		return nil, err
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("seccomp: a socket for the listener: %w", err)
	}
	f := os.NewFile(uintptr(fds[0]), "netwatch")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		unix.Close(fds[1])
		return nil, fmt.Errorf("seccomp: a socket for the listener: %w", err)
	}
	w := &NetWatch{ours: c.(*net.UnixConn), peer: os.NewFile(uintptr(fds[1]), "netwatch-helper")}
	w.wg.Go(w.receive)
	return w, nil
}

// HelperFile is the socket end a re-executed helper gets (its fd named by
// Plan.NotifyFD), to send the listener of the filter it loads.
func (w *NetWatch) HelperFile() *os.File { return w.peer }

// Thread applies payload to the calling thread as [ApplyThread] does,
// with the refused socket calls counted here. It is the thread sandbox
// of a run watched by w.
func (w *NetWatch) Thread(payload []byte, tty string) error {
	return applyThread(payload, tty, w.adopt)
}

// Started says the command has been started (or failed to start): the
// helper holds its own copy of HelperFile by now, so this one is closed,
// and the receiving goroutine ends when the helper has sent the listener
// or is gone.
func (w *NetWatch) Started() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.peer != nil {
		w.peer.Close()
		w.peer = nil
	}
}

// Refused is what was refused so far.
func (w *NetWatch) Refused() NetRefusals {
	w.mu.Lock()
	defer w.mu.Unlock()
	return NetRefusals{Families: append([]FamilyCount(nil), w.refused.Families...)}
}

// Close ends the watch and waits for its goroutines. A process still
// running under a filter of w gets ENOSYS from its next refused socket
// call (nobody listens any more); call it once the run has exited.
func (w *NetWatch) Close() {
	w.mu.Lock()
	w.closed = true
	if w.peer != nil {
		w.peer.Close()
		w.peer = nil
	}
	for _, l := range w.listeners {
		l.Close()
	}
	w.listeners = nil
	w.mu.Unlock()
	w.ours.Close()
	w.wg.Wait()
}

// receive takes the listener a helper sends and answers it.
func (w *NetWatch) receive() {
	defer w.ours.Close()
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := w.ours.ReadMsgUnix(make([]byte, 1), oob)
	if err != nil || oobn == 0 {
		return // the helper is gone (or the run used the thread path)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return
	}
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			w.answer(fd)
		}
	}
}

// adopt starts answering the listener fd, from its own goroutine.
func (w *NetWatch) adopt(fd int) {
	w.wg.Go(func() { w.answer(fd) })
}

// answer answers the refused socket calls of the listener fd (which it
// owns) with EPERM, counting each, until no process is left under its
// filter or w is closed.
func (w *NetWatch) answer(fd int) {
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return
	}
	f := os.NewFile(uintptr(fd), "seccomp-listener")
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		f.Close()
		return
	}
	w.listeners = append(w.listeners, f)
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		for i, l := range w.listeners {
			if l == f {
				w.listeners = append(w.listeners[:i], w.listeners[i+1:]...)
				break
			}
		}
		w.mu.Unlock()
		f.Close()
	}()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	for {
		var req notif
		var gone, got bool
		err := rc.Read(func(fd uintptr) bool {
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(pfd, 0)
			for errors.Is(err, unix.EINTR) {
				n, err = unix.Poll(pfd, 0)
			}
			switch {
			case err != nil:
				gone = true
				return true
			case n == 0:
				return false // wait for the poller
			case pfd[0].Revents&unix.POLLIN == 0:
				gone = true // POLLHUP: no process is left under the filter
				return true
			}
			req = notif{}
			if _, _, e := unix.Syscall(unix.SYS_IOCTL, fd, unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&req))); e == 0 {
				got = true
			}
			return true // ENOENT: the caller died meanwhile; poll again
		})
		if err != nil || gone {
			return
		}
		if !got {
			continue
		}
		w.mu.Lock()
		w.refused.Add(int(int32(req.data.args[0])))
		w.mu.Unlock()
		resp := notifResp{id: req.id, err: -int32(unix.EPERM)}
		rc.Control(func(fd uintptr) {
			unix.Syscall(unix.SYS_IOCTL, fd, unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&resp)))
		})
	}
}

// The kernel's struct seccomp_data, seccomp_notif and seccomp_notif_resp.
type (
	seccompData struct {
		nr   int32
		arch uint32
		ip   uint64
		args [6]uint64
	}
	notif struct {
		id    uint64
		pid   uint32
		flags uint32
		data  seccompData
	}
	notifResp struct {
		id    uint64
		val   int64
		err   int32
		flags uint32
	}
)

// notifyPrograms caches the BPF program of the notifying filter.
var notifyPrograms struct {
	once sync.Once
	prog []unix.SockFilter
	err  error
}

// notifyProgram is the filter that sends socket and socketpair of every
// family but AF_UNIX to the listener, and allows everything else (the
// plan's main filter, loaded first with the network open, refuses the
// rest).
func notifyProgram() ([]unix.SockFilter, error) {
	c := &notifyPrograms
	c.once.Do(func() {
		f, err := seccomp.NewFilter(seccomp.ActAllow)
		if err != nil {
			c.err = fmt.Errorf("seccomp: new filter: %w", err)
			return
		}
		defer f.Release()
		notUnix, err := seccomp.MakeCondition(0, seccomp.CompareNotEqual, unix.AF_UNIX)
		if err != nil {
			c.err = fmt.Errorf("seccomp: condition family != AF_UNIX: %w", err)
			return
		}
		for _, name := range []string{"socket", "socketpair"} {
			sc, err := seccomp.GetSyscallFromName(name)
			if err != nil {
				c.err = fmt.Errorf("seccomp: %s: %w", name, err)
				return
			}
			if err := f.AddRuleConditional(sc, seccomp.ActNotify, []seccomp.ScmpCondition{notUnix}); err != nil {
				c.err = fmt.Errorf("seccomp: notifying %s of families other than AF_UNIX: %w", name, err)
				return
			}
		}
		c.prog, c.err = programOf(f)
	})
	return c.prog, c.err
}

// programOf exports f's BPF program.
func programOf(f *seccomp.ScmpFilter) ([]unix.SockFilter, error) {
	raw, err := exportBPF(f)
	if err != nil {
		return nil, fmt.Errorf("seccomp: exporting the filter: %w", err)
	}
	if len(raw) == 0 || len(raw)%8 != 0 {
		return nil, fmt.Errorf("seccomp: exported filter has %d bytes, not whole instructions", len(raw))
	}
	prog := make([]unix.SockFilter, len(raw)/8)
	for j := range prog {
		b := raw[j*8:]
		prog[j] = unix.SockFilter{
			Code: binary.NativeEndian.Uint16(b[0:]),
			Jt:   b[2],
			Jf:   b[3],
			K:    binary.NativeEndian.Uint32(b[4:]),
		}
	}
	return prog, nil
}

// loadListener loads prog on the calling thread (every thread with
// tsync) and returns its listener, close-on-exec.
func loadListener(prog []unix.SockFilter, tsync bool) (int, error) {
	flags := uintptr(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER)
	if tsync {
		flags |= unix.SECCOMP_FILTER_FLAG_TSYNC | unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	fd, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	if e != 0 {
		return -1, fmt.Errorf("seccomp: loading the notifying filter: %w", e)
	}
	return int(fd), nil
}

// applySeccompThreadListen loads the plan's filter (network off) with
// socket and socketpair of another family than AF_UNIX sent to its
// listener instead of refused, on the calling thread; it returns the
// listener. One filter: the two that applySeccompReport stacks cost twice
// the load.
func applySeccompThreadListen(plan Plan) (int, error) {
	prog, err := seccompProgram(netNotify)
	if err != nil {
		return -1, err
	}
	return loadListener(prog, false)
}

// applySeccompReport loads the plan's filters on every thread, as
// applySeccomp does, and sends the listener over plan.NotifyFD (the
// helper's end of a NetWatch), closing it after.
func applySeccompReport(plan Plan) error {
	sock := plan.NotifyFD
	defer unix.Close(sock)
	if !listenable(plan) {
		return applySeccomp(plan)
	}
	prog, err := notifyProgram()
	if err != nil {
		return err
	}
	open := plan
	open.Network = true
	if err := applySeccomp(open); err != nil {
		return err
	}
	fd, err := loadListener(prog, true)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Sendmsg(sock, []byte{0}, unix.UnixRights(fd), nil, 0); err != nil {
		return fmt.Errorf("seccomp: handing the listener to unified-exec: %w", err)
	}
	return nil
}
