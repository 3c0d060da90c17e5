//go:build linux

package sandbox

import (
	"encoding/binary"
	"os"

	"golang.org/x/sys/unix"
)

// dirWatcher is an inotify instance (made at first use, close-on-exec,
// never closed) that reports, for each watched directory, an entry made,
// removed or renamed in it, and the directory going or moving. Its zero
// value is ready for use; dirCache's mutex guards it.
type dirWatcher struct {
	fd     int
	inited bool
	buf    []byte
}

const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW

// add watches dir; -1 when it cannot (no inotify, or the user's
// max_user_watches reached): the cache then checks the directory's time.
func (w *dirWatcher) add(dir string) int {
	if !w.inited {
		w.inited = true
		fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
		if err != nil {
			fd = -1
		}
		w.fd = fd
	}
	if w.fd < 0 {
		return -1
	}
	wd, err := unix.InotifyAddWatch(w.fd, dir, watchMask)
	if err != nil {
		return -1
	}
	return wd
}

func (w *dirWatcher) remove(wd int) {
	if w.fd >= 0 {
		unix.InotifyRmWatch(w.fd, uint32(wd))
	}
}

// read calls each with every event queued: the watch, whether the
// directory itself went (or moved, or its watch ended), and whether
// events were lost.
func (w *dirWatcher) read(each func(wd int, gone, overflow bool)) {
	if !w.inited || w.fd < 0 {
		return
	}
	if w.buf == nil {
		w.buf = make([]byte, 64<<10)
	}
	for {
		n, err := unix.Read(w.fd, w.buf)
		if err != nil || n <= 0 {
			return // EAGAIN: nothing more queued
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			wd := int(int32(binary.NativeEndian.Uint32(w.buf[off:])))
			mask := binary.NativeEndian.Uint32(w.buf[off+4:])
			nameLen := int(binary.NativeEndian.Uint32(w.buf[off+12:]))
			off += unix.SizeofInotifyEvent + nameLen
			const selfGone = unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_IGNORED
			each(wd, mask&selfGone != 0, mask&unix.IN_Q_OVERFLOW != 0)
		}
	}
}

// mountWatch reports mounts made or removed in the program's mount
// namespace: the mount table of the thread that first asks, opened then
// and never closed, polls as an exceptional condition after each (poll
// itself takes the report in). That thread's, not /proc/self's: the
// process's first thread may be one that entered a namespace of its own
// for good (a thread sandboxed in a test, which Go then keeps unused),
// and its table, frozen there, missed every later mount (a flaky
// TestApplyDenyReadThroughSecondMount, session 20). Those who ask plan
// and survey on threads of the program's namespace (a sandboxed thread
// runs nothing else), and the descriptor keeps the namespace it was
// opened in. Its zero value is ready for use; its owner's mutex guards
// it.
type mountWatch struct {
	fd     int
	inited bool
}

// changed says whether a mount was made or removed since the last call
// (true at the first, and always when mounts cannot be watched).
func (m *mountWatch) changed() bool {
	if !m.inited {
		m.inited = true
		fd, err := unix.Open("/proc/thread-self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			fd = -1
		}
		m.fd = fd
		return true
	}
	if m.fd < 0 {
		return true
	}
	fds := []unix.PollFd{{Fd: int32(m.fd), Events: unix.POLLPRI}}
	n, err := unix.Poll(fds, 0)
	return err != nil || n > 0 && fds[0].Revents&(unix.POLLPRI|unix.POLLERR|unix.POLLNVAL) != 0
}

// table reads the whole mount table the watch polls, from its start
// (the read leaves the poll's report alone). It needs no lock of the
// watch's owner, only one reader at a time. Before changed has opened
// the table, or where it could not, it reads the calling thread's.
func (m *mountWatch) table() ([]byte, error) {
	if !m.inited || m.fd < 0 {
		return os.ReadFile("/proc/thread-self/mountinfo")
	}
	var out []byte
	buf := make([]byte, 32<<10)
	for off := int64(0); ; {
		n, err := unix.Pread(m.fd, buf, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: "/proc/thread-self/mountinfo", Err: err}
		}
		if n == 0 {
			return out, nil
		}
		out = append(out, buf[:n]...)
		off += int64(n)
	}
}
