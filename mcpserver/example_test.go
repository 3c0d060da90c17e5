package mcpserver_test

import (
	"encoding/json"
	"fmt"

	"github.com/unified-exec/unified-exec/mcpserver"
)

// The tool schemas, as a host that runs its own model loop takes them.
func ExampleToolsJSON() {
	b, err := mcpserver.ToolsJSON("mcp")
	if err != nil {
		fmt.Println(err)
		return
	}
	var tools []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(b, &tools); err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range tools {
		fmt.Println(t.Name)
	}
	// Output:
	// exec_command
	// write_stdin
	// list_sessions
	// kill_session
	// read_log
}
