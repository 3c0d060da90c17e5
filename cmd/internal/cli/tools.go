package cli

import (
	"flag"
	"fmt"
	"os"
)

func cmdTools(args []string) int {
	if mcp == nil {
		return execServer("tools")
	}
	fs := flag.NewFlagSet("tools", flag.ContinueOnError)
	format := fs.String("format", "mcp", "mcp or openai")
	if err := fs.Parse(args); err != nil {
		return helpOr2(err)
	}
	out, err := mcp.ToolsJSON(*format)
	if err != nil {
		errorf("tools: %v", err)
		return 2
	}
	fmt.Fprintln(os.Stdout, string(out))
	return 0
}
