package policy_test

import (
	"fmt"

	"github.com/unified-exec/unified-exec/policy"
)

func ExampleParse() {
	_, err := policy.Parse([]byte("[approval]\nmode = \"never\"\nmood = \"calm\"\n"), "policy.toml")
	fmt.Println(err)
	p, _ := policy.Parse([]byte("[approval]\nmode = \"never\"\n"), "policy.toml")
	fmt.Println(p.Approval.Mode, p.Sandbox.Mode, p.Limits.MaxSessions)
	// Output:
	// policy.toml:3: approval.mood: unknown key (known keys of [approval]: mode, prompt)
	// never workspace-write 64
}

func ExampleEnv_Build() {
	env := policy.Env{Inherit: "core", Exclude: policy.DefaultExclude, Set: map[string]string{"CI": "1"}}
	fmt.Println(env.Build([]string{"PATH=/usr/bin", "HOME=/home/me", "EDITOR=vi", "GITHUB_TOKEN=ghp_x"}))
	// Output:
	// [PATH=/usr/bin HOME=/home/me CI=1]
}
