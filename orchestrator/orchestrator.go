package orchestrator

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/unified-exec/unified-exec/ptyrun"

	"github.com/unified-exec/unified-exec/unifiedexec"
)

// Config sets up an [Orchestrator].
type Config struct {
	// Manager runs the commands; nil creates one for Workspace.
	Manager   *unifiedexec.Manager
	Workspace string
}

// Orchestrator takes one request through approval, sandbox choice, spawn,
// denial check and retry.
type Orchestrator struct {
	cfg Config
	m   *unifiedexec.Manager
}

// New returns an Orchestrator for cfg.
func New(cfg Config) (*Orchestrator, error) {
	m := cfg.Manager
	if m == nil {
		m = unifiedexec.New(unifiedexec.Config{Workspace: cfg.Workspace})
	}
	return &Orchestrator{cfg: cfg, m: m}, nil
}

// Request is one exec_command call with its approval context.
type Request struct {
	unifiedexec.ExecRequest
	// Escalate asks to run without the sandbox (sandbox_permissions =
	// require_escalated); Justification is shown to the user.
	Escalate      bool
	Justification string
}

// Exec runs one request.
func (o *Orchestrator) Exec(ctx context.Context, req Request) (*unifiedexec.Response, error) {
	return o.m.Exec(ctx, req.ExecRequest)
}

// Manager is the session manager behind the orchestrator.
func (o *Orchestrator) Manager() *unifiedexec.Manager { return o.m }

// Close kills every session.
func (o *Orchestrator) Close() { o.m.Close() }

// RunRequest is one command of the wrapper (`unified-exec -- CMD...`).
type RunRequest struct {
	Argv    []string
	Workdir string
	// Output receives the command's output live (stdout and stderr merged).
	Output io.Writer
}

// Run runs argv to completion, streaming its output, and returns its exit
// code.
func (o *Orchestrator) Run(ctx context.Context, req RunRequest) (int, error) {
	p, err := ptyrun.Start(ptyrun.Spec{
		Argv:   req.Argv,
		Dir:    req.Workdir,
		Env:    unifiedexec.BuildEnv(os.Environ(), false),
		Output: req.Output,
		Helper: o.helper(nil),
	})
	if err != nil {
		return 0, err
	}
	select {
	case <-p.Done():
	case <-ctx.Done():
		p.Kill(2 * time.Second)
	}
	return p.ExitStatus().Code, nil
}

func (o *Orchestrator) helper(payload []byte) *ptyrun.Helper {
	iso := o.m.Isolated()
	if payload == nil && !iso {
		return nil
	}
	return &ptyrun.Helper{Payload: payload, Isolate: iso}
}
