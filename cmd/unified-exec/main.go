// Command unified-exec lets an AI agent run shell commands safely: it
// wraps one command in the sandbox (`unified-exec -- make test`), and
// serves the unified-exec tools over MCP (stdio) through
// unified-exec-mcp, which it starts from its own folder. It carries no
// MCP server itself, so that a wrapped command's start pays for none. See
// package cli for the command line.
package main

import "github.com/unified-exec/unified-exec/cmd/internal/cli"

func main() { cli.Main(nil) }
