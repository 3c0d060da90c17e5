package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/unified-exec/unified-exec/approval"
	"github.com/unified-exec/unified-exec/policy"
	"github.com/unified-exec/unified-exec/sandbox"
)

// answerer answers every question with one answer (or fails, as a
// prompter that cannot reach anyone does) and records what it was asked.
type answerer struct {
	ans   approval.Answer
	fail  bool
	asked []approval.Question
}

func (a *answerer) Ask(_ context.Context, q approval.Question) (approval.Answer, error) {
	a.asked = append(a.asked, q)
	if a.fail {
		return approval.Deny, errors.New("nobody to ask")
	}
	return a.ans, nil
}

// TestPipelineInvariant runs the pipeline over every approval mode × rule
// outcome × answer × denial or not × sandbox available or not ×
// escalation asked or not, with the runs faked, and holds every case to
// one invariant: nothing runs without the sandbox unless the policy gives
// every command of the line danger-full-access, or a person approved a
// question that said the command would run WITHOUT the sandbox. Where the
// sandbox is unavailable, only a policy with required = false runs
// anything, and the run is reported as not sandboxed.
func TestPipelineInvariant(t *testing.T) {
	modes := []string{policy.ApprovalUntrusted, policy.ApprovalOnFailure, policy.ApprovalOnRequest, policy.ApprovalNever}
	rules := []struct {
		name, toml string
		// fullAccess: the policy gives every command of the line
		// danger-full-access.
		fullAccess bool
	}{
		{"none", "", false},
		{"allow", `[[rule]]
pattern = ["tool"]
decision = "allow"
`, false},
		{"allow-full", `[[rule]]
pattern = ["tool"]
decision = "allow"
sandbox = "danger-full-access"
`, true},
		{"prompt", `[[rule]]
pattern = ["tool"]
decision = "prompt"
`, false},
		{"prompt-full", `[[rule]]
pattern = ["tool"]
decision = "prompt"
sandbox = "danger-full-access"
`, true},
		{"forbid", `[[rule]]
pattern = ["tool"]
decision = "forbid"
`, false},
	}
	lines := []struct {
		cmd string
		// allCovered: every command of it is "tool".
		allCovered bool
	}{
		{"tool x", true},
		{"tool x && cat secret", false},
	}
	answers := []struct {
		name string
		a    answerer
	}{
		{"approve", answerer{ans: approval.ApproveOnce}},
		{"session", answerer{ans: approval.ApproveForSession}},
		{"deny", answerer{ans: approval.Deny}},
		{"abort", answerer{ans: approval.Abort}},
		{"nobody", answerer{fail: true}},
	}
	cases := 0
	for _, mode := range modes {
		for _, rule := range rules {
			for _, line := range lines {
				for _, answer := range answers {
					for _, denied := range []bool{false, true} {
						for _, available := range []bool{true, false} {
							for _, required := range []bool{true, false} {
								for _, escalate := range []bool{false, true} {
									name := fmt.Sprintf("%s/%s/%q/%s/denied=%v/available=%v/required=%v/escalate=%v", mode, rule.name, line.cmd, answer.name, denied, available, required, escalate)
									cases++
									checkPipeline(t, name, mode, rule.toml, rule.fullAccess && line.allCovered, line.cmd, answer.a, denied, available, required, escalate)
								}
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d cases", cases)
}

func checkPipeline(t *testing.T, name, mode, rules string, fullAccess bool, cmd string, a answerer, denied, available, required, escalate bool) {
	t.Helper()
	text := fmt.Sprintf("[approval]\nmode = %q\n[sandbox]\nrequired = %v\n%s", mode, required, rules)
	pol, err := policy.Parse([]byte(text), "case.toml")
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	ws := t.TempDir()
	st := sandbox.Status{LandlockABI: 7, Seccomp: true, Namespaces: true}
	if !available {
		st = sandbox.Status{NamespaceErr: "none here"}
	}
	o, err := New(Config{Policy: pol, Workspace: ws, Status: &st})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	prompter := a
	type run struct {
		mode      string
		sandboxed bool
	}
	var runs []run
	p := &pipe{
		areq:     approval.Request{Argv: []string{"/bin/bash", "-c", cmd}, Cwd: ws, Escalated: escalate, Justification: "needs it"},
		pol:      pol,
		prompter: &prompter,
		ev:       event{Command: cmd, Cwd: ws},
		state:    &State{},
	}
	p.run = func(ctx context.Context, m string) (*attempt, error) {
		_, sandboxed, _, plan, err := o.sandboxFor(pol.Sandbox, m)
		if err != nil {
			return nil, err // required sandbox unavailable: nothing runs
		}
		runs = append(runs, run{m, sandboxed})
		at := &attempt{Mode: m, Sandboxed: sandboxed, Exited: true, Quick: true, plan: plan}
		if denied && sandboxed {
			// A refusal counted by the sandbox: exact evidence.
			at.Code, at.Output = 7, "curl: (7) Couldn't connect to server\n"
			at.net.Add(2)
		}
		return at, nil
	}
	out, err := o.pipeline(context.Background(), p)

	// Who said "without the sandbox" and approved it.
	saidWithout := false
	for _, q := range prompter.asked {
		if strings.Contains(q.Text(), "WITHOUT the sandbox") && !prompter.fail && approves(prompter.ans) {
			saidWithout = true
		}
	}
	for _, r := range runs {
		if r.mode == policy.ModeDangerFullAccess && !fullAccess && !saidWithout {
			t.Errorf("%s: ran without the sandbox, unasked (questions: %d; err %v)", name, len(prompter.asked), err)
		}
		if !r.sandboxed && r.mode != policy.ModeDangerFullAccess && required {
			t.Errorf("%s: ran unsandboxed although the policy requires the sandbox", name)
		}
	}
	if strings.Contains(rules, `"forbid"`) && strings.HasPrefix(cmd, "tool") && len(runs) > 0 {
		t.Errorf("%s: a forbidden command ran", name)
	}
	if mode == policy.ApprovalNever && len(prompter.asked) > 0 {
		t.Errorf("%s: a question under approval mode never", name)
	}
	if out != nil && out.Note == noteRetried && !saidWithout {
		t.Errorf("%s: retried without the sandbox, unasked", name)
	}
}
