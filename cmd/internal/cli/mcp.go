package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
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

// serverExecEnv marks a program started by execServer: one that is
// unified-exec again (a copy, or a link to it, under the server's name)
// would otherwise start itself for ever.
const serverExecEnv = "UNIFIED_EXEC_SERVER_EXEC"

// execServer replaces this program with unified-exec-mcp, from the same
// folder, with the same arguments and environment: it serves (or prints
// the tools: what says which) in unified-exec's stead. The file must be a
// program of the same owner as this one (or root's) that no one else may
// write: in a folder others write to (a shared /tmp), one planted there
// would run as whoever serves. It is started through the descriptor it
// was checked on. It returns only when that program cannot be started.
func execServer(what string) int { return execServerWith(what, syscall.Exec) }

// execServerWith is execServer, executing the server with exec.
func execServerWith(what string, exec func(path string, argv, env []string) error) int {
	self, err := os.Executable()
	if err != nil {
		errorf("%s: finding this program: %v", what, err)
		return exitInternal
	}
	path := filepath.Join(filepath.Dir(self), serverProgram)
	fail := func(why string) int {
		errorf("%s: the MCP server is the program %s, next to this one, which %s; "+
			"build both with scripts/install, or go build -o %s ./cmd/unified-exec-mcp", what, path, why, path)
		return exitInternal
	}
	if os.Getenv(serverExecEnv) != "" {
		return fail("is unified-exec again (a copy of it, or a link to it), not the MCP server")
	}
	f, err := os.Open(path)
	if err != nil {
		return fail("cannot be started: " + err.Error())
	}
	defer f.Close()
	if why := untrustedServer(f, self); why != "" {
		return fail("is not started: " + why)
	}
	// The name itself, not a link: in a folder others write to, anyone's
	// link to a program of root's passed the checks above (red team 11
	// had /usr/bin/env run so).
	if st, err := os.Lstat(path); err != nil || st.Mode()&os.ModeSymlink != 0 {
		return fail("is not started: it is a link, not the program itself")
	} else if opened, err := f.Stat(); err != nil || !os.SameFile(st, opened) {
		return fail("is not started: it changed while it was checked")
	}
	run := path
	if runtime.GOOS == "linux" {
		// The file checked, whatever the name leads to by now.
		run = fmt.Sprintf("/proc/self/fd/%d", f.Fd())
	}
	os.Setenv(serverExecEnv, "1")
	err = exec(run, append([]string{path}, os.Args[1:]...), os.Environ())
	os.Unsetenv(serverExecEnv)
	return fail("cannot be started: " + err.Error())
}

// untrustedServer says why the program open in f may not be started for
// the program at self ("" when it may): it is this very program, not a
// regular file, owned by someone else than self's owner and root, or
// writable by others than its owner.
func untrustedServer(f *os.File, self string) string {
	st, err := f.Stat()
	if err != nil {
		return err.Error()
	}
	own, err := os.Stat(self)
	if err != nil {
		return err.Error()
	}
	if os.SameFile(st, own) {
		return "it is unified-exec itself (a link to it), not the MCP server"
	}
	if !st.Mode().IsRegular() {
		return "it is not a regular file"
	}
	if st.Mode().Perm()&0o022 != 0 {
		return fmt.Sprintf("others than its owner may write it (mode %v)", st.Mode().Perm())
	}
	uid, selfUID := fileOwner(st), fileOwner(own)
	if uid != 0 && uid != selfUID {
		return fmt.Sprintf("it belongs to user %d, neither this program's owner (%d) nor root", uid, selfUID)
	}
	return ""
}
