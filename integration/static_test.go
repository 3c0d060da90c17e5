//go:build linux

package integration

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// TestProgramsAreStatic: scripts/build links both programs statically
// where the C libraries are there (a wrapped command's start loads no
// shared library: 0.82 of the dynamic binary's time on a 2-CPU virtual
// machine), with the pure-Go user lookup whose misses getent answers and
// the pure-Go resolver; a host without the static libraries gets the
// ordinary build (skipped here then, a failure where CI requires all).
func TestProgramsAreStatic(t *testing.T) {
	for _, lib := range []string{"libc.a", "libseccomp.a"} {
		out, err := exec.Command("gcc", "-print-file-name="+lib).Output()
		if p := strings.TrimSpace(string(out)); err != nil || !filepath.IsAbs(p) {
			msg := "no " + lib + " here (libc6-dev, libseccomp-dev): scripts/build links dynamically"
			if os.Getenv("UNIFIED_EXEC_REQUIRE_SANDBOX") == "1" {
				t.Fatal(msg + " (UNIFIED_EXEC_REQUIRE_SANDBOX=1 forbids skipping)")
			}
			t.Skip(msg)
		}
	}
	for _, name := range []string{"unified-exec", "unified-exec-mcp"} {
		path := filepath.Join(filepath.Dir(binary), name)
		f, err := elf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		libs, err := f.ImportedLibraries()
		interp := f.Section(".interp")
		f.Close()
		if err != nil || len(libs) > 0 || interp != nil {
			t.Errorf("%s is linked dynamically (needs %v, %v)", name, libs, err)
		}
		info, err := buildInfo(path)
		if err != nil {
			t.Fatal(err)
		}
		tags := ""
		for _, s := range info.Settings {
			if s.Key == "-tags" {
				tags = s.Value
			}
		}
		for _, want := range []string{"osusergo", "netgo"} {
			if !strings.Contains(","+tags+",", ","+want+",") {
				t.Errorf("%s built without %s (tags %q)", name, want, tags)
			}
		}
	}
}

func buildInfo(path string) (*debug.BuildInfo, error) {
	out, err := exec.Command("go", "version", "-m", path).Output()
	if err != nil {
		return nil, err
	}
	// The lines after the path are those of debug.BuildInfo.String.
	_, rest, _ := strings.Cut(string(out), "\n")
	var lines []string
	for _, l := range strings.Split(rest, "\n") {
		lines = append(lines, strings.TrimPrefix(l, "\t"))
	}
	return debug.ParseBuildInfo(strings.Join(lines, "\n"))
}
