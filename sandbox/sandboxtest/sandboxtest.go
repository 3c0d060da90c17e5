// Package sandboxtest helps tests that need the kernel's sandbox features.
//
// # Skips that CI can forbid
//
// [Require], [RequireLandlockABI], [RequireSeccomp] and [RequireNamespaces]
// skip the test, naming what the host lacks. When the environment sets
// UNIFIED_EXEC_REQUIRE_SANDBOX=1 (as CI does on hosts known to have it
// all), they fail the test instead, so a sandbox that silently went
// missing cannot turn the suite green.
//
// # Running a command under a plan
//
// Landlock and seccomp cannot be undone, so a test never applies them to
// itself: [Run] re-executes the test binary, which (thanks to
// [HelperMain] at the top of TestMain) reads the plan from an inherited
// pipe, calls [sandbox.Apply] and executes /bin/sh -c CMD.
//
//	func TestMain(m *testing.M) {
//		sandboxtest.HelperMain()
//		os.Exit(m.Run())
//	}
package sandboxtest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/policy"
	"github.com/unified-exec/unified-exec/sandbox"
)

// RequireEnv is the variable that turns skips into failures.
const RequireEnv = "UNIFIED_EXEC_REQUIRE_SANDBOX"

// helperEnv marks a re-executed test binary as a helper.
const helperEnv = "SANDBOXTEST_HELPER"

func skip(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s (%s=1 forbids skipping)", msg, RequireEnv)
	}
	t.Skip(msg)
}

// Require needs everything [sandbox.Apply] needs: Landlock and seccomp.
func Require(t testing.TB) {
	t.Helper()
	st := sandbox.HostStatus()
	p := sandbox.Plan{Mode: policy.ModeReadOnly}
	if m := st.Missing(p); len(m) > 0 {
		skip(t, "sandbox unavailable: missing %v", m)
	}
}

// RequireLandlockABI needs a kernel with Landlock ABI n or newer.
func RequireLandlockABI(t testing.TB, n int) {
	t.Helper()
	if abi := sandbox.HostStatus().LandlockABI; abi < n {
		skip(t, "needs Landlock ABI ≥ %d, this kernel offers %d", n, abi)
	}
}

// RequireSeccomp needs a build and host that load seccomp filters.
func RequireSeccomp(t testing.TB) {
	t.Helper()
	if !sandbox.HostStatus().Seccomp {
		skip(t, "needs seccomp: this build has none (built without cgo, or not Linux)")
	}
}

// RequireNamespaces needs new PID and mount namespaces for a child.
func RequireNamespaces(t testing.TB) {
	t.Helper()
	if st := sandbox.HostStatus(); !st.Namespaces {
		skip(t, "needs PID and mount namespaces: %s", st.NamespaceErr)
	}
}

// Options for [Run].
type Options struct {
	// Dir is the command's working directory.
	Dir string
	// Env is added to the test's environment.
	Env []string
	// Isolate starts the helper in new PID and mount namespaces, so that
	// Apply enforces protected paths with mounts instead of carving.
	Isolate bool
}

// Result of [Run].
type Result struct {
	Output string // stdout and stderr, interleaved
	Code   int    // exit code; 128+N for death by signal N
}

// Run runs /bin/sh -c cmd under plan in a re-executed test binary and
// waits (at most a minute) for it. The test binary's TestMain must call
// [HelperMain] first.
func Run(t testing.TB, plan sandbox.Plan, cmd string, o Options) Result {
	t.Helper()
	payload, err := plan.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Dir = o.Dir
	c.Env = append(append(os.Environ(), o.Env...), helperEnv+"=1", "SANDBOXTEST_CMD="+cmd)
	c.ExtraFiles = []*os.File{r}
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	c.WaitDelay = time.Second
	if o.Isolate {
		attr, err := isolated()
		if err != nil {
			w.Close()
			t.Fatal(err)
		}
		c.SysProcAttr = attr
	}
	if err := c.Start(); err != nil {
		w.Close()
		t.Fatalf("starting the helper: %v", err)
	}
	w.Write(payload)
	w.Close()
	timer := time.AfterFunc(time.Minute, func() { c.Process.Kill() })
	defer timer.Stop()
	err = c.Wait()
	res := Result{Output: out.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.Code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Code = 128 + int(ws.Signal())
		}
	default:
		t.Fatalf("running the helper: %v", err)
	}
	return res
}

// HelperMain returns at once in a normal test binary. In one started by
// [Run], it reads the plan from fd 3, applies it and executes the command;
// it never returns: a failed Apply exits 126 with
// "unified-exec: sandbox: ERROR" on stderr, like the real helper.
func HelperMain() {
	if os.Getenv(helperEnv) != "1" {
		return
	}
	payload, err := io.ReadAll(os.NewFile(3, "plan"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "sandboxtest helper: reading the plan: %v\n", err)
		os.Exit(125)
	}
	if err := sandbox.Apply(payload); err != nil {
		fmt.Fprintf(os.Stderr, "unified-exec: sandbox: %v\n", err)
		os.Exit(126)
	}
	cmd := os.Getenv("SANDBOXTEST_CMD")
	env := os.Environ()
	err = syscall.Exec("/bin/sh", []string{"sh", "-c", cmd}, env)
	fmt.Fprintf(os.Stderr, "sandboxtest helper: exec /bin/sh: %v\n", err)
	os.Exit(127)
}
