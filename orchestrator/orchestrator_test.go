package orchestrator

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/unified-exec/unified-exec/approval"
	"github.com/unified-exec/unified-exec/policy"
	"github.com/unified-exec/unified-exec/ptyrun"
	"github.com/unified-exec/unified-exec/sandbox"
	"github.com/unified-exec/unified-exec/unifiedexec"
)

// ownedOutput is cmd's CombinedOutput, started as a child the tests'
// namespace's orphan reaper leaves alone (ptyrun.RunOwned): started
// otherwise, its exit could be reaped first (CI saw "waitid: no child
// processes").
func ownedOutput(cmd *exec.Cmd) (string, error) {
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	err := ptyrun.RunOwned(cmd)
	return out.String(), err
}

func TestMain(m *testing.M) {
	ptyrun.MaybeRunHelper(sandbox.Apply)
	// As `unified-exec` itself does: sessions then start the default
	// way, forked from a (sandboxed) thread in the program's namespace.
	// Not when fuzzing: the fuzzer's workers talk to it over inherited
	// descriptors that the re-run would not pass on.
	if !slices.ContainsFunc(os.Args, func(a string) bool { return strings.HasPrefix(a, "-test.fuzz") }) {
		ptyrun.EnterNamespace()
	}
	if err := ptyrun.BatchScheduling(true); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func requireSandbox(t *testing.T) {
	t.Helper()
	st := sandbox.HostStatus()
	if st.LandlockABI >= 2 && st.Seccomp && st.Namespaces {
		return
	}
	if os.Getenv("UNIFIED_EXEC_REQUIRE_SANDBOX") == "1" {
		t.Fatalf("sandbox required but unavailable:\n%s", st)
	}
	t.Skipf("sandbox unavailable:\n%s", st)
}

var noLogin = new(bool)

type fixture struct {
	o     *Orchestrator
	p     *approval.Scripted
	ws    string
	audit string
}

func newFixture(t *testing.T, mode string, extra string, answers ...approval.Answer) *fixture {
	t.Helper()
	requireSandbox(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	audit := filepath.Join(dir, "audit.jsonl")
	pol, err := policy.Parse([]byte("[approval]\nmode = \""+mode+"\"\n[audit]\npath = \""+audit+"\"\n"+extra), "test-policy.toml")
	if err != nil {
		t.Fatal(err)
	}
	p := &approval.Scripted{Answers: answers}
	o, err := New(Config{Policy: pol, Workspace: ws, Prompter: p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	return &fixture{o: o, p: p, ws: ws, audit: audit}
}

func (f *fixture) exec(t *testing.T, cmd string, escalate bool, justification string) (*unifiedexec.Response, error) {
	t.Helper()
	return f.o.Exec(context.Background(), Request{
		ExecRequest: unifiedexec.ExecRequest{Cmd: cmd, Login: noLogin},
		Escalate:    escalate, Justification: justification,
	})
}

func (f *fixture) events(t *testing.T) []map[string]any {
	t.Helper()
	fh, err := os.Open(f.audit)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var evs []map[string]any
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		evs = append(evs, m)
	}
	return evs
}

func TestUntrustedAsksForWritesOnly(t *testing.T) {
	f := newFixture(t, "untrusted", "", approval.ApproveOnce)
	r, err := f.exec(t, "ls", false, "")
	if err != nil || *r.ExitCode != 0 || len(f.p.Asked()) != 0 {
		t.Fatalf("ls: %v %+v asked=%d", err, r, len(f.p.Asked()))
	}
	r, err = f.exec(t, "touch made", false, "")
	if err != nil || *r.ExitCode != 0 || len(f.p.Asked()) != 1 {
		t.Fatalf("touch: %v %+v asked=%d", err, r, len(f.p.Asked()))
	}
	if _, err := os.Stat(filepath.Join(f.ws, "made")); err != nil {
		t.Fatal("approved touch did not run")
	}
}

func TestApproveForSession(t *testing.T) {
	f := newFixture(t, "untrusted", "", approval.ApproveForSession, approval.ApproveOnce)
	for i := 0; i < 3; i++ {
		if _, err := f.exec(t, "touch a", false, ""); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(f.p.Asked()); n != 1 {
		t.Fatalf("asked %d times for the same command", n)
	}
	if _, err := f.exec(t, "touch b", false, ""); err != nil {
		t.Fatal(err)
	}
	if n := len(f.p.Asked()); n != 2 {
		t.Fatalf("a different command was not asked (%d)", n)
	}
}

func TestDenyCreatesNothing(t *testing.T) {
	f := newFixture(t, "untrusted", "", approval.Deny)
	_, err := f.exec(t, "touch nope", false, "")
	var refused *RefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("want refusal, got %v", err)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "nope")); err == nil {
		t.Fatal("denied command ran")
	}
}

func TestAbort(t *testing.T) {
	f := newFixture(t, "untrusted", "", approval.Abort)
	_, err := f.exec(t, "touch nope", false, "")
	var refused *RefusedError
	if !errors.As(err, &refused) || !refused.Abort {
		t.Fatalf("want an abort, got %v", err)
	}
}

func TestForbidRuleWithoutAsking(t *testing.T) {
	f := newFixture(t, "on-request", "[[rule]]\npattern = [\"rm\"]\ndecision = \"forbid\"\nreason = \"use git clean\"\n")
	os.WriteFile(filepath.Join(f.ws, "keep"), []byte("x"), 0o644)
	_, err := f.exec(t, "echo hi && rm -f keep", false, "")
	if err == nil || !strings.Contains(err.Error(), "use git clean") {
		t.Fatalf("want forbid with reason, got %v", err)
	}
	if len(f.p.Asked()) != 0 {
		t.Fatal("asked for a forbidden command")
	}
	if _, err := os.Stat(filepath.Join(f.ws, "keep")); err != nil {
		t.Fatal("keep was deleted")
	}
}

func TestOnFailureRetry(t *testing.T) {
	target := filepath.Join(t.TempDir(), "outside")
	os.MkdirAll(target, 0o755)
	target, _ = filepath.EvalSymlinks(target)
	f := newFixture(t, "on-failure", "[sandbox]\nexclude_slash_tmp = true\n", approval.ApproveOnce)
	r, err := f.exec(t, "touch inside", false, "")
	if err != nil || *r.ExitCode != 0 || len(f.p.Asked()) != 0 {
		t.Fatalf("allowed write asked or failed: %v %+v", err, r)
	}
	r, err = f.exec(t, "touch "+target+"/x", false, "")
	if err != nil {
		t.Fatal(err)
	}
	asked := f.p.Asked()
	if len(asked) != 1 || asked[0].Kind != approval.KindRetryUnsandboxed || !strings.Contains(asked[0].Denial, "Read-only file system") {
		t.Fatalf("questions: %+v", asked)
	}
	if *r.ExitCode != 0 || !strings.Contains(strings.Join(r.Notes, "\n"), "without the sandbox") {
		t.Fatalf("retry: %+v", r)
	}
	if _, err := os.Stat(target + "/x"); err != nil {
		t.Fatal("the unsandboxed retry did not run")
	}
	var kinds []string
	for _, ev := range f.events(t) {
		kinds = append(kinds, ev["event"].(string))
	}
	joined := strings.Join(kinds, ",")
	for _, want := range []string{"decision", "spawn", "denial", "retry-question", "retry", "exit"} {
		if !strings.Contains(joined, want) {
			t.Fatalf("audit lacks %s: %s", want, joined)
		}
	}
}

func TestNeverReturnsDenial(t *testing.T) {
	// A folder the user may write, outside the writable roots.
	target, _ := filepath.EvalSymlinks(t.TempDir())
	f := newFixture(t, "never", "[sandbox]\nexclude_slash_tmp = true\n")
	r, err := f.exec(t, "touch "+target+"/ue-never", false, "")
	if err != nil || *r.ExitCode == 0 || len(f.p.Asked()) != 0 {
		t.Fatalf("%v %+v", err, r)
	}
	if !strings.Contains(strings.Join(r.Notes, " "), "sandbox blocked this (writing "+target+"/ue-never (outside the writable roots)") {
		t.Fatalf("no denial note: %v", r.Notes)
	}
	if _, err := f.exec(t, "true", true, "need it"); err == nil || !strings.Contains(err.Error(), "approval mode is never") {
		t.Fatalf("escalation under never: %v", err)
	}
}

func TestEscalationShowsJustification(t *testing.T) {
	f := newFixture(t, "on-request", "", approval.ApproveOnce)
	r, err := f.exec(t, "grep -c NoNewPrivs:.1 /proc/self/status || true", true, "must write /etc/hosts for the test")
	if err != nil {
		t.Fatal(err)
	}
	asked := f.p.Asked()
	if len(asked) != 1 || !strings.Contains(asked[0].Text(), "must write /etc/hosts for the test") {
		t.Fatalf("questions: %+v", asked)
	}
	if strings.TrimSpace(r.Output) != "0" {
		t.Fatalf("escalated command ran sandboxed: %q", r.Output)
	}
}

func TestAuditRequired(t *testing.T) {
	pol := policy.Default()
	pol.Audit = policy.Audit{Path: "/proc/unwritable/audit.log", Required: true}
	_, err := New(Config{Policy: pol, Workspace: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "required = true") {
		t.Fatalf("want a refusal, got %v", err)
	}
}

func TestNoOneToAsk(t *testing.T) {
	requireSandbox(t)
	pol, _ := policy.Parse([]byte("[approval]\nmode = \"untrusted\"\n"), "ci-policy.toml")
	o, err := New(Config{Policy: pol, Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	_, err = o.Exec(context.Background(), Request{ExecRequest: unifiedexec.ExecRequest{Cmd: "touch x", Login: noLogin}})
	if err == nil || !strings.Contains(err.Error(), "ci-policy.toml") || !strings.Contains(err.Error(), "decision = \"allow\"") {
		t.Fatalf("want a refusal naming the policy, got %v", err)
	}
}

// TestUnjudgeableSaysWhy: a line a forbid rule could match once it runs
// is asked under on-request, the question says why, a denial runs
// nothing, and where nobody can be asked the refusal says why too.
func TestUnjudgeableSaysWhy(t *testing.T) {
	rule := "[[rule]]\npattern = [\"rm\", \"-r\"]\ndecision = \"forbid\"\n"
	f := newFixture(t, "on-request", rule, approval.Deny)
	os.WriteFile(filepath.Join(f.ws, "keep"), []byte("x"), 0o644)
	_, err := f.exec(t, "c=$(echo rm); $c -r -f keep", false, "")
	var refused *RefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("want a refusal, got %v", err)
	}
	asked := f.p.Asked()
	if len(asked) != 1 || asked[0].Unjudged == nil || !strings.Contains(asked[0].Text(), "cannot be judged before it runs") {
		t.Fatalf("question: %+v", asked)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "keep")); err != nil {
		t.Fatal("the denied command ran")
	}

	pol, _ := policy.Parse([]byte("[approval]\nmode = \"on-request\"\n"+rule), "ci-policy.toml")
	o, err := New(Config{Policy: pol, Workspace: f.ws, Prompter: approval.DenyPrompter{}})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	_, err = o.Exec(context.Background(), Request{ExecRequest: unifiedexec.ExecRequest{Cmd: "source ./x.sh", Login: noLogin}})
	if err == nil || !strings.Contains(err.Error(), "cannot be judged before it runs") || !strings.Contains(err.Error(), "source") {
		t.Fatalf("want a refusal that says why, got %v", err)
	}
}

// TestGitInitLaterIsProtected: the plan is compiled for every command, so
// a .git that appears after the first command is protected from then on.
func TestGitInitLaterIsProtected(t *testing.T) {
	f := newFixture(t, "on-request", "")
	if r, err := f.exec(t, "true", false, ""); err != nil || *r.ExitCode != 0 {
		t.Fatalf("%v %+v", err, r)
	}
	if err := os.MkdirAll(filepath.Join(f.ws, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := f.exec(t, "echo pwned > .git/hooks/pre-commit", false, "")
	if err != nil {
		t.Fatal(err)
	}
	if *r.ExitCode == 0 {
		t.Fatal("wrote a hook into a .git created after the first command")
	}
	if _, err := os.Stat(filepath.Join(f.ws, ".git", "hooks", "pre-commit")); err == nil {
		t.Fatal("the hook exists")
	}
}
