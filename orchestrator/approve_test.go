package orchestrator

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unified-exec/unified-exec/approval"
	"github.com/unified-exec/unified-exec/unifiedexec"
)

// probe prints 1 inside the sandbox (seccomp sets no_new_privs) and 0
// outside it.
const probe = "grep -c NoNewPrivs:.1 /proc/self/status"

// paths runs one command through Exec (the MCP server's path) and Run
// (the wrapper's), returning its output and any error.
var paths = []struct {
	name string
	run  func(t *testing.T, f *fixture, cmd string) (string, error)
}{
	{"exec", func(t *testing.T, f *fixture, cmd string) (string, error) {
		r, err := f.exec(t, cmd, false, "")
		if err != nil {
			return "", err
		}
		return r.Output, nil
	}},
	{"run", func(t *testing.T, f *fixture, cmd string) (string, error) {
		var out bytes.Buffer
		w, done := runOutput(t, &out)
		_, err := f.o.Run(context.Background(), RunRequest{Argv: []string{"/bin/bash", "-c", cmd}, Stdout: w, Stderr: w})
		done()
		return out.String(), err
	}},
}

// ranUnsandboxed reports whether output holds the probe's line from a run
// without the sandbox.
func ranUnsandboxed(output string) bool {
	for _, l := range strings.Split(output, "\n") {
		if strings.TrimSpace(l) == "0" {
			return true
		}
	}
	return false
}

func saysUnsandboxed(q approval.Question) bool {
	return strings.Contains(strings.ToLower(q.Text()), "without the sandbox")
}

// TestApprovedRunNotRetriedUnasked: a command approved to run in the
// sandbox that prints "Permission denied" itself is not run again without
// the sandbox unless a second question, saying so, is approved.
func TestApprovedRunNotRetriedUnasked(t *testing.T) {
	cmd := probe + "; echo 'x: Permission denied' >&2; exit 1"
	modes := []struct{ name, mode, extra string }{
		{"untrusted", "untrusted", ""},
		{"on-failure prompt rule", "on-failure", "[[rule]]\npattern = [\"grep\"]\ndecision = \"prompt\"\n"},
	}
	for _, m := range modes {
		for _, p := range paths {
			t.Run(m.name+"/"+p.name, func(t *testing.T) {
				f := newFixture(t, m.mode, m.extra, approval.ApproveOnce, approval.Deny)
				out, err := p.run(t, f, cmd)
				if err != nil {
					t.Fatal(err)
				}
				asked := f.p.Asked()
				if len(asked) == 0 || asked[0].Kind != approval.KindApprove || saysUnsandboxed(asked[0]) {
					t.Fatalf("first question: %+v", asked)
				}
				for _, q := range asked[1:] {
					if q.Kind != approval.KindRetryUnsandboxed || !saysUnsandboxed(q) {
						t.Fatalf("later question does not say it runs without the sandbox: %q", q.Text())
					}
				}
				if ranUnsandboxed(out) {
					t.Fatalf("ran without the sandbox after a denied (or no) second question; asked %d: %q", len(asked), out)
				}
			})
		}
	}
}

// outside is a directory the sandbox may not write (the fixture's policy
// excludes /tmp): writing there is a real denial.
func outside(t *testing.T) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "outside")
	os.MkdirAll(d, 0o755)
	d, _ = filepath.EvalSymlinks(d)
	return d
}

const noTmp = "[sandbox]\nexclude_slash_tmp = true\nexclude_tmpdir_env_var = true\n"

// TestSessionApprovalDoesNotCoverUnsandboxed: "approve for the session" of
// the sandboxed run is not an approval to run without the sandbox.
func TestSessionApprovalDoesNotCoverUnsandboxed(t *testing.T) {
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			target := outside(t)
			f := newFixture(t, "untrusted", noTmp, approval.ApproveForSession, approval.Deny, approval.Deny)
			cmd := probe + "; tee -a " + target + "/x </dev/null"
			for i := range 2 {
				out, err := p.run(t, f, cmd)
				if err != nil {
					t.Fatal(err)
				}
				if ranUnsandboxed(out) {
					t.Fatalf("run %d: ran without the sandbox: %q", i, out)
				}
			}
			if _, err := os.Stat(target + "/x"); err == nil {
				t.Fatal("the command ran without the sandbox")
			}
			var kinds []string
			for _, q := range f.p.Asked() {
				kinds = append(kinds, q.Kind)
				if q.Kind == approval.KindRetryUnsandboxed && !saysUnsandboxed(q) {
					t.Errorf("retry question: %q", q.Text())
				}
			}
			want := []string{approval.KindApprove, approval.KindRetryUnsandboxed, approval.KindRetryUnsandboxed}
			if strings.Join(kinds, ",") != strings.Join(want, ",") {
				t.Fatalf("questions %v, want %v", kinds, want)
			}
		})
	}
}

// TestUnsandboxedSessionApprovalIsExact: "approve for the session" of the
// question to run without the sandbox is remembered for that exact
// command only.
func TestUnsandboxedSessionApprovalIsExact(t *testing.T) {
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			target := outside(t)
			f := newFixture(t, "on-failure", noTmp, approval.ApproveForSession, approval.Deny)
			a := probe + "; tee -a " + target + "/a </dev/null"
			for i := range 2 {
				out, err := p.run(t, f, a)
				if err != nil {
					t.Fatal(err)
				}
				if !ranUnsandboxed(out) {
					t.Fatalf("run %d of the approved command did not run without the sandbox: %q", i, out)
				}
			}
			if asked := f.p.Asked(); len(asked) != 1 || asked[0].Kind != approval.KindRetryUnsandboxed || !saysUnsandboxed(asked[0]) {
				t.Fatalf("questions: %+v", asked)
			}
			out, err := p.run(t, f, probe+"; tee -a "+target+"/b </dev/null")
			if err != nil {
				t.Fatal(err)
			}
			if asked := f.p.Asked(); len(asked) != 2 || ranUnsandboxed(out) {
				t.Fatalf("another command: asked %d, output %q", len(asked), out)
			}
			if _, err := os.Stat(target + "/b"); err == nil {
				t.Fatal("another command ran without the sandbox")
			}
		})
	}
}

// TestRuleSandboxNotWidenedByOtherCommands: an allow rule's sandbox =
// "danger-full-access" for npm install lifts the sandbox for npm install
// alone, not for a line that also does something else.
func TestRuleSandboxNotWidenedByOtherCommands(t *testing.T) {
	bin := t.TempDir()
	// A stand-in npm that reports whether it runs in the sandbox.
	if err := os.WriteFile(filepath.Join(bin, "npm"), []byte("#!/bin/sh\n"+probe+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	extra := "[env]\nset = { PATH = \"" + bin + ":/usr/bin:/bin\" }\n" +
		"[[rule]]\npattern = [\"npm\", \"install\"]\ndecision = \"allow\"\nsandbox = \"danger-full-access\"\n"
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			f := newFixture(t, "on-request", extra)
			out, err := p.run(t, f, "npm install")
			if err != nil || !ranUnsandboxed(out) {
				t.Fatalf("npm install alone: %v %q", err, out)
			}
			out, err = p.run(t, f, "npm install && cat ~/.ssh/id_rsa")
			if err != nil {
				t.Fatal(err)
			}
			if ranUnsandboxed(out) {
				t.Fatalf("the rule's sandbox covered the whole line: %q", out)
			}
		})
	}
}

// TestShellMustBeListed: the shell argument is a shell of /etc/shells,
// outside the writable roots, that the rules can read.
func TestShellMustBeListed(t *testing.T) {
	f := newFixture(t, "on-request", "[[rule]]\npattern = [\"touch\"]\ndecision = \"forbid\"\n")
	fake := filepath.Join(f.ws, "bash")
	marker := filepath.Join(f.ws, "fake-ran")
	os.WriteFile(fake, []byte("#!/bin/sh\necho ran > "+marker+"\n"), 0o755)
	cases := []struct {
		name, shell, want string
	}{
		{"workspace file named bash", fake, "/etc/shells"},
		{"not a shell", "/usr/bin/env", "/etc/shells"},
		{"missing", "/bin/nope", "/bin/nope"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.o.Exec(context.Background(), Request{ExecRequest: unifiedexec.ExecRequest{Cmd: "ls", Shell: c.shell, Login: noLogin}})
			var refused *RefusedError
			if !errors.As(err, &refused) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.shell) {
				t.Fatalf("want a refusal naming %s and %q, got %v", c.shell, c.want, err)
			}
		})
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the workspace's bash ran")
	}
	// rbash is listed; the rules must see its script, or it is refused.
	if _, err := os.Stat("/bin/rbash"); err == nil {
		_, err := f.o.Exec(context.Background(), Request{ExecRequest: unifiedexec.ExecRequest{Cmd: "touch made", Shell: "/bin/rbash", Login: noLogin}})
		if err == nil {
			t.Fatal("rbash ran a command a forbid rule covers")
		}
		if _, err := os.Stat(filepath.Join(f.ws, "made")); err == nil {
			t.Fatal("rbash ran touch")
		}
	}
	// A listed shell by name or path runs.
	for _, sh := range []string{"/bin/sh", "sh", "/bin/bash"} {
		r, err := f.o.Exec(context.Background(), Request{ExecRequest: unifiedexec.ExecRequest{Cmd: "echo ok", Shell: sh, Login: noLogin}})
		if err != nil || *r.ExitCode != 0 {
			t.Fatalf("shell %s: %v %+v", sh, err, r)
		}
	}
}

// TestShellShownInQuestion: every question names the shell.
func TestShellShownInQuestion(t *testing.T) {
	f := newFixture(t, "untrusted", "", approval.Deny)
	f.o.Exec(context.Background(), Request{ExecRequest: unifiedexec.ExecRequest{Cmd: "touch x", Shell: "/bin/sh", Login: noLogin}})
	asked := f.p.Asked()
	if len(asked) != 1 || !strings.Contains(asked[0].Text(), "/bin/sh") {
		t.Fatalf("questions: %+v", asked)
	}
}

// TestQuestionEscapesControls: what a question quotes (command,
// justification, output) reaches the person with its control characters
// escaped.
func TestQuestionEscapesControls(t *testing.T) {
	f := newFixture(t, "on-request", "", approval.Deny)
	f.exec(t, "echo \x1b[2J\x1b[Hharmless\x07", true, "needs \x1b]0;title\x07 this\r")
	asked := f.p.Asked()
	if len(asked) != 1 {
		t.Fatalf("questions: %+v", asked)
	}
	txt := asked[0].Text()
	checkEscaped(t, txt)
	if !strings.Contains(txt, `\x1b[2J`) || !strings.Contains(txt, `\x1b]0;title\x07`) {
		t.Fatalf("escapes not shown: %q", txt)
	}
}

func checkEscaped(t *testing.T, txt string) {
	t.Helper()
	for _, r := range txt {
		if (r < 0x20 && r != '\n') || (r >= 0x7f && r <= 0x9f) {
			t.Fatalf("control character %U in %q", r, txt)
		}
	}
}

// TestApprovedRetryRuns: approving the question to run without the
// sandbox runs the command again without it, on both paths.
func TestApprovedRetryRuns(t *testing.T) {
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			// A real denial: a folder the user may write, outside the
			// writable roots.
			cmd := probe + "; touch " + outside(t) + "/x"
			f := newFixture(t, "untrusted", "[sandbox]\nexclude_slash_tmp = true\n", approval.ApproveOnce, approval.ApproveOnce)
			out, err := p.run(t, f, cmd)
			if err != nil {
				t.Fatal(err)
			}
			asked := f.p.Asked()
			if len(asked) != 2 || asked[1].Kind != approval.KindRetryUnsandboxed || !saysUnsandboxed(asked[1]) {
				t.Fatalf("questions: %+v", asked)
			}
			if !ranUnsandboxed(out) {
				t.Fatalf("the approved retry did not run without the sandbox: %q", out)
			}
		})
	}
}

// TestShellInWritableRoot: a shell listed in /etc/shells is refused when
// it (or the file it resolves to) lies where commands may write.
func TestShellInWritableRoot(t *testing.T) {
	f := newFixture(t, "on-request", "")
	fake := filepath.Join(f.ws, "bash")
	if err := os.Symlink("/bin/bash", fake); err != nil {
		t.Fatal(err)
	}
	list := filepath.Join(t.TempDir(), "shells")
	os.WriteFile(list, []byte("# shells\n/bin/bash\n"+fake+"\n"), 0o644)
	old := etcShells
	etcShells = list
	t.Cleanup(func() { etcShells = old })
	_, err := f.o.Exec(context.Background(), Request{ExecRequest: unifiedexec.ExecRequest{Cmd: "true", Shell: fake, Login: noLogin}})
	if err == nil || !strings.Contains(err.Error(), "commands may write") || !strings.Contains(err.Error(), "/bin/bash") {
		t.Fatalf("want a refusal naming the writable root and the accepted shells, got %v", err)
	}
}

// TestShellRefusedMessages: rbash (listed, not read by the rules) and an
// unlisted program are refused saying why and what to use.
func TestShellRefusedMessages(t *testing.T) {
	f := newFixture(t, "on-request", "")
	list := filepath.Join(t.TempDir(), "shells")
	os.WriteFile(list, []byte("/bin/sh\n/bin/bash\n/bin/rbash\n"), 0o644)
	old := etcShells
	etcShells = list
	t.Cleanup(func() { etcShells = old })
	for shell, want := range map[string]string{
		"/bin/rbash":   "cannot be read by the policy's rules",
		"rbash":        "cannot be read by the policy's rules",
		"/usr/bin/env": "is not a shell listed in " + list,
		"./bash":       "is not a shell listed in",
	} {
		_, err := f.o.Exec(context.Background(), Request{ExecRequest: unifiedexec.ExecRequest{Cmd: "true", Shell: shell, Login: noLogin}})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "use one of /bin/sh, /bin/bash") {
			t.Errorf("%s: got %v", shell, err)
		}
	}
}

// TestWrapShellLine: the wrapper runs a shell line only with a listed
// shell; a workspace file named bash is refused.
func TestWrapShellLine(t *testing.T) {
	f := newFixture(t, "on-request", "")
	marker := filepath.Join(f.ws, "fake-ran")
	os.WriteFile(filepath.Join(f.ws, "bash"), []byte("#!/bin/sh\necho ran > "+marker+"\n"), 0o755)
	for _, argv := range [][]string{{"./bash", "-c", "ls"}, {filepath.Join(f.ws, "bash"), "-c", "ls"}} {
		_, err := f.o.Run(context.Background(), RunRequest{Argv: argv})
		var refused *RefusedError
		if !errors.As(err, &refused) || !strings.Contains(err.Error(), "/etc/shells") {
			t.Fatalf("%q: want a refusal, got %v", argv, err)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the workspace's bash ran")
	}
	var out bytes.Buffer
	w, done := runOutput(t, &out)
	code, err := f.o.Run(context.Background(), RunRequest{Argv: []string{"bash", "-c", "echo ok"}, Stdout: w, Stderr: w})
	done()
	if err != nil || code != 0 || strings.TrimSpace(out.String()) != "ok" {
		t.Fatalf("bash -c: %d %v %q", code, err, out.String())
	}
}
