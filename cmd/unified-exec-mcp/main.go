// Command unified-exec-mcp is unified-exec with its MCP server: it
// serves the unified-exec tools over MCP (stdio), and does all that
// unified-exec does. unified-exec starts it to serve; hosts may also
// start it themselves. See package cli for the command line.
package main

import (
	"context"
	"io"

	"github.com/unified-exec/unified-exec/cmd/internal/cli"
	"github.com/unified-exec/unified-exec/mcpserver"
	"github.com/unified-exec/unified-exec/orchestrator"
)

func main() {
	cli.Main(&cli.MCP{
		New: func(o *orchestrator.Orchestrator, version string) cli.Server {
			return server{mcpserver.New(o, version)}
		},
		ToolsJSON: mcpserver.ToolsJSON,
	})
}

// server is the MCP server of mcpserver, on a transport of in and out.
type server struct{ *mcpserver.Server }

func (s server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	return s.Run(ctx, mcpserver.Transport(in, out))
}
