//go:build linux && cgo

package main

/*
// This program carries no MCP server: the relay (cmd/internal/cli,
// relay_linux.go) makes a namespace only to wrap a command.
int ue_no_server = 1;
*/
import "C"
