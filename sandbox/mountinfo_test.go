package sandbox

import (
	"slices"
	"testing"
)

// TestAliasesIn: each path at every other mount of its file system that
// shows it — a bind of a folder elsewhere, of / elsewhere, a btrfs top
// level beside a subvolume — and nowhere else (another device, a bind of
// a folder beside it).
func TestAliasesIn(t *testing.T) {
	mounts := parseMountinfo(`22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 8:1 /home /mnt/hb rw,relatime shared:1 - ext4 /dev/sda1 rw
31 22 8:1 / /host rw,relatime shared:1 - ext4 /dev/sda1 rw
32 22 8:1 /var /mnt/var rw - ext4 /dev/sda1 rw
33 22 0:40 /@home /home rw - btrfs /dev/sdb rw
34 22 0:40 / /top rw - btrfs /dev/sdb rw
35 22 8:1 /srv/with\040space /mnt/sp rw - ext4 /dev/sda1 rw
36 22 8:1 /root/.ssh/id_ed25519 /srv/key rw - ext4 /dev/sda1 rw
`)
	if got := mounts[6].point; got != "/mnt/sp" || mounts[6].root != "/srv/with space" {
		t.Fatalf("escapes: %q %q", got, mounts[6].root)
	}
	got := aliasesIn(mounts, []string{"/home/u/.ssh", "/root/.ssh", "/srv/with space/k"})
	want := [][2]string{
		{"/home/u/.ssh", "/top/@home/u/.ssh"},
		{"/root/.ssh", "/host/root/.ssh"},
		{"/root/.ssh/id_ed25519", "/srv/key"},
		{"/srv/with space/k", "/host/srv/with space/k"},
		{"/srv/with space/k", "/mnt/sp/k"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("aliases:\n got %q\nwant %q", got, want)
	}
	// /home is the btrfs subvolume here (the later mount on the point):
	// ext4's /home, bound at /mnt/hb, is not where /home/u/.ssh is.
	for _, a := range got {
		if a[1] == "/mnt/hb/u/.ssh" {
			t.Errorf("an alias through a mount the path is not on: %q", a)
		}
	}
}
