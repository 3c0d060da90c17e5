package approval

import (
	"bufio"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/unified-exec/unified-exec/policy"
)

// answerOn opens a PTY pair, answers every prompt on the master with the
// next of answers, and returns a TTYPrompter on the slave.
func answerOn(t *testing.T, answers ...string) *TTYPrompter {
	t.Helper()
	return answerAfter(t, "", answers...)
}

// answerAfter is answerOn with typed written on the master first, as keys
// typed before any question.
func answerAfter(t *testing.T, typed string, answers ...string) *TTYPrompter {
	t.Helper()
	master, slave, err := pty.Open()
	if err != nil {
		t.Skipf("no PTY here: %v", err)
	}
	if typed != "" {
		if _, err := master.Write([]byte(typed)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // the line discipline has it
	}
	name := slave.Name()
	// Keep the slave open until the test ends so the master never sees EIO
	// between two opens by the prompter.
	done := make(chan struct{})
	t.Cleanup(func() { master.Close(); slave.Close(); <-done })
	go func() { // owned by the test: ends when the master is closed
		defer close(done)
		r := bufio.NewReader(master)
		var seen strings.Builder
		for {
			b, err := r.ReadByte()
			if err != nil {
				return
			}
			seen.WriteByte(b)
			if (strings.HasSuffix(seen.String(), "[a]bort? ") || strings.HasSuffix(seen.String(), "[n]o? ")) && len(answers) > 0 {
				master.Write([]byte(answers[0] + "\n"))
				answers = answers[1:]
			}
		}
	}()
	return &TTYPrompter{Path: name}
}

func TestTTYPrompter(t *testing.T) {
	cases := []struct {
		name    string
		answers []string
		want    Answer
	}{
		{"once", []string{"o"}, ApproveOnce},
		{"yes", []string{"yes"}, ApproveOnce},
		{"session", []string{"s"}, ApproveForSession},
		{"no", []string{"n"}, Deny},
		{"abort", []string{"a"}, Abort},
		{"asks again", []string{"maybe", "", "S"}, ApproveForSession},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := answerOn(t, c.answers...)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			got, err := p.Ask(ctx, Question{Kind: KindApprove, Request: Request{Argv: sh("git push")}, Reason: "talks to the remote"})
			if err != nil || got != c.want {
				t.Fatalf("got %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

// TestTTYPrompterOneCommand: with one command to run (the wrapper), "for
// this session" means nothing: it is neither offered nor taken.
func TestTTYPrompterOneCommand(t *testing.T) {
	for _, c := range []struct {
		answers []string
		want    Answer
	}{
		{[]string{"y"}, ApproveOnce},
		{[]string{"s", "n"}, Deny},
	} {
		p := answerOn(t, c.answers...)
		p.OneCommand = true
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		got, err := p.Ask(ctx, Question{Kind: KindApprove, Request: Request{Argv: sh("git push")}})
		cancel()
		if err != nil || got != c.want {
			t.Fatalf("%v: got %v, %v; want %v", c.answers, got, err, c.want)
		}
	}
}

func TestTTYPrompterNoTerminal(t *testing.T) {
	p := &TTYPrompter{Path: "/nonexistent/tty"}
	_, err := p.Ask(context.Background(), Question{Request: Request{Argv: sh("touch x")}})
	if !errors.Is(err, ErrNoTerminal) {
		t.Fatalf("err = %v, want ErrNoTerminal", err)
	}
}

func TestTTYPrompterCancel(t *testing.T) {
	p := answerOn(t) // nobody answers
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := p.Ask(ctx, Question{Request: Request{Argv: sh("touch x")}})
		errc <- err
	}()
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Ask did not return after cancel")
	}
}

func TestQuestionText(t *testing.T) {
	q := Question{Kind: KindRetryUnsandboxed, Request: Request{Argv: sh("make install"), Cwd: "/w"},
		Denial: "Permission denied", Sandbox: policy.ModeDangerFullAccess}
	txt := q.Text()
	for _, want := range []string{"WITHOUT the sandbox", "make install", "/w", "Permission denied", "danger-full-access"} {
		if !strings.Contains(txt, want) {
			t.Errorf("%q lacks %q", txt, want)
		}
	}
}

func TestDenyAndScripted(t *testing.T) {
	if a, err := (DenyPrompter{}).Ask(context.Background(), Question{}); a != Deny || err != nil {
		t.Fatalf("DenyPrompter: %v %v", a, err)
	}
	s := &Scripted{Answers: []Answer{ApproveForSession, Abort}}
	var got []Answer
	for _, cmd := range []string{"a", "b", "c"} {
		a, err := s.Ask(context.Background(), Question{Request: Request{Argv: sh(cmd)}})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, a)
	}
	if want := []Answer{ApproveForSession, Abort, Deny}; !equalAnswers(got, want) {
		t.Fatalf("answers %v, want %v", got, want)
	}
	if q := s.Asked(); len(q) != 3 || Display(q[2].Request.Argv) != "c" {
		t.Fatalf("recorded %+v", q)
	}
}

func equalAnswers(a, b []Answer) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRefusalMessage(t *testing.T) {
	p := testPolicy(t, policy.ApprovalOnRequest)
	pushRule := Decide(Request{Argv: sh("git push")}, p).Rule
	cases := []struct {
		name   string
		q      Question
		source string
		want   []string
	}{
		{"rule", Question{Kind: KindApprove, Request: Request{Argv: sh("git push")}, Reason: "talks to the remote", Rule: pushRule},
			"test.toml", []string{"git push", "talks to the remote", "line 8", `"allow" in test.toml`}},
		{"untrusted plain", Question{Kind: KindApprove, Request: Request{Argv: sh("ls && touch x")}},
			"p.toml", []string{"ls && touch x", "[[rule]]", `pattern = ["touch"]`, `decision = "allow"`, "p.toml"}},
		{"subcommand", Question{Kind: KindApprove, Request: Request{Argv: sh("npm test")}},
			"p.toml", []string{`pattern = ["npm", "test"]`}},
		{"opaque", Question{Kind: KindApprove, Request: Request{Argv: sh("echo $(date)")}},
			"p.toml", []string{"cannot be judged in advance", `mode = "on-request"`}},
		{"escalation", Question{Kind: KindApprove, Request: Request{Argv: sh("make install"), Escalated: true}},
			"p.toml", []string{`pattern = ["make", "install"]`, `sandbox = "danger-full-access"`}},
		{"retry", Question{Kind: KindRetryUnsandboxed, Request: Request{Argv: []string{"touch", "/etc/x"}}},
			"p.toml", []string{`pattern = ["touch"]`, `sandbox = "danger-full-access"`}},
		{"embedded default", Question{Kind: KindApprove, Request: Request{Argv: sh("touch x")}},
			policy.DefaultSource, []string{"a copy of the default policy.toml, passed with --policy FILE"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msg := RefusalMessage(c.q, c.source)
			if !strings.HasPrefix(msg, "refused: ") {
				t.Errorf("%q does not start with refused:", msg)
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q lacks %q", msg, w)
				}
			}
		})
	}
}
