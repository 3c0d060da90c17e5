package sandbox_test

import (
	"fmt"

	"github.com/unified-exec/unified-exec/sandbox"
)

func ExampleAttribute() {
	plan := &sandbox.Plan{Mode: "workspace-write", WritableRoots: []string{"/work"}}
	// The server's own view: it may write /srv, not /etc.
	allowed := func(path string, write bool) bool { return !write || path == "/srv/out" }
	show := func(code int, output string, net sandbox.NetRefusals) {
		d, ok := sandbox.Attribute(sandbox.Evidence{Code: code, Output: output, Plan: plan, Cwd: "/work", Net: net, Allowed: allowed})
		if !ok {
			fmt.Println("not a denial")
			return
		}
		fmt.Println(d)
	}
	show(1, "touch: cannot touch '/srv/out': Read-only file system\n", sandbox.NetRefusals{})
	show(1, "touch: cannot touch '/etc/x': Permission denied\n", sandbox.NetRefusals{}) // the user may not either
	show(3, "mktemp: failed\nsandbox/landlock: Operation not permitted\n", sandbox.NetRefusals{})
	var inet sandbox.NetRefusals
	inet.Add(2) // AF_INET, as a NetWatch counts it
	show(7, "curl: (7) Couldn't connect to server\n", inet)
	// Output:
	// writing /srv/out (outside the writable roots): touch: cannot touch '/srv/out': Read-only file system
	// not a denial
	// not a denial
	// network access is off: 1 socket call (AF_INET ×1) refused: curl: (7) Couldn't connect to server
}
