package orchestrator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSecretMadeBetweenCalls: a secret store the host makes between two
// sandboxed calls — after the plans had kept their listing of the home
// (see sandbox.dirNames), just after a call, made in place or moved in —
// is unreadable from the next call.
func TestSecretMadeBetweenCalls(t *testing.T) {
	requireSandbox(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	call := sandboxedCalls(t)
	for _, c := range []struct {
		name, path string
		make       func(path string) error
	}{
		{"made in place", ".aws/credentials", func(p string) error {
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				return err
			}
			return os.WriteFile(p, []byte("SECRET-made\n"), 0o600)
		}},
		{"moved in", ".ssh/id_rsa", func(p string) error {
			staged := filepath.Join(home, "staged")
			if err := os.MkdirAll(staged, 0o700); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(staged, "id_rsa"), []byte("SECRET-moved\n"), 0o600); err != nil {
				return err
			}
			return os.Rename(staged, filepath.Dir(p))
		}},
		{"a file of the home", ".netrc", func(p string) error {
			return os.WriteFile(p, []byte("SECRET-netrc\n"), 0o600)
		}},
	} {
		call("true")
		time.Sleep(150 * time.Millisecond) // the home settles: the next plan keeps its listing
		call("true")
		path := filepath.Join(home, c.path)
		if err := c.make(path); err != nil {
			t.Fatal(err)
		}
		if out := call("cat " + path); strings.Contains(out, "SECRET") {
			t.Errorf("%s: %s, made after the last call, was read by the next: %q", c.name, c.path, out)
		}
	}
}

// sandboxedCalls runs commands through a workspace-write orchestrator
// that never asks, and returns their output.
func sandboxedCalls(t *testing.T) func(cmd string) string {
	f := newFixture(t, "never", "[sandbox]\nmode = \"workspace-write\"\n")
	return func(cmd string) string {
		t.Helper()
		r, err := f.exec(t, cmd, false, "")
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		return r.Output
	}
}
