package sandbox_test

import (
	"fmt"

	"github.com/unified-exec/unified-exec/policy"
	"github.com/unified-exec/unified-exec/sandbox"
)

func ExampleCompile() {
	p := policy.Sandbox{
		Mode:                policy.ModeWorkspaceWrite,
		ExcludeSlashTmp:     true,
		ExcludeTmpdirEnvVar: true,
	}
	plan, err := sandbox.Compile(p, "/")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("enforced:", plan.Enforced())
	fmt.Println("network:", plan.Network)
	fmt.Println("writable roots:", plan.WritableRoots)
	fmt.Println("first read grant:", plan.Read[0].Access, plan.Read[0].Path)

	full, _ := sandbox.Compile(policy.Sandbox{Mode: policy.ModeDangerFullAccess}, "/")
	fmt.Println("full access enforced:", full.Enforced())
	// Output:
	// enforced: true
	// network: false
	// writable roots: [/]
	// first read grant: read /
	// full access enforced: false
}

func ExampleDetectDenial() {
	show := func(denied bool, why string) { fmt.Printf("%v %q\n", denied, why) }
	show(sandbox.DetectDenial(true, 1, "touch: cannot touch '/etc/x': Permission denied\n"))
	show(sandbox.DetectDenial(true, 1, "/home/u/sandbox-project/x.go:3:2: undefined: foo\n"))
	show(sandbox.DetectDenial(false, 1, "touch: cannot touch '/etc/x': Permission denied\n"))
	// Output:
	// true "touch: cannot touch '/etc/x': Permission denied"
	// false ""
	// false ""
}
