package sandbox

import (
	"strings"
	"testing"
)

// FuzzAttribute: never a denial for a run that succeeded or was not
// sandboxed; a file denial always names a path the plan refuses and the
// line it came from; nothing is a denial when the server could do
// nothing either.
func FuzzAttribute(f *testing.F) {
	f.Add(1, "touch: cannot touch '/srv/x': Read-only file system\n", 0)
	f.Add(1, "bash: line 1: /etc/x: Permission denied\n", 0)
	f.Add(7, "curl: (7) Couldn't connect to server\n", 2)
	f.Add(0, "cat: /x: Permission denied\n", 10)
	plan := &Plan{Mode: "workspace-write", WritableRoots: []string{"/work"}, Protected: []string{"/work/.git"}, DenyRead: []string{"/home/u/.ssh"}}
	f.Fuzz(func(t *testing.T, code int, out string, family int) {
		var net NetRefusals
		if family > 0 {
			net.Add(family)
		}
		for _, allow := range []bool{true, false} {
			ev := Evidence{Code: code, Output: out, Plan: plan, Cwd: "/work", Home: "/home/u", Net: net, Allowed: func(string, bool) bool { return allow }}
			d, ok := Attribute(ev)
			if ok && code == 0 {
				t.Fatalf("a denial of a run that exited 0: %+v", d)
			}
			if ok && d.Kind == DeniedFile {
				if !allow {
					t.Fatalf("a file denial the server could not have done either: %+v", d)
				}
				if d.Path == "" || d.Why == "" || d.Line == "" || !strings.Contains(out, strings.TrimSpace(strings.TrimSuffix(d.Line, "…"))) {
					t.Fatalf("a file denial without its path, reason or line: %+v", d)
				}
			}
			ev.Plan = nil
			if _, ok := Attribute(ev); ok {
				t.Fatal("a denial of an unsandboxed run")
			}
		}
	})
}
