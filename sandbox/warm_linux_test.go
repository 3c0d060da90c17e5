package sandbox

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/policy"

	"golang.org/x/sys/unix"
)

// TestWarmThreadKeepsChroot: a program run in a chroot (as root: systemd's
// RootDirectory=, a build jail) warms its threads without leaving it. The
// test of going back (setns) put the thread at the root of the mount
// namespace, outside the chroot, and the sandboxed command forked there
// saw, and could write, the host's file system (red team 11).
func TestWarmThreadKeepsChroot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a chroot needs root")
	}
	if err := ThreadAvailable(); err != nil {
		t.Skipf("no thread sandbox here: %v", err)
	}
	jail := t.TempDir()
	for _, d := range []string{"proc", "dev"} {
		if err := os.Mkdir(jail+"/"+d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(jail+"/jail-marker", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	inJail := func(when string) error {
		names, err := readDirNames("/")
		if err != nil {
			return fmt.Errorf("%s: %v", when, err)
		}
		if !slices.Contains(names, "jail-marker") {
			return fmt.Errorf("%s: the thread left the chroot: / holds %v", when, names)
		}
		return nil
	}
	errc := make(chan error, 1)
	goRetired(func() {
		errc <- func() error {
			if err := privateMountNamespace(); err != nil {
				return err
			}
			// A root that is a mount of its own, as a container's or a
			// service's usually is (a plain folder as the root leaves
			// no mount to make private: every thread sandbox fails).
			if err := unix.Mount(jail, jail, "", unix.MS_BIND, ""); err != nil {
				return err
			}
			for _, d := range []string{"/proc", "/dev"} {
				if err := unix.Mount(d, jail+d, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
					return err
				}
			}
			if err := unix.Chroot(jail); err != nil {
				return err
			}
			if err := unix.Chdir("/"); err != nil {
				return err
			}
			undo, err := WarmThread()
			if err != nil {
				return fmt.Errorf("warming in a chroot: %v", err)
			}
			if err := inJail("warmed"); err != nil {
				undo()
				return err
			}
			if err := undo(); err != nil {
				return fmt.Errorf("undo: %v", err)
			}
			return inJail("after undo")
		}()
	})
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// TestWarmDeviceLayerNewTopEntry: the device layer built ahead is handed
// over only while / has the entries it was built for: an entry made since
// (which that layer would not grant) has it built afresh, and so does one
// removed.
func TestWarmDeviceLayerNewTopEntry(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making an entry of / needs root")
	}
	if err := ThreadAvailable(); err != nil {
		t.Skipf("no thread sandbox here: %v", err)
	}
	plan, err := Compile(policy.DefaultSandbox(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	key := deviceKeyOf(plan)
	built := func() *warmedThread {
		top, err := rootNames()
		if err != nil {
			t.Fatal(err)
		}
		fd, err := devicesRuleset(plan)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return &warmedThread{devices: fd, devKey: key, top: top}
	}
	time.Sleep(listingMargin + 50*time.Millisecond) // / settled: its listing is kept
	w := built()
	if got := w.devicesFor(key); got < 0 {
		t.Fatal("/ unchanged: the layer built ahead was not handed over")
	}
	entry := fmt.Sprintf("/ue-warm-test-%d", os.Getpid())
	w = built()
	if err := os.Mkdir(entry, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(entry) })
	if got := w.devicesFor(key); got >= 0 {
		t.Errorf("%s was made after the layer was built, and the layer was handed over", entry)
	}
	time.Sleep(listingMargin + 50*time.Millisecond)
	w = built()
	if err := os.Remove(entry); err != nil {
		t.Fatal(err)
	}
	if got := w.devicesFor(key); got >= 0 {
		t.Errorf("%s was removed after the layer was built, and the layer was handed over", entry)
	}
}

// TestWarmThreadKeepsProgramListing: a thread warmed ahead reads / in a
// copy of the mounts whose mount ids are its own. Its reading must leave
// the program's kept listing of / alone: it replaced it on every call, and
// every plan read / again.
func TestWarmThreadKeepsProgramListing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("warming a thread needs root in the program's user namespace (an ordinary user's server runs in one of its own)")
	}
	if err := ThreadAvailable(); err != nil {
		t.Skipf("no thread sandbox here: %v", err)
	}
	plan, err := Compile(policy.DefaultSandbox(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	lastDevices.Store(&plan)
	time.Sleep(listingMargin + 50*time.Millisecond) // / settled: its listing is kept
	if _, err := dirNames("/"); err != nil {
		t.Fatal(err)
	}
	listings.mu.Lock()
	before, kept := listings.m["/"]
	listings.mu.Unlock()
	if !kept {
		t.Skip("/ is not a file system whose listings are kept here")
	}
	errc := make(chan error, 1)
	goRetired(func() {
		undo, err := WarmThread()
		if err != nil {
			errc <- err
			return
		}
		w, _ := warmed.Load(unix.Gettid())
		if fd := w.(*warmedThread).devicesFor(deviceKeyOf(plan)); fd < 0 {
			err = fmt.Errorf("the device layer built ahead was not handed over")
		} else {
			unix.Close(fd)
		}
		errc <- errors.Join(err, undo())
	})
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	listings.mu.Lock()
	after, kept := listings.m["/"]
	listings.mu.Unlock()
	if !kept || after.mnt != before.mnt {
		t.Errorf("the program's listing of / (mount %d) was replaced by a warmed thread's (kept %v, mount %d)", before.mnt, kept, after.mnt)
	}
}
