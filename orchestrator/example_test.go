//go:build linux

package orchestrator_test

import (
	"context"
	"fmt"
	"os"

	"github.com/unified-exec/unified-exec/orchestrator"
	"github.com/unified-exec/unified-exec/policy"
)

// An exec_command call through the whole pipeline: the default policy
// decides (echo is known to be safe), the command runs in the sandbox and
// its output comes back under the unified-exec clamps.
func ExampleOrchestrator_Exec() {
	ws, _ := os.MkdirTemp("", "example-ws")
	defer os.RemoveAll(ws)
	o, err := orchestrator.New(orchestrator.Config{Policy: policy.Default(), Workspace: ws})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer o.Close()
	login := false
	r, err := o.Exec(context.Background(), orchestrator.Request{
		ExecRequest: orchestrator.ExecRequest{Cmd: "echo hello from the sandbox", Login: &login},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("exit %d: %s", *r.ExitCode, r.Output)
	// Output: exit 0: hello from the sandbox
}
