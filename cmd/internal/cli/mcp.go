package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/unified-exec/unified-exec/orchestrator"
)

// MCP is the MCP server a program carries: unified-exec-mcp's. Its SDK,
// JSON Schema and the rest are initialised at every start of a program
// that links them, a wrapped command's included (a millisecond and more
// of each start): unified-exec carries none and starts unified-exec-mcp
// to serve (see execServer).
type MCP struct {
	// New makes the server of o's tools; version is the program's.
	New func(o *orchestrator.Orchestrator, version string) Server
	// ToolsJSON gives the tools' definitions, for `tools --format`.
	ToolsJSON func(format string) ([]byte, error)
}

// Server serves one orchestrator's tools.
type Server interface {
	// Serve answers MCP requests read from in on out until in ends or
	// ctx is done.
	Serve(ctx context.Context, in io.Reader, out io.Writer) error
	// NotifyExit tells the client that session id's command exited with
	// code, its last lines last.
	NotifyExit(id, code int, last []string)
}

// mcp is the program's MCP server (see Main); nil in unified-exec.
var mcp *MCP

// serverProgram is the name of the program that serves, next to
// unified-exec.
const serverProgram = "unified-exec-mcp"

// execServer replaces this program with unified-exec-mcp, from the same
// folder, with the same arguments and environment: it serves (or prints
// the tools) in unified-exec's stead. It returns only when that program
// cannot be started.
func execServer() int {
	self, err := os.Executable()
	if err != nil {
		errorf("serving MCP: finding this program: %v", err)
		return exitInternal
	}
	path := filepath.Join(filepath.Dir(self), serverProgram)
	err = syscall.Exec(path, append([]string{path}, os.Args[1:]...), os.Environ())
	errorf("serving MCP: the MCP server is the program %s, next to this one, which cannot be started: %v; "+
		"build both with scripts/install, or go build -o %s ./cmd/unified-exec-mcp", path, err, path)
	return exitInternal
}
