// Package mcpserver serves the unified-exec tools over MCP (the official
// go-sdk): exec_command, write_stdin, list_sessions, kill_session and
// read_log. It knows no processes: every call goes to the orchestrator,
// which decides, sandboxes, runs and audits.
//
// Approvals are asked by MCP elicitation: one field, decision (approve,
// approve_for_session, deny, abort). A client without elicitation gets a
// refusal that says which rule asked and how to allow the command.
// Progress notifications stream output while a call waits, and
// notifications/cancelled ends a wait at once (the session lives on).
// [ToolsJSON] gives the schemas to hosts that run their own model loop.
package mcpserver
