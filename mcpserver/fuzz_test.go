package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzDecodeArgs: any bytes decode or give an error naming the tool —
// never a panic — and unknown fields never pass.
func FuzzDecodeArgs(f *testing.F) {
	for _, s := range []string{`{"cmd":"ls"}`, `{"cmd":5}`, `{"cmd":"x","bogus":1}`, `null`, `[]`, `{"session_id":"1"}`, `{"yield_time_ms":-5}`, "{\"cmd\":\"\u0000\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var a execArgs
		err := decodeArgs("exec_command", json.RawMessage(raw), &a)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "exec_command: ") {
				t.Fatalf("error without the tool's name: %v", err)
			}
			return
		}
		var m map[string]any
		if json.Unmarshal(raw, &m) == nil {
			for k := range m {
				if !strings.Contains(knownArgs("exec_command"), k) {
					t.Fatalf("unknown argument %q accepted", k)
				}
			}
		}
	})
}

func FuzzCheckLine(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"x"}`, "garbage", `{"id":1}`, `[1,2]`, `"str"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if reply := check(line); reply != nil && !json.Valid(reply) {
			t.Fatalf("invalid reply %q", reply)
		}
	})
}
