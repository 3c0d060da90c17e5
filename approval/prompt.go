package approval

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/unified-exec/unified-exec/policy"
)

// Kinds of question.
const (
	KindApprove          = "approve"           // may this command run?
	KindRetryUnsandboxed = "retry-unsandboxed" // the sandbox blocked it: run it without?
)

// Question is what a person is asked.
type Question struct {
	Kind    string
	Request Request
	// Reason is the rule's reason, or the model's justification.
	Reason string
	Rule   *policy.Rule
	// Sandbox is the mode the command would run in.
	Sandbox string
	// Denial quotes the sandbox's refusal (retry questions).
	Denial string
}

// Answer is a person's decision.
type Answer int

// Answers.
const (
	Deny Answer = iota
	ApproveOnce
	ApproveForSession
	Abort
)

func (a Answer) String() string {
	return [...]string{"deny", "approve", "approve for the session", "abort"}[a]
}

// Prompter asks a person.
type Prompter interface {
	Ask(ctx context.Context, q Question) (Answer, error)
}

// ErrNoTerminal: there is no terminal to ask on.
var ErrNoTerminal = errors.New("no terminal to ask on")

// Text renders a question for people.
func (q Question) Text() string {
	var b strings.Builder
	if q.Kind == KindRetryUnsandboxed {
		fmt.Fprintf(&b, "The sandbox blocked this command; run it again WITHOUT the sandbox?\n")
	} else {
		fmt.Fprintf(&b, "Allow this command to run?\n")
	}
	fmt.Fprintf(&b, "  command: %s\n", Display(q.Request.Argv))
	if q.Request.Cwd != "" {
		fmt.Fprintf(&b, "  cwd:     %s\n", q.Request.Cwd)
	}
	if q.Reason != "" {
		fmt.Fprintf(&b, "  reason:  %s\n", q.Reason)
	}
	if q.Denial != "" {
		fmt.Fprintf(&b, "  blocked: %s\n", q.Denial)
	}
	if q.Sandbox != "" {
		fmt.Fprintf(&b, "  sandbox: %s\n", q.Sandbox)
	}
	return b.String()
}

// Display shows a command: the script of a shell line, else argv quoted.
func Display(argv []string) string {
	if s, ok := shellScript(argv); ok && len(argv) == 3 {
		return s
	}
	return Canonical(argv)
}

// TTYPrompter asks on the controlling terminal (/dev/tty).
type TTYPrompter struct {
	// mu serializes questions: one conversation on the terminal at a time.
	mu sync.Mutex
}

// Ask prints the question on /dev/tty and reads o / s / n / a.
func (p *TTYPrompter) Ask(ctx context.Context, q Question) (Answer, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return Deny, fmt.Errorf("%w: %v", ErrNoTerminal, err)
	}
	defer tty.Close()
	fmt.Fprint(tty, "\n"+q.Text())
	r := bufio.NewReader(tty)
	for {
		fmt.Fprint(tty, "[o]nce, [s]ession, [n]o, [a]bort? ")
		line, err := r.ReadString('\n')
		if err != nil {
			return Deny, fmt.Errorf("reading the answer: %w", err)
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "o", "once", "y", "yes":
			return ApproveOnce, nil
		case "s", "session":
			return ApproveForSession, nil
		case "n", "no":
			return Deny, nil
		case "a", "abort":
			return Abort, nil
		}
	}
}

// DenyPrompter is for when nobody can be asked: every question is denied.
type DenyPrompter struct{}

// Ask denies.
func (DenyPrompter) Ask(context.Context, Question) (Answer, error) { return Deny, nil }

// RefusalMessage says why a question was refused when nobody could be
// asked, and how to allow the command in policy.toml.
func RefusalMessage(q Question, policySource string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "refused: %s needs approval and nobody can be asked (no terminal, no MCP elicitation)", Display(q.Request.Argv))
	if q.Reason != "" {
		fmt.Fprintf(&b, "; %s", q.Reason)
	}
	if q.Rule != nil {
		fmt.Fprintf(&b, ". To allow it, change that rule's decision to \"allow\" in %s", policySource)
	} else if q.Kind == KindRetryUnsandboxed {
		fmt.Fprintf(&b, ". To run it without the sandbox, add a [[rule]] with its pattern and sandbox = \"danger-full-access\" to %s", policySource)
	} else {
		words := q.Request.Argv
		if s, ok := shellScript(words); ok {
			words = strings.Fields(s)
		}
		first := ""
		if len(words) > 0 {
			first = words[0]
		}
		fmt.Fprintf(&b, ". To allow it, add to %s:\n  [[rule]]\n  pattern = [%q]\n  decision = \"allow\"", policySource, first)
	}
	return b.String()
}

// Scripted answers from a list and records the questions; for tests and
// for hosts that decide by program.
type Scripted struct {
	// mu guards the fields below.
	mu        sync.Mutex
	Answers   []Answer
	Questions []Question
}

// Ask returns the next answer (Deny when the list is exhausted).
func (s *Scripted) Ask(_ context.Context, q Question) (Answer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Questions = append(s.Questions, q)
	if len(s.Answers) == 0 {
		return Deny, nil
	}
	a := s.Answers[0]
	s.Answers = s.Answers[1:]
	return a, nil
}

// Asked returns the questions asked so far.
func (s *Scripted) Asked() []Question {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Question(nil), s.Questions...)
}
