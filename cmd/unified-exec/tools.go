package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/unified-exec/unified-exec/mcpserver"
)

func cmdTools(args []string) int {
	fs := flag.NewFlagSet("tools", flag.ContinueOnError)
	format := fs.String("format", "mcp", "mcp or openai")
	if err := fs.Parse(args); err != nil {
		return helpOr2(err)
	}
	out, err := mcpserver.ToolsJSON(*format)
	if err != nil {
		errorf("tools: %v", err)
		return 2
	}
	fmt.Fprintln(os.Stdout, string(out))
	return 0
}
