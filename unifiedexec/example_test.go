//go:build linux

package unifiedexec_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/unified-exec/unified-exec/unifiedexec"
)

// A session: a command that waits for input is left running after its
// first window; write_stdin sends a line and collects what it printed.
func ExampleManager_Exec() {
	ws, _ := os.MkdirTemp("", "example-ws")
	defer os.RemoveAll(ws)
	m := unifiedexec.New(unifiedexec.Config{Workspace: ws})
	defer m.Close()
	login := false
	ctx := context.Background()
	r, err := m.Exec(ctx, unifiedexec.ExecRequest{Cmd: `read name; echo "hello, $name"`, Login: &login, TTY: true, Yield: 300 * time.Millisecond})
	if err != nil || r.SessionID == 0 {
		fmt.Println("not running:", err)
		return
	}
	r, err = m.Write(ctx, unifiedexec.WriteRequest{SessionID: r.SessionID, Chars: "world\n", Yield: 5 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("exit %d\n", *r.ExitCode)
	// Output: exit 0
}
