package orchestrator

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/unified-exec/unified-exec/policy"
)

// event is one line of the audit log.
type event struct {
	Time       string `json:"time"`
	Event      string `json:"event"` // decision, answer, approved, refused, spawn, denial, retry-question, retry, exit, running, git
	Session    int    `json:"session,omitempty"`
	Command    string `json:"command"`
	Cwd        string `json:"cwd"`
	TTY        bool   `json:"tty,omitempty"`
	Decision   string `json:"decision,omitempty"`
	By         string `json:"by,omitempty"` // rule, safe-list, mode, cache, user
	Rule       int    `json:"rule_line,omitempty"`
	Reason     string `json:"reason,omitempty"`
	Answer     string `json:"answer,omitempty"`
	Sandbox    string `json:"sandbox,omitempty"`
	Denial     string `json:"denial,omitempty"`
	Retry      bool   `json:"retry,omitempty"`
	ExitCode   *int   `json:"exit_code,omitempty"`
	DurationMS int64  `json:"duration_ms,omitempty"`
	// Git lists what appeared in a repository that makes git run a
	// program (event git).
	Git []string `json:"git,omitempty"`
}

// auditLog appends one JSON line per event. A nil log writes nothing.
type auditLog struct {
	required bool
	path     string

	// mu guards f and warned.
	mu     sync.Mutex
	f      *os.File
	warned bool // a failed write was reported on stderr
}

func openAudit(a policy.Audit) (*auditLog, error) {
	if a.Path == "" {
		return nil, nil
	}
	l := &auditLog{required: a.Required, path: a.Path}
	f, err := os.OpenFile(a.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		if a.Required {
			return nil, fmt.Errorf("audit log %q cannot be opened: %v; [audit] required = true, so no command may run (fix the path or set required = false)", a.Path, err)
		}
		fmt.Fprintf(os.Stderr, "unified-exec: audit log %q cannot be opened: %v; continuing without it (required = false)\n", a.Path, err)
		return nil, nil
	}
	l.f = f
	return l, nil
}

// write appends ev; with required = true a failed write is an error that
// stops the request.
func (l *auditLog) write(ev event) error {
	if l == nil {
		return nil
	}
	ev.Time = time.Now().UTC().Format(time.RFC3339Nano)
	b, _ := json.Marshal(ev)
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	if _, err := l.f.Write(b); err != nil {
		if l.required {
			return fmt.Errorf("audit log %q cannot be written: %v; [audit] required = true, so the command was not run", l.path, err)
		}
		if !l.warned {
			// Said once: the log goes on being tried, the server goes on.
			l.warned = true
			fmt.Fprintf(os.Stderr, "unified-exec: audit log %q cannot be written: %v; events are being lost (required = false)\n", l.path, err)
		}
	}
	return nil
}

func (l *auditLog) close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}
