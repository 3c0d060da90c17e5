package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// ToolDef is one tool: its name, description and JSON input schema.
type ToolDef struct {
	Name        string
	Description string
	Schema      map[string]any
}

func obj(required []string, props map[string]any) map[string]any {
	s := map[string]any{
		"type":                 "object",
		"properties":           props,
		"additionalProperties": false,
	}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func prop(typ, desc string) map[string]any { return map[string]any{"type": typ, "description": desc} }

// Tools are the five unified-exec tools, Codex-compatible.
var Tools = []ToolDef{
	{
		Name: "exec_command",
		Description: "Runs a shell command in the sandbox and returns its output. Writes are limited to the " +
			"workspace and temporary directories, and network access is off unless the policy allows it. " +
			"By default the command runs with pipes (stdin closed, stdout and stderr merged); use tty: true " +
			"for interactive programs (REPLs, editors, pagers, password prompts) and type into them with " +
			"write_stdin. If the command is still running when yield_time_ms is over, the response carries " +
			"a session ID; the session is kept until the command exits or kill_session ends it (or it sits " +
			"unused past the policy's session_timeout): poll it with write_stdin. To run a long-running server " +
			"or watcher, start it in its own exec_command with a short yield_time_ms and keep its session; do " +
			"not background it with & inside another command (a session's processes end with it). " +
			"Full-screen programs (vim, less, top) come back as their screen: rows of text and the cursor " +
			"position. Output beyond max_output_tokens is cut in the middle (the end is kept); read_log has it " +
			"by lines, also after the command exited.",
		Schema: obj([]string{"cmd"}, map[string]any{
			"cmd":                 prop("string", "Shell command to run."),
			"workdir":             prop("string", "Working directory, relative to the workspace (default: the workspace)."),
			"shell":               prop("string", "Shell to run cmd with: a shell listed in /etc/shells that the policy can read (bash, sh, dash, ...), by path or name (default /bin/bash)."),
			"login":               prop("boolean", "Run with the login shell's environment, as -lc would (default true): the profile runs once and is restored for each command; false uses a plain -c shell."),
			"tty":                 prop("boolean", "Run in a pseudo-terminal, for interactive programs; default false: pipes, stdin closed."),
			"rows":                prop("integer", "Terminal rows when tty is true (1–1000, default 24)."),
			"cols":                prop("integer", "Terminal columns when tty is true (1–1000, default 80)."),
			"yield_time_ms":       prop("integer", "How long to wait for output before returning, in ms (clamped to 250–30000, default 10000). A call returns earlier when the command exits, or when a tty program waits for input."),
			"max_output_tokens":   prop("integer", "Most tokens of output to return (default and maximum: the policy's limit, 10000 unless set; 0 returns only the truncation marker)."),
			"timeout_ms":          prop("integer", "End the command's whole process tree once it has run this many ms (default: no timeout); the response says so."),
			"sandbox_permissions": map[string]any{"type": "string", "enum": []string{"use_default", "require_escalated"}, "description": "require_escalated asks the user to run the command without the sandbox; give a justification."},
			"justification":       prop("string", "Why the command needs to run without the sandbox; shown to the user."),
		}),
	},
	{
		Name: "write_stdin",
		Description: "Types characters or keys into a running tty session and returns the output that follows; " +
			"with no chars or keys it polls a session (tty or not) for new output and its exit. A turn ends " +
			"early, saying \"Process is waiting for input\", once the program is back waiting for input. " +
			"Sessions started without tty have no stdin: start them again with tty: true.",
		Schema: obj([]string{"session_id"}, map[string]any{
			"session_id":        prop("integer", "Session ID from exec_command."),
			"chars":             prop("string", "Characters to write (may be empty: a poll). Use \\n to press Enter."),
			"keys":              map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Keys to send before chars, tmux-style: Enter, C-c, C-d, Up, Down, Tab, Escape, M-x, F5, PageUp, S-Tab."},
			"paste":             prop("boolean", "Wrap chars in bracketed-paste markers."),
			"rows":              prop("integer", "Resize the terminal to this many rows first (1–1000); the program gets SIGWINCH."),
			"cols":              prop("integer", "Resize the terminal to this many columns first (1–1000)."),
			"yield_time_ms":     prop("integer", "How long to wait for output, in ms (clamped to 250–30000, default 250)."),
			"max_output_tokens": prop("integer", "Most tokens of output to return (default and maximum: the policy's limit; 0 returns only the truncation marker)."),
		}),
	},
	{
		Name: "list_sessions",
		Description: "Lists the sessions: id, status (running / exited N), pid, tty, age, cwd, command. A command " +
			"that exited stays listed, readable with read_log, until unused for 30 minutes or pruned for room. " +
			"When a session nobody is polling exits, clients that enabled logging (logging/setLevel) also " +
			"get a notification.",
		Schema: obj(nil, map[string]any{}),
	},
	{
		Name:        "kill_session",
		Description: "Ends a session's whole process tree (SIGTERM, then SIGKILL) and returns its final output and exit status.",
		Schema: obj([]string{"session_id"}, map[string]any{
			"session_id": prop("integer", "Session ID."),
		}),
	},
	{
		Name: "read_log",
		Description: "Reads a session's transcript by lines, also after it exited (the id of a command that exited " +
			"at once is in list_sessions, or in the note of a response whose output was cut). The log keeps " +
			"about the last 1 MiB: an offset before the kept part says where the kept part starts. offset and " +
			"limit count lines; limit alone gives the last N lines.",
		Schema: obj([]string{"session_id"}, map[string]any{
			"session_id": prop("integer", "Session ID."),
			"offset":     prop("integer", "First line, counting from 0."),
			"limit":      prop("integer", "Number of lines (default 200)."),
		}),
	},
}

// ToolsJSON renders the tool definitions for hosts: "mcp" gives MCP tool
// objects (name, description, inputSchema); "openai" gives function tools
// for the Chat Completions and Responses APIs.
func ToolsJSON(format string) ([]byte, error) {
	var out []any
	for _, t := range Tools {
		switch format {
		case "mcp":
			out = append(out, map[string]any{"name": t.Name, "description": t.Description, "inputSchema": t.Schema})
		case "openai":
			out = append(out, map[string]any{"type": "function", "function": map[string]any{
				"name": t.Name, "description": t.Description, "parameters": t.Schema,
			}})
		default:
			return nil, fmt.Errorf("unknown format %q: use mcp or openai", format)
		}
	}
	return json.MarshalIndent(out, "", "  ")
}

// decodeArgs decodes tool arguments strictly into v: unknown fields and
// wrong types are errors that name the field.
func decodeArgs(tool string, raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage("{}")
	}
	// encoding/json matches field names case-insensitively: check the
	// names exactly first, so "Cmd" is as unknown as "bogus".
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) == nil {
		known := knownArgs(tool)
		names := make([]string, 0, len(fields))
		for k := range fields {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if !slices.Contains(strings.Split(known, ", "), k) {
				return fmt.Errorf("%s: unknown argument %q (known: %s)", tool, k, known)
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return fmt.Errorf("%s: arguments must be a JSON object, got %s", tool, te.Value)
		}
		return fmt.Errorf("%s: argument %q must be %s, got %s", tool, te.Field, jsonKind(te.Type.Kind().String()), te.Value)
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("%s: unknown argument %s (known: %s)", tool, f, knownArgs(tool))
	}
	return fmt.Errorf("%s: arguments are not valid JSON: %v", tool, err)
}

func jsonKind(k string) string {
	switch {
	case strings.HasPrefix(k, "int"), strings.HasPrefix(k, "uint"):
		return "an integer"
	case strings.HasPrefix(k, "float"):
		return "a number"
	case k == "bool":
		return "a boolean"
	case k == "string":
		return "a string"
	case k == "slice":
		return "an array"
	case k == "ptr":
		return "of the documented type"
	}
	return "of the documented type"
}

func knownArgs(tool string) string {
	for _, t := range Tools {
		if t.Name == tool {
			props := t.Schema["properties"].(map[string]any)
			names := make([]string, 0, len(props))
			for n := range props {
				names = append(names, n)
			}
			sort.Strings(names)
			return strings.Join(names, ", ")
		}
	}
	return ""
}
