//go:build linux

// Package testfs makes the file systems tests of the sandbox's listings
// need (as root): loop-mounted ext4 images, fscrypt keys and policies.
// Only tests import it.
package testfs

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"github.com/unified-exec/unified-exec/ptyrun"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/unified-exec/unified-exec/internal/testreq"
	"golang.org/x/sys/unix"
)

// Need skips unless root, and fails (under
// UNIFIED_EXEC_REQUIRE_SANDBOX=1, as root) or skips when the machine
// cannot make the file system the test needs.
func Need(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if testreq.Required() {
		t.Fatalf("%s (as root, with %s=1)", msg, testreq.Env)
	}
	t.Skip(msg)
}

// RequireRoot skips unless the test runs as root.
func RequireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making and mounting file systems needs root")
	}
}

// Ext4Image makes an ext4 file system image (mkfs.ext4 with args) on a
// loop device of its own and mounts it; it returns the device and the
// mount point, unmounted and detached at the end of the test.
func Ext4Image(t *testing.T, args ...string) (dev, mnt string) {
	t.Helper()
	RequireRoot(t)
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		Need(t, "no mkfs.ext4: %v", err)
	}
	img := filepath.Join(t.TempDir(), "fs.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 32<<20); err != nil {
		t.Fatal(err)
	}
	if out, err := owned(exec.Command(mkfs, append(append([]string{"-q", "-F"}, args...), img)...), true); err != nil {
		Need(t, "mkfs.ext4 %v: %v %s", args, err, out)
	}
	out, err := owned(exec.Command("losetup", "--find", "--show", img), false)
	if err != nil {
		Need(t, "no loop device here: %v", err)
	}
	dev = strings.TrimSpace(string(out))
	t.Cleanup(func() { ptyrun.RunOwned(exec.Command("losetup", "--detach", dev)) })
	mnt = t.TempDir()
	Mount(t, dev, mnt)
	return dev, mnt
}

// Mount mounts the ext4 file system on dev at mnt until the test ends.
func Mount(t *testing.T, dev, mnt string) {
	t.Helper()
	if out, err := owned(exec.Command("mount", "-t", "ext4", dev, mnt), true); err != nil {
		Need(t, "mounting %s: %v %s", dev, err, out)
	}
	t.Cleanup(func() { ptyrun.RunOwned(exec.Command("umount", mnt)) })
}

// LockedHome makes a folder "home" encrypted with fscrypt on an ext4
// image of its own, holding secret (relative to it) with the given
// content, and locks it (its key removed: its names are ciphertext). It
// returns the home, the secret's path and unlock, which adds the key
// again (the home's status unchanged).
func LockedHome(t *testing.T, secret, content string) (home, path string, unlock func()) {
	t.Helper()
	_, mnt := Ext4Image(t, "-O", "encrypt")
	home = filepath.Join(mnt, "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 64)
	rand.Read(key)
	id, err := AddFscryptKey(mnt, key)
	if err != nil {
		Need(t, "fscrypt: adding a key: %v", err)
	}
	if err := SetFscryptPolicy(home, id); err != nil {
		Need(t, "fscrypt: encrypting a folder: %v", err)
	}
	path = filepath.Join(home, secret)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := RemoveFscryptKey(mnt, id); err != nil {
		t.Fatal(err)
	}
	if names, err := os.ReadDir(home); err != nil || len(names) != 1 || strings.HasPrefix(secret, names[0].Name()) {
		t.Fatalf("the locked home lists %v (%v): want one ciphertext name", names, err)
	}
	unlock = func() {
		t.Helper()
		if _, err := AddFscryptKey(mnt, key); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != content {
			t.Fatalf("unlocked, the secret reads %q %v", b, err)
		}
	}
	return home, path, unlock
}

// ownMountNSEnv marks the run of a test that InOwnMountNS started.
const ownMountNSEnv = "UNIFIED_EXEC_TEST_OWN_MOUNT_NS"

// InOwnMountNS reports whether the test runs in a mount namespace of its
// own (private: nothing it mounts propagates out, and no namespace made
// elsewhere copies its mounts). Outside one, it runs the test alone again
// in one (as root), fails unless that run passed, and returns false: the
// caller returns.
func InOwnMountNS(t *testing.T) bool {
	t.Helper()
	RequireRoot(t)
	if os.Getenv(ownMountNSEnv) == t.Name() {
		return true
	}
	cmd := exec.Command("/proc/self/exe", "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), ownMountNSEnv+"="+t.Name())
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	out, err := owned(cmd, true)
	if err != nil || !bytes.Contains(out, []byte("--- PASS: "+t.Name()+" ")) {
		t.Fatalf("the run in a mount namespace of its own did not pass (%v):\n%s", err, out)
	}
	t.Logf("passed in a mount namespace of its own:\n%s", out)
	return false
}

// fscrypt ioctls (linux/fscrypt.h), by key identifier (v2 policies).
const (
	fscryptKeySpecIdentifier = 2
	fscryptModeAES256XTS     = 1
	fscryptModeAES256CTS     = 4
)

// AddFscryptKey adds raw as a v2 master key to the file system at mnt and
// returns its identifier.
func AddFscryptKey(mnt string, raw []byte) ([16]byte, error) {
	var id [16]byte
	f, err := os.Open(mnt)
	if err != nil {
		return id, err
	}
	defer f.Close()
	arg := make([]byte, unsafe.Sizeof(unix.FscryptAddKeyArg{})+uintptr(len(raw)))
	a := (*unix.FscryptAddKeyArg)(unsafe.Pointer(&arg[0]))
	a.Key_spec.Type = fscryptKeySpecIdentifier
	a.Raw_size = uint32(len(raw))
	copy(arg[unsafe.Sizeof(unix.FscryptAddKeyArg{}):], raw)
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.FS_IOC_ADD_ENCRYPTION_KEY, uintptr(unsafe.Pointer(&arg[0]))); errno != 0 {
		return id, errno
	}
	copy(id[:], a.Key_spec.U[:16])
	return id, nil
}

// RemoveFscryptKey removes the key of identifier id from the file system
// at mnt; it fails unless every file it opened is closed.
func RemoveFscryptKey(mnt string, id [16]byte) error {
	f, err := os.Open(mnt)
	if err != nil {
		return err
	}
	defer f.Close()
	var a unix.FscryptRemoveKeyArg
	a.Key_spec.Type = fscryptKeySpecIdentifier
	copy(a.Key_spec.U[:], id[:])
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.FS_IOC_REMOVE_ENCRYPTION_KEY, uintptr(unsafe.Pointer(&a))); errno != 0 {
		return fmt.Errorf("removing the key: %w", errno)
	}
	if a.Removal_status_flags != 0 {
		return fmt.Errorf("removing the key: status %#x (files busy?)", a.Removal_status_flags)
	}
	return nil
}

// SetFscryptPolicy encrypts the empty folder dir with the key of
// identifier id (a v2 policy).
func SetFscryptPolicy(dir string, id [16]byte) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	p := unix.FscryptPolicyV2{Version: 2, Contents_encryption_mode: fscryptModeAES256XTS, Filenames_encryption_mode: fscryptModeAES256CTS}
	p.Master_key_identifier = id
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.FS_IOC_SET_ENCRYPTION_POLICY, uintptr(unsafe.Pointer(&p))); errno != 0 {
		return errno
	}
	return nil
}

// owned runs cmd as a child its caller waits for (in a program that reaps
// the orphans of its own namespace, the reaper could take its exit first:
// "wait: no child processes") and returns its output, stderr too with
// combined.
func owned(cmd *exec.Cmd, combined bool) ([]byte, error) {
	var out bytes.Buffer
	cmd.Stdout = &out
	if combined {
		cmd.Stderr = &out
	}
	err := ptyrun.RunOwned(cmd)
	return out.Bytes(), err
}
