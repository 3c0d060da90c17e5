package approval

import (
	"fmt"
	"path"
	"strings"

	"github.com/unified-exec/unified-exec/policy"
)

// Request is what is judged: a command, where and how it runs.
type Request struct {
	// Argv is the command; for exec_command it is [shell, -lc, cmd].
	Argv []string
	Cwd  string
	TTY  bool
	// Home is the user's home directory, so that rules on ~ also match it
	// spelled out (a calling shell expands `rm -rf ~` before unified-exec
	// sees it). "" if unknown: then only ~ and $HOME spell it.
	Home string
	// Escalated asks to run without the sandbox (sandbox_permissions =
	// require_escalated); Justification is the model's reason.
	Escalated     bool
	Justification string
}

// Outcome is the verdict on a request.
type Outcome int

// Outcomes.
const (
	Skip          Outcome = iota // runs without asking
	NeedsApproval                // a person must approve first
	Forbidden                    // never runs
)

func (o Outcome) String() string {
	return [...]string{"skip", "needs approval", "forbidden"}[o]
}

// Who decided.
const (
	ByRule     = "rule"
	BySafeList = "safe-list"
	ByMode     = "mode"
	ByCache    = "cache"
	ByUser     = "user"
	// ByUnjudged: part of the line is known only when it runs, and a
	// forbid or prompt rule could match it ([Decision.Unjudged]).
	ByUnjudged = "unjudged"
)

// Decision is the verdict with its reasons.
type Decision struct {
	Outcome Outcome
	// By is who decided: [ByRule], [BySafeList] or [ByMode]. (The
	// orchestrator records [ByCache] and [ByUser] for what follows.)
	By string
	// Rule is the rule that decided, if one did.
	Rule *policy.Rule
	// Reason explains the verdict to people and to the model.
	Reason string
	// Sandbox is the mode the command runs in (if it runs): the
	// policy's; a rule's sandbox when every command of the line has it
	// (a narrower one when any has it); or danger-full-access for an
	// escalation request.
	Sandbox string
	// Parsed is the command line taken apart: the commands judged, and
	// why the line cannot be judged statically, if it cannot.
	Parsed Parsed
	// Unjudged, when not nil, is why the line needs approval (or is
	// refused under never) although no rule matched it as written.
	Unjudged *Unjudged
}

// Unjudged says that a command cannot be judged before it runs and which
// forbid or prompt rule could match what runs.
type Unjudged struct {
	// Command is the command concerned, as shown to people.
	Command string
	// Why names what is known only when it runs: "eval runs a computed
	// string ($x)", "the command name is computed ($(echo git))", "xargs
	// adds arguments read from its input", ...
	Why string
	// Rule is a forbid or prompt rule that could match it (the strictest).
	Rule *policy.Rule
}

func (u *Unjudged) String() string {
	return fmt.Sprintf("%s cannot be judged before it runs: %s; it could match %s", u.Command, u.Why, ruleReason(u.Rule, u.Rule.Decision))
}

var strictness = map[string]int{policy.DecisionAllow: 1, policy.DecisionPrompt: 2, policy.DecisionForbid: 3}

// Decide judges a request against a policy. It is pure: no I/O, no
// state; the same request and policy always give the same decision.
//
// In order:
//
//  1. An empty argv is forbidden.
//  2. Every command of the line ([Parse]) is matched against the rules:
//     allow rules as written ([Match]), forbid and prompt rules whatever
//     the spelling ([Matcher]). The strictest matching decision wins
//     (forbid > prompt > allow). forbid: [Forbidden], never askable,
//     whatever the mode.
//  3. prompt, or a forbid or prompt rule that could match a part known
//     only when it runs ([CouldMatch]: eval, source, a computed command
//     name, a script piped into a shell; [Decision.Unjudged] says which):
//     [NeedsApproval] in every mode (under never: [Forbidden], saying that
//     the approval mode is never). If the request also asks for
//     escalation, the one question covers both and the sandbox is
//     danger-full-access.
//  4. An escalation request ([Request.Escalated]) is [NeedsApproval] in
//     every mode but never, where it is refused; if approved it runs in
//     danger-full-access.
//  5. untrusted: a line that can be judged statically and whose every
//     command is known-safe ([IsKnownSafe]) or matched by an allow rule is
//     [Skip]; anything else is [NeedsApproval].
//  6. on-failure, on-request and never: [Skip], in the sandbox. (Under
//     on-failure the orchestrator asks again when the sandbox blocks it.)
//
// The sandbox of the decision is danger-full-access for an escalation
// (asked); otherwise the narrowest of the commands' sandboxes, each
// command's being its deciding rule's sandbox or the policy's mode. A
// rule's sandbox wider than the policy's thus applies only when every
// command of the line matches a rule with that sandbox, the line can be
// judged statically and its input redirections read only files under the
// working directory (see lineSandbox).
func Decide(req Request, p *policy.Policy) Decision {
	parsed := Parse(req.Argv)
	d := Decision{Parsed: parsed, Sandbox: p.Sandbox.Mode}
	mode := p.Approval.Mode
	if len(req.Argv) == 0 {
		d.Outcome, d.By, d.Reason = Forbidden, ByMode, "empty command"
		return d
	}

	var strictest *policy.Rule
	allCovered := parsed.Opaque == ""
	var sandboxes []string // each command's: its rule's, or the policy's
	m := Matcher{Home: req.Home, Cwd: req.Cwd}
	for _, cmd := range judged(parsed) {
		var best *policy.Rule
		for i := range p.Rules {
			r := &p.Rules[i]
			hit := false
			if r.Decision == policy.DecisionAllow {
				hit = cmd.whole == "" && !cmd.unset && Match(*r, cmd.Argv)
			} else {
				switch m.Matches(r, cmd) {
				case Matches:
					hit = true
				case CouldMatch:
					if d.Unjudged == nil || strictness[r.Decision] > strictness[d.Unjudged.Rule.Decision] {
						why := cmd.Unknown()
						if why == "" {
							why = "part of it is known only when it runs"
						}
						d.Unjudged = &Unjudged{Command: cmd.String(), Why: why, Rule: r}
					}
				}
			}
			if hit && (best == nil || strictness[r.Decision] > strictness[best.Decision]) {
				best = r
			}
		}
		if best != nil && (strictest == nil || strictness[best.Decision] > strictness[strictest.Decision]) {
			strictest = best
		}
		if cmd.unset {
			continue // seen only by the forbid and prompt rules
		}
		if cmd.whole != "" || !(IsKnownSafe(cmd.Argv) || (best != nil && best.Decision == policy.DecisionAllow)) {
			allCovered = false
		}
		sb := p.Sandbox.Mode
		if best != nil && best.Sandbox != "" {
			sb = best.Sandbox
		}
		sandboxes = append(sandboxes, sb)
	}
	// A part nobody could read is not a command a rule saw, nor is a
	// redirection reading a file from outside the working directory (or
	// a socket, /dev/tcp/...): no rule's sandbox wider than the policy's
	// covers the line then.
	d.Sandbox = lineSandbox(p.Sandbox.Mode, sandboxes, parsed.Opaque == "" && d.Unjudged == nil && m.readsInside(parsed.Reads))
	refuseUnderNever := func(why string) Decision {
		d.Outcome = Forbidden
		d.Reason = "approval mode is never, so nobody can be asked: " + why
		if d.Unjudged != nil && d.Rule == nil {
			d.Reason += "; spell the command out so that the rules can judge it"
		} else {
			d.Reason += "; change [approval] mode or add an allow rule to the policy"
		}
		return d
	}
	if strictest != nil {
		switch strictest.Decision {
		case policy.DecisionForbid:
			d.Outcome, d.By, d.Rule, d.Unjudged = Forbidden, ByRule, strictest, nil
			d.Reason = ruleReason(strictest, "forbidden by policy")
			return d
		case policy.DecisionPrompt:
			d.By, d.Rule = ByRule, strictest
			why := ruleReason(strictest, "a rule asks for approval")
			if d.Unjudged != nil {
				// The rule's sandbox was meant for its own command, not
				// for a part nobody could read.
				why += "; and " + d.Unjudged.String()
				d.Sandbox = p.Sandbox.Mode
			}
			if req.Escalated {
				// One question covers both: approving it runs the
				// command without the sandbox, as asked.
				d.Sandbox = policy.ModeDangerFullAccess
				why += "; " + escalationReason(req)
			}
			if mode == policy.ApprovalNever {
				return refuseUnderNever(why)
			}
			d.Outcome, d.Reason = NeedsApproval, why
			return d
		}
	}
	if d.Unjudged != nil {
		// Approving what nobody could read does not widen the sandbox:
		// no rule's sandbox applies, only an escalation asked for.
		d.By, d.Sandbox = ByUnjudged, p.Sandbox.Mode
		why := d.Unjudged.String()
		if req.Escalated {
			d.Sandbox = policy.ModeDangerFullAccess
			why += "; " + escalationReason(req)
		}
		if mode == policy.ApprovalNever {
			return refuseUnderNever(why)
		}
		d.Outcome, d.Reason = NeedsApproval, why
		return d
	}
	if parsed.Unparsed {
		// Bash runs a script line by line: a syntax error on a later
		// line does not stop the earlier ones, which no rule has seen.
		d.By = ByMode
		why := "the script does not parse here (" + parsed.Opaque + "), so the policy's rules cannot be checked against it"
		if mode == policy.ApprovalNever {
			return refuseUnderNever(why)
		}
		d.Outcome, d.Reason = NeedsApproval, why
		return d
	}
	if req.Escalated {
		d.By = ByMode
		d.Sandbox = policy.ModeDangerFullAccess
		why := escalationReason(req)
		if mode == policy.ApprovalNever {
			return refuseUnderNever(why)
		}
		d.Outcome, d.Reason = NeedsApproval, why
		return d
	}
	if mode == policy.ApprovalUntrusted {
		if allCovered {
			d.Outcome = Skip
			if strictest != nil {
				d.By, d.Rule, d.Reason = ByRule, strictest, ruleReason(strictest, "allowed by policy")
			} else {
				d.By, d.Reason = BySafeList, "known-safe read-only command"
			}
			return d
		}
		d.Outcome, d.By = NeedsApproval, ByMode
		if parsed.Opaque != "" {
			d.Reason = "approval mode is untrusted and the command cannot be judged in advance: " + parsed.Opaque
		} else {
			d.Reason = "approval mode is untrusted and the command is not on the known-safe list"
		}
		return d
	}
	d.Outcome, d.By = Skip, ByMode
	if strictest != nil {
		d.By, d.Rule, d.Reason = ByRule, strictest, ruleReason(strictest, "allowed by policy")
	} else {
		d.Reason = fmt.Sprintf("approval mode is %s: runs in the %s sandbox", mode, d.Sandbox)
	}
	return d
}

// openness orders the sandbox modes from the narrowest.
var openness = map[string]int{policy.ModeReadOnly: 1, policy.ModeWorkspaceWrite: 2, policy.ModeDangerFullAccess: 3}

// lineSandbox is the sandbox a line runs in, given the policy's mode and
// each command's (its deciding rule's sandbox, or the policy's): the
// narrowest of them. So a rule's sandbox wider than the policy's applies
// only when every command of the line has it — `npm install && cat
// ~/.ssh/id_rsa` is not `npm install` — and only to a line that can be
// judged statically (a redirection, substitution or variable is not a
// command a rule saw); a narrower one applies whenever a command has it.
// A line without commands runs in the policy's mode.
func lineSandbox(policyMode string, commands []string, judgeable bool) string {
	if len(commands) == 0 {
		return policyMode
	}
	sb := commands[0]
	for _, c := range commands[1:] {
		if openness[c] < openness[sb] {
			sb = c
		}
	}
	if openness[sb] > openness[policyMode] && !judgeable {
		return policyMode
	}
	return sb
}

// readsInside reports whether every file of reads is in the tree of the
// working directory, or a device that holds nothing (/dev/null).
func (m Matcher) readsInside(reads []string) bool {
	for _, r := range reads {
		switch r {
		case "/dev/null", "/dev/zero", "/dev/random", "/dev/urandom":
			continue
		}
		p, ok := m.abs(r, ".")
		if !ok || !path.IsAbs(m.Cwd) {
			return false
		}
		if cwd := path.Clean(m.Cwd); p != cwd && !strings.HasPrefix(p, cwd+"/") {
			return false
		}
	}
	return true
}

// judged are the commands a decision looks at: the inner commands of a
// shell line (not the shell itself), or argv.
func judged(p Parsed) []Command {
	var out []Command
	for _, c := range p.Commands {
		if _, ok := shellScriptAt(c.Argv); ok && c.whole == "" {
			continue
		}
		out = append(out, c)
	}
	return out
}

func escalationReason(req Request) string {
	why := "the command asks to run without the sandbox"
	if req.Justification != "" {
		why += ": " + req.Justification
	}
	return why
}

func ruleReason(r *policy.Rule, def string) string {
	var pat []string
	for _, alts := range r.Pattern {
		if len(alts) == 1 {
			pat = append(pat, alts[0])
		} else {
			pat = append(pat, "{"+strings.Join(alts, "|")+"}")
		}
	}
	where := ""
	if r.Line > 0 {
		where = fmt.Sprintf(" (line %d)", r.Line)
	}
	reason := r.Reason
	if reason == "" {
		reason = def
	}
	return fmt.Sprintf("rule %q%s, %s: %s", strings.Join(pat, " "), where, r.Decision, reason)
}
