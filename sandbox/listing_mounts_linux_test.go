package sandbox

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/internal/testfs"
	"github.com/unified-exec/unified-exec/policy"
	"golang.org/x/sys/unix"
)

// The listings a plan keeps must never say a name is absent where a
// lookup finds it, whatever happens to the file system between plans: a
// key added to an encrypted home, a name added to an overlay's lower
// layer, an image edited while unmounted and mounted again. Each test
// here makes that file system (as root) and checks the plan after the
// change.

// planDenies compiles the default policy's plan (HOME is the test's) and
// reports whether path is in its unreadable paths.
func planDenies(t *testing.T, path string) bool {
	t.Helper()
	plan, err := Compile(policy.DefaultSandbox(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return slices.Contains(plan.DenyRead, path)
}

// TestListingEncryptedHomeUnlocked: a home encrypted with fscrypt, listed
// while its key was absent (its names ciphertext), then unlocked — the
// directory's status unchanged — has its secrets unreadable in the next
// plan.
func TestListingEncryptedHomeUnlocked(t *testing.T) {
	if !testfs.InOwnMountNS(t) {
		return // run in a mount namespace of its own (see TestListingRemountedAfterOfflineEdit)
	}
	home, secret, unlock := testfs.LockedHome(t, ".aws/credentials", "SECRET\n")
	t.Setenv("HOME", home)
	time.Sleep(coarseMargin + 100*time.Millisecond) // the home has settled, whatever its clock
	if _, err := dirNames(home); err != nil {
		t.Fatal(err)
	}
	planDenies(t, filepath.Join(home, ".aws")) // a plan while locked: .aws is not there
	var before, after unix.Stat_t
	unix.Stat(home, &before)
	unlock()
	unix.Stat(home, &after)
	if before.Ctim != after.Ctim || before.Ino != after.Ino {
		t.Logf("unlocking changed the home's status (%v -> %v): the test covers less", before.Ctim, after.Ctim)
	}
	if !planDenies(t, filepath.Join(home, ".aws")) {
		t.Fatal("the home unlocked after a plan: ~/.aws is readable in the next plan")
	}
	a := newAbsence()
	if a.absent(secret) {
		t.Fatal("the unlocked secret is said absent")
	}
}

// TestListingOverlayLowerChanged: a name added to an overlay's lower
// layer, which lookups through the overlay find while the merged folder's
// status stays as it was, is unreadable in the next plan.
func TestListingOverlayLowerChanged(t *testing.T) {
	if !testfs.InOwnMountNS(t) {
		return // run in a mount namespace of its own (see TestListingRemountedAfterOfflineEdit)
	}
	testfs.RequireRoot(t)
	base := t.TempDir()
	lower, upper, work, merged := filepath.Join(base, "lower"), filepath.Join(base, "upper"), filepath.Join(base, "work"), filepath.Join(base, "merged")
	for _, d := range []string{lower + "/home", upper + "/home", work, merged} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The home is in both layers (a merged folder), with a file in the
	// upper one so that its times are the upper layer's.
	if err := os.WriteFile(upper+"/home/.profile", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", lower, upper, work)
	if out, err := exec.Command("mount", "-t", "overlay", "overlay", "-o", opts, merged).CombinedOutput(); err != nil {
		testfs.Need(t, "no overlay mount here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", merged).Run() })
	home := filepath.Join(merged, "home")
	t.Setenv("HOME", home)
	// The first lookup of a merged folder marks its upper one (its
	// change time moves): let it settle after that.
	if _, err := os.ReadDir(home); err != nil {
		t.Fatal(err)
	}
	time.Sleep(listingMargin + 100*time.Millisecond)
	for range 2 { // read, then (were it kept) from the kept listing
		if planDenies(t, filepath.Join(home, ".aws")) {
			t.Fatal("~/.aws unreadable before it exists")
		}
	}
	var before, after unix.Stat_t
	unix.Stat(home, &before)
	if err := os.MkdirAll(lower+"/home/.aws", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lower+"/home/.aws/credentials", []byte("SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The plans' lookups left the overlay a negative entry for .aws,
	// which hides the new name from lookups as well: drop it, as memory
	// pressure does.
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("2"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home, ".aws/credentials")); err != nil {
		testfs.Need(t, "this kernel's overlay does not find a name added to its lower layer: %v", err)
	}
	unix.Stat(home, &after)
	if before.Ctim != after.Ctim {
		t.Logf("the merged home's change time moved (%v -> %v): the test covers less", before.Ctim, after.Ctim)
	}
	if !planDenies(t, filepath.Join(home, ".aws")) {
		t.Fatal("~/.aws, added to the overlay's lower layer, is readable in the next plan")
	}
}

// TestListingRemountedAfterOfflineEdit: a file system unmounted, edited
// offline (debugfs, which leaves the folder's change time as it was) and
// mounted again on the same device — the home's device, inode and change
// time as before — has the name it gained unreadable in the next plan.
//
// The test runs in a mount namespace of its own: a namespace another
// program makes meanwhile (a sandbox's: CI runs packages side by side)
// copies the host's mounts, the image's with them, and keeps its file
// system alive past the unmount, so that the remount found it as it was.
func TestListingRemountedAfterOfflineEdit(t *testing.T) {
	if !testfs.InOwnMountNS(t) {
		return
	}
	dev, mnt := testfs.Ext4Image(t)
	debugfs, err := exec.LookPath("debugfs")
	if err != nil {
		testfs.Need(t, "no debugfs: %v", err)
	}
	home := filepath.Join(mnt, "home")
	if err := os.MkdirAll(filepath.Join(home, "staged"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "staged", "credentials"), []byte("SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	time.Sleep(coarseMargin + 100*time.Millisecond)
	for range 2 {
		if planDenies(t, filepath.Join(home, ".aws")) {
			t.Fatal("~/.aws unreadable before it exists")
		}
	}
	var before, after unix.Stat_t
	unix.Stat(home, &before)
	if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
		t.Fatalf("umount: %v %s", err, out)
	}
	// A hard link of the staged folder as .aws, written to the image.
	out, err := exec.Command(debugfs, "-w", "-R", "ln /home/staged /home/.aws", dev).CombinedOutput()
	if err != nil || bytes.Contains(out, []byte("rror")) {
		t.Fatalf("debugfs: %v %s", err, out)
	}
	testfs.Mount(t, dev, mnt)
	unix.Stat(home, &after)
	if b, err := os.ReadFile(filepath.Join(home, ".aws", "credentials")); err != nil || string(b) != "SECRET\n" {
		t.Fatalf("after the offline edit, ~/.aws/credentials reads %q %v", b, err)
	}
	if before.Ctim != after.Ctim || before.Ino != after.Ino || before.Dev != after.Dev {
		t.Logf("the home's status changed across the remount (%v/%d/%d -> %v/%d/%d): the test covers less",
			before.Ctim, before.Ino, before.Dev, after.Ctim, after.Ino, after.Dev)
	}
	if !planDenies(t, filepath.Join(home, ".aws")) {
		t.Fatal("~/.aws, linked in while the file system was unmounted, is readable in the next plan")
	}
}

// TestCarveCaseFoldingHome: in a case-folding home, ~/.aws is found as
// the entry .AWS: no read grant reaches it by the spelling it is listed
// by (the grant would give the secret away), and nothing else of the
// home goes unread.
func TestCarveCaseFoldingHome(t *testing.T) {
	testfs.RequireRoot(t)
	if _, err := os.Stat("/sys/fs/ext4/features/casefold"); err != nil {
		// Not a sandbox feature: a kernel without CONFIG_UNICODE has
		// no case-folding folder to escape through (TestRespell covers
		// the matching by identity).
		t.Skip("this kernel's ext4 does not fold case (no CONFIG_UNICODE)")
	}
	_, mnt := testfs.Ext4Image(t, "-O", "casefold")
	home := filepath.Join(mnt, "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("chattr", "+F", home).CombinedOutput(); err != nil {
		testfs.Need(t, "no case folding here (chattr +F): %v %s", err, out)
	}
	for _, p := range []string{".AWS/credentials", "notes/todo"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(home, p)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, p), []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(home, ".aws/credentials")); err != nil {
		testfs.Need(t, "the home does not fold case: %v", err)
	}
	// A hard link of the secret's folder cannot be made; one of the
	// secret beside it, in the home, can.
	if err := os.Link(filepath.Join(home, ".AWS/credentials"), filepath.Join(home, "creds-link")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	plan, err := Compile(policy.DefaultSandbox(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(plan.DenyRead, filepath.Join(home, ".aws")) {
		t.Fatalf("~/.aws is not unreadable: %v", plan.DenyRead)
	}
	notes := false
	for _, g := range plan.Read {
		for _, secret := range []string{".AWS", ".aws"} {
			p := filepath.Join(home, secret)
			if g.Path == p || within(p, g.Path) || within(g.Path, p) {
				t.Errorf("a read grant of %s reaches the secret as %s", g.Path, secret)
			}
		}
		if g.Path == filepath.Join(home, "notes") {
			notes = true
		}
	}
	if !notes {
		t.Errorf("~/notes is not readable: %v", plan.Read)
	}
}

// TestRespell: an excluded path whose name a folder's listing does not
// hold (a case-folding folder lists .AWS, and a lookup of .aws finds it)
// is matched with the entries by identity. A folder's listing that lacks
// the name stands in for that here: "alias" is a hard link of "stored",
// and the listing holds "stored" alone.
func TestRespell(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"stored", "other"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(n), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(dir, "stored"), filepath.Join(dir, "alias")); err != nil {
		t.Fatal(err)
	}
	names := []string{"other", "stored"}
	got := respell(dir, names, []string{dir + "/alias", dir + "/missing/x", dir + "/other"})
	want := []string{dir + "/alias", dir + "/missing/x", dir + "/other", dir + "/stored"}
	if !slices.Equal(got, want) {
		t.Fatalf("respell = %v, want %v", got, want)
	}
	// Below the folder: the rest of the path goes with the entry's
	// spelling.
	sub := filepath.Join(dir, "sub")
	if err := os.MkdirAll(filepath.Join(sub, "d"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("d", filepath.Join(sub, "D")); err != nil {
		t.Fatal(err)
	}
	// Lstat does not follow D: a link is not the folder it names (a
	// grant of the link would be skipped anyway).
	if got := respell(sub, []string{"d"}, []string{sub + "/D/secret"}); !slices.Equal(got, []string{sub + "/D/secret"}) {
		t.Fatalf("respell through a link = %v", got)
	}
	if got := respell("/", []string{"bin"}, []string{"/nonexistent-x/y"}); !slices.Equal(got, []string{"/nonexistent-x/y"}) {
		t.Fatalf("respell of /: %v", got)
	}
}

// TestRealLater: where an absent unreadable path would be made.
func TestRealLater(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "real/sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// Dangling links: to a file not made yet, to a folder not made yet,
	// and a loop.
	for link, target := range map[string]string{"netrc": "real/netrc", "config": dir + "/real/cfg", "loop": "loop"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	// Looked up, then again from listings kept (the folders settled).
	for _, settled := range []bool{false, true} {
		if settled {
			time.Sleep(coarseMargin + 100*time.Millisecond)
		}
		resolved, lookups := map[string]string{}, newAbsence()
		for _, c := range [][2]string{
			{"real/sub/x", "real/sub/x"},
			{"link/sub/x/y", "real/sub/x/y"}, // through the link
			{"real/none/x", "real/none/x"},
			{"file/x", ""},         // nothing can be made under a file
			{"real/../file/x", ""}, // a ".." is not followed
			{"netrc", "real/netrc"},
			{"config/gh/hosts.yml", "real/cfg/gh/hosts.yml"},
			{"loop/x", ""},
		} {
			want := ""
			if c[1] != "" {
				want = filepath.Join(dir, c[1])
			}
			if got := realLater(dir+"/"+c[0], resolved, lookups); got != want {
				t.Errorf("settled %v: realLater(%s) = %q, want %q", settled, c[0], got, want)
			}
		}
		if settled && !slices.ContainsFunc(slices.Collect(maps.Values(lookups.gone)), func(g bool) bool { return g }) {
			t.Error("no path was said absent from the listings kept")
		}
	}
}
