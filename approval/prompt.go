package approval

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	// Unjudged is the decision's [Decision.Unjudged]: the question is
	// asked because part of the command is known only when it runs.
	Unjudged *Unjudged
	// Host and Port are the destination of a network question
	// (KindNetwork).
	Host string
	Port uint16
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

// Text renders a question for people. Everything it quotes (command,
// shell, cwd, reason or justification, the blocked line) is [Escape]d, so
// it cannot draw on the terminal or pass for another line of the
// question. A question to run a command without the sandbox says so in
// its first line.
func (q Question) Text() string {
	if q.Kind == KindNetwork {
		return q.networkText()
	}
	var b strings.Builder
	switch {
	case q.Kind == KindRetryUnsandboxed:
		fmt.Fprintf(&b, "The sandbox blocked this command; run it again WITHOUT the sandbox?\n")
	case q.Sandbox == policy.ModeDangerFullAccess:
		fmt.Fprintf(&b, "Allow this command to run WITHOUT the sandbox?\n")
	default:
		fmt.Fprintf(&b, "Allow this command to run?\n")
	}
	fmt.Fprintf(&b, "  command: %s\n", Display(q.Request.Argv))
	if shell := shellOf(q.Request.Argv); shell != "" {
		fmt.Fprintf(&b, "  shell:   %s\n", Escape(shell))
	}
	if q.Request.Cwd != "" {
		fmt.Fprintf(&b, "  cwd:     %s\n", Escape(q.Request.Cwd))
	}
	if q.Reason != "" {
		fmt.Fprintf(&b, "  reason:  %s\n", Escape(q.Reason))
	}
	if q.Denial != "" {
		fmt.Fprintf(&b, "  blocked: %s\n", Escape(q.Denial))
	}
	if q.Sandbox != "" {
		fmt.Fprintf(&b, "  sandbox: %s\n", Escape(q.Sandbox))
	}
	return b.String()
}

// shellOf is the shell and its options of a shell line that [Display]
// shows as its script alone ("/bin/bash -lc"), or "".
func shellOf(argv []string) string {
	if _, ok := shellScript(argv); ok && len(argv) == 3 {
		return Canonical(argv[:2])
	}
	return ""
}

// Display shows a command to people: the script of a shell line, else
// argv quoted; [Escape]d.
func Display(argv []string) string {
	if s, ok := shellScript(argv); ok && len(argv) == 3 {
		return Escape(s)
	}
	return Escape(Canonical(argv))
}

// TerminalReset is what to write on a terminal before text of
// unified-exec's own (a question, a note) that follows a command's
// output there: the command may have left it concealed (ESC [8m) or
// colored as the background, with a scroll region of one line (each
// line of the question then replaces the one before: only its last
// shows), the cursor hidden, the line-drawing character set chosen (every
// letter of the question a glyph: red team 31) or the default colors set
// alike — and printed a question of its own to pass for ours. It is a
// soft reset (DECSTR: modes, character sets, attributes), the scroll
// region reset with the cursor kept where it is, the text attributes, the
// ASCII character set shifted in, the cursor shown, and the default
// colors and palette restored — after a CAN that ends a control string
// the command left open (a title never terminated), and with line
// wrapping back on (a strict soft reset turns it off: a long command in
// the question would be cut at the right edge: red team 32); "" where
// TERM is dumb.
func TerminalReset() string {
	if os.Getenv("TERM") == "dumb" {
		return ""
	}
	return "\x18\x1b[!p\x1b[?7h\x1b7\x1b[r\x1b8\x1b[0m\x1b(B\x0f\x1b[?25h\x1b]104\x07\x1b]110\x07\x1b]111\x07"
}

// TTYPrompter asks on the controlling terminal (/dev/tty), for wrap
// mode. The zero value is ready to use.
type TTYPrompter struct {
	// Path is the terminal to open; "" means /dev/tty.
	Path string
	// OneCommand: the program runs one command (the wrapper), so "for
	// this session" means nothing and is not offered.
	OneCommand bool

	// mu serializes questions: one conversation on the terminal at a time.
	mu sync.Mutex
}

// Ask prints the question on the terminal and reads y or o (once), s
// (this session; not with OneCommand), n (no) or a (abort), asking again
// on anything else. When the
// terminal cannot be opened (no controlling terminal: CI, setsid) it
// returns an error wrapping [ErrNoTerminal]. Cancelling ctx closes the
// terminal and returns ctx's error.
func (p *TTYPrompter) Ask(ctx context.Context, q Question) (Answer, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	path := p.Path
	if path == "" {
		path = "/dev/tty"
	}
	tty, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return Deny, fmt.Errorf("%w: %v", ErrNoTerminal, err)
	}
	// The watcher goroutine is owned by Ask: it ends when Ask returns
	// (done) or closes the terminal to unblock the read when ctx ends.
	done := make(chan struct{})
	watcherDone := make(chan struct{})
	go func() {
		defer close(watcherDone)
		select {
		case <-ctx.Done():
			tty.Close()
		case <-done:
		}
	}()
	defer func() {
		close(done)
		<-watcherDone
		tty.Close()
	}()
	// What was typed before the question cannot answer it.
	flushInput(tty)
	fmt.Fprint(tty, TerminalReset()+"\n"+q.Text())
	r := bufio.NewReader(tty)
	for {
		if p.OneCommand {
			fmt.Fprint(tty, "[y]es, [n]o? ")
		} else {
			fmt.Fprint(tty, "[y]es once, [s]ession (this command, until unified-exec exits), [n]o, [a]bort? ")
		}
		line, err := r.ReadString('\n')
		if ctx.Err() != nil {
			return Deny, ctx.Err()
		}
		if err != nil && line == "" {
			return Deny, fmt.Errorf("reading the answer from %s: %w", path, err)
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "o", "once", "y", "yes":
			return ApproveOnce, nil
		case "s", "session":
			if p.OneCommand {
				continue // not offered
			}
			return ApproveForSession, nil
		case "n", "no":
			return Deny, nil
		case "a", "abort":
			return Abort, nil
		}
		if err != nil {
			return Deny, fmt.Errorf("reading the answer from %s: %w", path, err)
		}
	}
}

// DenyPrompter is for when nobody is to be asked: every question is
// denied. Show the user [RefusalMessage] to say which rule asked and how
// to allow the command.
type DenyPrompter struct {
	// Why nobody is asked, for the refusal: empty means nobody can be
	// (no terminal, no MCP elicitation).
	Why string
}

// Ask denies.
func (DenyPrompter) Ask(context.Context, Question) (Answer, error) { return Deny, nil }

// WhyNotAsked is the reason a refusal gives for not asking.
func (p DenyPrompter) WhyNotAsked() string {
	if p.Why != "" {
		return p.Why
	}
	return "nobody can be asked (no terminal, no MCP elicitation)"
}

// RefusalMessage says why a question was refused when nobody could be
// asked (the [DenyPrompter], a CI run without a terminal), names the rule
// that asked, and says how to allow the command in the policy file
// policySource (a [policy.Policy.Source]).
func RefusalMessage(q Question, policySource string) string {
	return RefusalMessageWhy(q, policySource, DenyPrompter{}.WhyNotAsked())
}

// RefusalMessageWhy is [RefusalMessage] with the reason nobody was asked
// (see [DenyPrompter.WhyNotAsked]).
func RefusalMessageWhy(q Question, policySource, whyNotAsked string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "refused: %s needs approval and %s", Display(q.Request.Argv), whyNotAsked)
	if q.Reason != "" {
		fmt.Fprintf(&b, "; %s", Escape(q.Reason))
	}
	where := Escape(policySource)
	if policySource == "" || policySource == policy.DefaultSource {
		where = "a copy of the default policy.toml, passed with --policy FILE"
	}
	parsed := Parse(q.Request.Argv)
	switch {
	case q.Unjudged != nil && q.Rule == nil:
		fmt.Fprintf(&b, ". No policy can allow it unasked while %s could match; spell the command out "+
			"(no eval, source, computed command names or arguments, or scripts piped into a shell) so the rules can judge it, "+
			"or run it where a person can approve it", ruleReason(q.Unjudged.Rule, q.Unjudged.Rule.Decision))
	case q.Rule != nil:
		fmt.Fprintf(&b, ". To allow it, change the decision of that rule (line %d) to \"allow\" in %s", q.Rule.Line, where)
	case q.Kind == KindRetryUnsandboxed || q.Request.Escalated:
		fmt.Fprintf(&b, ". To run such commands without the sandbox and without asking, add to %s:\n%s", where,
			ruleSnippet(firstUnsafe(parsed), `sandbox = "danger-full-access"`))
	case parsed.Opaque != "":
		fmt.Fprintf(&b, ". It cannot be judged in advance (%s), so no rule can allow it under [approval] mode = \"untrusted\"; "+
			"set mode = \"on-request\" in %s to run such commands in the sandbox without asking", Escape(parsed.Opaque), where)
	default:
		fmt.Fprintf(&b, ". To allow it, add to %s:\n%s", where, ruleSnippet(firstUnsafe(parsed), ""))
	}
	return b.String()
}

// firstUnsafe returns the first command of a line that is not known-safe.
func firstUnsafe(p Parsed) []string {
	cmds := judged(p)
	for _, c := range cmds {
		if !IsKnownSafe(c.Argv) {
			return c.Argv
		}
	}
	if len(cmds) > 0 {
		return cmds[0].Argv
	}
	return nil
}

// ruleSnippet is a [[rule]] allowing commands that start like argv: its
// program, and the subcommand for programs that have them (git push).
func ruleSnippet(argv []string, extra string) string {
	var words []string
	if len(argv) > 0 {
		words = append(words, filepath.Base(argv[0]))
		if len(argv) > 1 && !strings.HasPrefix(argv[1], "-") && slices.Contains(subcommandTools, words[0]) {
			words = append(words, argv[1])
		}
	}
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = fmt.Sprintf("%q", w)
	}
	s := fmt.Sprintf("  [[rule]]\n  pattern = [%s]\n  decision = \"allow\"", strings.Join(q, ", "))
	if extra != "" {
		s += "\n  " + extra
	}
	return s
}

// subcommandTools are programs whose second word names what they do.
var subcommandTools = []string{"git", "npm", "pnpm", "yarn", "cargo", "go", "docker", "kubectl", "make", "pip", "pip3", "uv", "gh", "apt", "apt-get", "brew", "systemctl"}

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
