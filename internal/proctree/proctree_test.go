//go:build linux

package proctree

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
)

func TestChildrenAndServingPid(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	kids := Children(os.Getpid())
	if len(kids) != 1 || kids[0].Pid != cmd.Process.Pid || kids[0].State == "Z" {
		t.Fatalf("children of the test: %+v, want sleep (%d), alive", kids, cmd.Process.Pid)
	}
	// One child that is not unified-exec's init: the process serves itself.
	if got := ServingPid(os.Getpid()); got != os.Getpid() {
		t.Fatalf("ServingPid = %d, want the process itself (%d)", got, os.Getpid())
	}
	if _, ok := Stat("/proc/0/stat"); ok {
		t.Fatal("Stat of a missing task reported ok")
	}
	// The state of the process is its main thread's, which may sleep while
	// the test runs on another: check the parent field, which is stable.
	f, ok := Stat("/proc/self/stat")
	if !ok || len(f) < 2 || f[1] != strconv.Itoa(os.Getppid()) {
		t.Fatalf("Stat of self: %v %v, want the parent (%d) second", f, ok, os.Getppid())
	}
}
