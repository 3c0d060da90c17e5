package sandbox

import (
	"path/filepath"
	"strings"
)

// A file system mounted twice (a bind of /home elsewhere, a container's
// host mount, a btrfs top level beside its subvolumes) holds each of its
// files at two paths, and Landlock's rules are paths: deny_read names
// ~/.ssh where the home is, and the same folder through the other mount
// was readable (red team 46 read a key through /home bound at /mnt/hb).
// Each unreadable path is therefore denied at every other path the
// program's mounts give it.

// mountEntry is one line of /proc/self/mountinfo: the file system's
// device, the folder of it the mount shows (root), and where (point).
type mountEntry struct {
	dev, root, point string
	readOnly         bool   // the mount's own options say ro
	fstype           string // after the separator
}

// parseMountinfo reads /proc/self/mountinfo's lines (proc(5)): mount ID,
// parent ID, major:minor, root, mount point, ...; the paths escape a
// space, tab, newline and backslash as octal.
func parseMountinfo(text string) []mountEntry {
	var out []mountEntry
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		e := mountEntry{dev: f[2], root: unescapeMount(f[3]), point: unescapeMount(f[4])}
		if len(f) > 5 {
			e.readOnly = strings.HasPrefix(f[5], "ro,") || f[5] == "ro"
		}
		for i := 6; i+1 < len(f); i++ {
			if f[i] == "-" {
				e.fstype = f[i+1]
				break
			}
		}
		out = append(out, e)
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, ok := octal3(s[i+1 : i+4]); ok {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func octal3(s string) (byte, bool) {
	if len(s) != 3 {
		return 0, false
	}
	v := 0
	for _, c := range s {
		if c < '0' || c > '7' {
			return 0, false
		}
		v = v*8 + int(c-'0')
	}
	return byte(v), v < 256
}

// aliasesIn are the other paths mounts give each of paths (absolute,
// without links): the mount a path lies in is the last one whose point
// holds it (a later mount on the same point hides an earlier one); its
// place in the file system is that mount's root joined with the rest;
// every other mount of the same device whose root holds that place shows
// it too, at its point joined with what is left; one whose root lies in
// it (a bind of ~/.ssh/sub, or of a key: red team 47) shows part of it,
// at its point whole. Each pair is the path to check and the alias: the
// caller checks that both are there and are the same file (a mount above
// one may hide it).
func aliasesIn(mounts []mountEntry, paths []string) [][2]string {
	var out [][2]string
	for _, p := range paths {
		m := -1
		for i, e := range mounts {
			if (p == e.point || within(p, e.point)) && (m < 0 || len(e.point) >= len(mounts[m].point)) {
				m = i
			}
		}
		if m < 0 {
			continue
		}
		place := joinUnder(mounts[m].root, strings.TrimPrefix(p, mounts[m].point))
		for i, e := range mounts {
			switch {
			case i == m || e.dev != mounts[m].dev:
			case place == e.root || within(place, e.root):
				if a := joinUnder(e.point, strings.TrimPrefix(place, e.root)); a != p {
					out = append(out, [2]string{p, a})
				}
			case within(e.root, place):
				out = append(out, [2]string{joinUnder(p, strings.TrimPrefix(e.root, place)), e.point})
			}
		}
	}
	return out
}

// joinUnder is dir joined with rest (a path's tail, "" or "/..."),
// cleaned.
func joinUnder(dir, rest string) string {
	return filepath.Clean(dir + "/" + rest)
}
