package orchestrator

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/policy"
	"github.com/unified-exec/unified-exec/sandbox"
	"github.com/unified-exec/unified-exec/unifiedexec"
)

// TestThreadGrantSwappedToSymlink: on the thread sandbox (the default
// way sessions start), a directory the plan grants by name — the
// workspace is carved for reading around an unreadable file in it — is
// swapped for a link to the home between the plan and the command's
// start, as another session running meanwhile can do. The command must
// not read what the link points to.
func TestThreadGrantSwappedToSymlink(t *testing.T) {
	requireSandbox(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home, ws := root+"/home", root+"/home/project"
	for _, d := range []string{ws + "/src", home + "/.ssh"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range map[string]string{home + "/.ssh/id_rsa": "PRIVATE KEY\n", ws + "/secret.env": "TOKEN\n", ws + "/src/a.txt": "a\n"} {
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	t.Setenv("TMPDIR", "")
	sp := policy.DefaultSandbox()
	sp.ExcludeSlashTmp = true
	sp.DenyRead = append(sp.DenyRead, ws+"/secret.env")
	plan, err := sandbox.Compile(sp, ws)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := plan.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(ws+"/src", ws+"/src-old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(home, ws+"/src"); err != nil {
		t.Fatal(err)
	}
	m := unifiedexec.New(unifiedexec.Config{Workspace: ws})
	defer m.Close()
	if m.Strategy() != unifiedexec.StrategyThread {
		t.Fatalf("sessions start by %v here, want the thread sandbox (the program's namespace is entered in TestMain)", m.Strategy())
	}
	sb := &unifiedexec.Sandbox{Payload: payload, Thread: sandbox.ApplyThread}
	for _, c := range []struct{ cmd, want string }{
		{"cat " + home + "/.ssh/id_rsa", ""},
		{"cat " + ws + "/src/.ssh/id_rsa", ""},
		{"cat " + ws + "/src-old/a.txt", "a"},
	} {
		r, err := m.Exec(context.Background(), unifiedexec.ExecRequest{Cmd: c.cmd, Login: noLogin, Sandbox: sb, Yield: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(r.Output, "PRIVATE KEY") {
			t.Fatalf("%q read the key through the swapped link: %q", c.cmd, r.Output)
		}
		if c.want != "" && (r.ExitCode == nil || *r.ExitCode != 0 || !strings.Contains(r.Output, c.want)) {
			t.Fatalf("%q: %q (exit %v), want %q", c.cmd, r.Output, r.ExitCode, c.want)
		}
	}
}
