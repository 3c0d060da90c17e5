//go:build linux

package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// allowlistPolicy writes the embedded policy with [network] mode =
// "allowlist" to a file of dir, and returns its path.
func allowlistPolicy(t *testing.T, dir string) string {
	t.Helper()
	out, err := exec.Command(binary, "policy", "show").Output()
	if err != nil {
		t.Fatalf("policy show: %v", err)
	}
	network := bytes.Index(out, []byte("\n[network]\n"))
	if network < 0 {
		t.Fatalf("policy show has no [network] table:\n%s", out)
	}
	mode := bytes.Index(out[network:], []byte("\nmode = \"off\"\n"))
	if mode < 0 {
		t.Fatalf("the [network] table of policy show has no mode = \"off\":\n%s", out[network:])
	}
	at := network + mode
	pol := append(append(append([]byte{}, out[:at]...), "\nmode = \"allowlist\"\n"...), out[at+len("\nmode = \"off\"\n"):]...)
	path := filepath.Join(dir, "allowlist.toml")
	if err := os.WriteFile(path, pol, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestWrapHandsOverForEgress: unified-exec carries no egress proxy
// (scripts/build), so a command whose policy needs one is run by
// unified-exec-mcp, started in its stead — by the relay once the program
// has ended, or before any namespace without the relay — as if the user
// had started it: the command's input, output, error output and exit code
// are the same, the proxy is there (HTTP_PROXY), and nothing of the first
// program is left (its cgroup). A policy without the allowlist is not
// handed over: the relay starts once.
func TestWrapHandsOverForEgress(t *testing.T) {
	requireSandbox(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.Mkdir(ws, 0o755)
	pol := allowlistPolicy(t, dir)
	for _, env := range relays {
		cmd := exec.Command(binary, "--policy", pol, "--workspace", ws, "--", "sh", "-c",
			`read line; echo "got $line"; echo "proxy ${HTTP_PROXY:-none}"; echo oops >&2; exit 7`)
		cmd.Env = append(os.Environ(), "UNIFIED_EXEC_TRACE=1")
		if env != "" {
			cmd.Env = append(cmd.Env, env)
		}
		cmd.Stdin = strings.NewReader("typed\n")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != 7 {
			t.Errorf("%q: exit code %d, want the command's 7; stderr:\n%s", env, code, stderr.String())
		}
		if !strings.Contains(stdout.String(), "got typed\n") || !strings.Contains(stdout.String(), "proxy http://127.0.0.1:") {
			t.Errorf("%q: stdout %q, want the input read and the egress proxy in HTTP_PROXY", env, stdout.String())
		}
		if strings.Contains(stdout.String(), "oops") || !strings.Contains(stderr.String(), "oops\n") {
			t.Errorf("%q: stderr not kept apart: stdout %q, stderr %q", env, stdout.String(), stderr.String())
		}
		if env == "" {
			if n := strings.Count(stderr.String(), " relay: start\n"); n != 2 {
				t.Errorf("the relay started %d times, want 2 (unified-exec's, then unified-exec-mcp's):\n%s", n, stderr.String())
			}
		}
		if left, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/*/unified-exec-%d-*", cmd.Process.Pid)); len(left) > 0 {
			t.Errorf("%q: cgroups left: %v", env, left)
		}
	}
	cmd := exec.Command(binary, "--workspace", ws, "--", "true")
	cmd.Env = append(os.Environ(), "UNIFIED_EXEC_TRACE=1")
	out, err := cmd.CombinedOutput()
	if n := strings.Count(string(out), " relay: start\n"); err != nil || n != 1 {
		t.Errorf("the default policy: %v, the relay started %d times, want once:\n%s", err, n, out)
	}
}

// TestWrapHandOverNeedsTheServer: without unified-exec-mcp next to it,
// unified-exec refuses a command whose policy needs the egress proxy,
// saying what to build, and runs none.
func TestWrapHandOverNeedsTheServer(t *testing.T) {
	requireSandbox(t)
	dir := t.TempDir()
	alone := filepath.Join(dir, "unified-exec")
	data, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	pol := allowlistPolicy(t, dir)
	mark := filepath.Join(dir, "ran")
	for _, env := range relays {
		cmd := exec.Command(alone, "--policy", pol, "--workspace", dir, "--", "touch", mark)
		if env != "" {
			cmd.Env = append(os.Environ(), env)
		}
		out, _ := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 125 || !strings.Contains(string(out), "unified-exec-mcp") || !strings.Contains(string(out), "scripts/install") {
			t.Errorf("%q: exit code %d, output %q; want 125 and how to build unified-exec-mcp", env, code, out)
		}
		if _, err := os.Stat(mark); err == nil {
			t.Fatalf("%q: the command ran", env)
		}
	}
}

// TestWrapProgramHoldsNoHandOverPipe: once the program has decided to run
// its command itself, it holds no pipe to the relay but the relay's
// standard ones: a command that reached a hand-over pipe (through
// /proc/1/fd) could have the relay run it again in unified-exec-mcp.
func TestWrapProgramHoldsNoHandOverPipe(t *testing.T) {
	requireSandbox(t)
	{
		// The C relay's: the Go one has no hand-over pipe.
		cmd := exec.Command(binary, "--workspace", t.TempDir(), "--", "sleep", "30")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		relay := cmd.Process.Pid
		var program int
		waitFor(t, func() bool {
			kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", relay, relay))
			if _, err := fmt.Sscan(string(kids), &program); err != nil {
				return false
			}
			// The command runs: the decision is made.
			tree, _ := exec.Command("pgrep", "-f", "-P", fmt.Sprint(program), "^sleep 30$").Output()
			grand, _ := exec.Command("pgrep", "-f", "^sleep 30$").Output()
			return len(tree) > 0 || len(grand) > 0
		})
		pipes := func(pid int) map[string]int {
			m := map[string]int{}
			fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
			for _, fd := range fds {
				if fd.Name() == "0" || fd.Name() == "1" || fd.Name() == "2" {
					continue
				}
				if to, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && strings.HasPrefix(to, "pipe:") {
					m[to]++
				}
			}
			return m
		}
		// Pipes this test inherited (and so the wrapper) are not the relay's.
		inherited, mine := pipes(os.Getpid()), pipes(program)
		for p := range pipes(relay) {
			if mine[p] > 0 && inherited[p] == 0 {
				t.Errorf("the program (pid %d) still holds %s, which the relay (pid %d) holds too", program, p, relay)
			}
		}
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}
}

// TestWrapHandOverPolicyReadOnce (red team 11): a policy that would not
// read the same again (a pipe, /dev/stdin, a link) is refused for a
// command that is handed over, which would otherwise run under what
// unified-exec-mcp read the second time: the empty policy of a drained
// pipe, which dropped the rules and the read-only sandbox.
func TestWrapHandOverPolicyReadOnce(t *testing.T) {
	requireSandbox(t)
	dir := t.TempDir()
	pol := allowlistPolicy(t, dir)
	link := filepath.Join(dir, "link.toml")
	if err := os.Symlink(pol, link); err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(dir, "ran")
	for _, c := range []struct{ name, script string }{
		{"pipe", `exec "$0" --policy <(cat "$1") --workspace "$2" -- touch "$3"`},
		{"stdin", `exec "$0" --policy /dev/stdin --workspace "$2" -- touch "$3" < "$1"`},
		{"link", `exec "$0" --policy "$4" --workspace "$2" -- touch "$3"`},
	} {
		for _, env := range relays {
			cmd := exec.Command("bash", "-c", c.script, binary, pol, dir, mark, link)
			if env != "" {
				cmd.Env = append(os.Environ(), env)
			}
			out, _ := cmd.CombinedOutput()
			if code := cmd.ProcessState.ExitCode(); code != 125 || !strings.Contains(string(out), "give a regular file") {
				t.Errorf("%s %q: exit code %d, output %q; want 125 and why", c.name, env, code, out)
			}
			if _, err := os.Stat(mark); err == nil {
				t.Fatalf("%s %q: the command ran", c.name, env)
			}
		}
	}
}

// TestWrapHandOverSignalState (red team 11): unified-exec-mcp, started in
// a hand-over, starts with the signal dispositions and mask the wrapper was
// started with, as its relay shows while the command runs: the same as
// unified-exec's own relay without a hand-over. (The Go runtime, which
// starts in the relay for the hand-over, turned an ignored SIGPIPE into
// the default and unblocked signals.)
func TestWrapHandOverSignalState(t *testing.T) {
	requireSandbox(t)
	dir := t.TempDir()
	pol := allowlistPolicy(t, dir)
	state := "signal.signal(signal.SIGPIPE, signal.SIG_IGN)\nsignal.signal(signal.SIGXFSZ, signal.SIG_IGN)\nsignal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGWINCH})"
	relayState := func(policy ...string) string {
		tag := fmt.Sprintf("37.%d", os.Getpid()%1000+len(policy))
		cmd := hostStarted(t, state, "", append(append([]string{binary}, policy...), "--workspace", dir, "--", "sleep", tag)...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			cmd.Process.Kill()
			cmd.Wait()
		}()
		// The command itself (python's own arguments hold the words too).
		waitFor(t, func() bool {
			for _, pid := range procsWith("sleep\x00" + tag) {
				if b, _ := os.ReadFile("/proc/" + pid + "/cmdline"); strings.HasPrefix(string(b), "sleep\x00") {
					return true
				}
			}
			return false
		})
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, l := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(l, "SigIgn:") || strings.HasPrefix(l, "SigBlk:") {
				lines = append(lines, l)
			}
		}
		return strings.Join(lines, " ")
	}
	plain, handed := relayState(), relayState("--policy", pol)
	if plain != handed || !strings.Contains(plain, "SigIgn") {
		t.Errorf("the relay's signal state: without a hand-over %q, with one %q", plain, handed)
	}
}
