package approval_test

import (
	"fmt"

	"github.com/unified-exec/unified-exec/approval"
	"github.com/unified-exec/unified-exec/policy"
)

func ExampleDecide() {
	pol, err := policy.Parse([]byte(`
[approval]
mode = "untrusted"

[[rule]]
pattern = ["rm"]
decision = "forbid"
reason = "use the trash command"

[[rule]]
pattern = ["git", ["push", "fetch"]]
decision = "prompt"
reason = "talks to the remote"
sandbox = "danger-full-access"
`), "example.toml")
	if err != nil {
		panic(err)
	}
	for _, script := range []string{
		"git status && ls -la | head",
		"make build",
		"git push origin main",
		"echo hi && rm -f keep",
		"cat $(ls)",
	} {
		d := approval.Decide(approval.Request{Argv: []string{"bash", "-lc", script}, Cwd: "/work"}, pol)
		fmt.Printf("%-28s %-15s by %-9s sandbox %s\n", script, d.Outcome, d.By, d.Sandbox)
	}
	// Output:
	// git status && ls -la | head  skip            by safe-list sandbox workspace-write
	// make build                   needs approval  by mode      sandbox workspace-write
	// git push origin main         needs approval  by rule      sandbox danger-full-access
	// echo hi && rm -f keep        forbidden       by rule      sandbox workspace-write
	// cat $(ls)                    needs approval  by mode      sandbox workspace-write
}

func ExampleCache() {
	var cache approval.Cache // the zero value is ready
	q := approval.Question{
		Kind:    approval.KindApprove,
		Request: approval.Request{Argv: []string{"bash", "-lc", "make install"}, Cwd: "/work"},
		Sandbox: "workspace-write",
	}
	cache.ApproveForSession(q)
	fmt.Println(cache.Approved(q))
	unsandboxed := q
	unsandboxed.Kind, unsandboxed.Sandbox = approval.KindRetryUnsandboxed, "danger-full-access"
	fmt.Println(cache.Approved(unsandboxed))
	q.Request.Cwd = "/elsewhere"
	fmt.Println(cache.Approved(q))
	// Output:
	// true
	// false
	// false
}

func ExampleMatcher() {
	rule := policy.Rule{
		Pattern:  []policy.Alternatives{{"rm"}, {"-r", "--recursive"}, {"/", "~"}},
		Decision: policy.DecisionForbid,
	}
	m := approval.Matcher{Home: "/home/alice", Cwd: "/home/alice/ws"}
	for _, script := range []string{
		"rm -rf build",
		"rm -f -r ~/",
		`\rm --recursive --force "$HOME"`,
		"rm -rf /home/alice/.",
		"cd .. && rm -rf .",
		"rm -rf $(cat dir.txt)",
	} {
		for _, cmd := range approval.Parse([]string{"bash", "-c", script}).Commands {
			if cmd.Argv[0] == "rm" {
				fmt.Printf("%-34s %v\n", script, m.Matches(&rule, cmd))
			}
		}
	}
	// Output:
	// rm -rf build                       no match
	// rm -f -r ~/                        matches
	// \rm --recursive --force "$HOME"    matches
	// rm -rf /home/alice/.               matches
	// cd .. && rm -rf .                  matches
	// rm -rf $(cat dir.txt)              could match
}
