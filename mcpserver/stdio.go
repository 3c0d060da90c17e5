package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxLine bounds one inbound JSON-RPC line.
const maxLine = 64 << 20

// Transport returns a newline-delimited JSON-RPC transport over r and w
// that survives bad input: a line that is not JSON gets a parse error
// (-32700), a JSON value that is not a JSON-RPC message gets an invalid
// request error (-32600), and the server keeps serving. The go-sdk's own
// stdio transport closes the connection on the first such line.
func Transport(r io.Reader, w io.Writer) mcp.Transport {
	lw := &lockedWriter{w: w}
	return &mcp.IOTransport{
		Reader:        io.NopCloser(&lineFilter{r: bufio.NewReaderSize(r, 64<<10), w: lw}),
		Writer:        lw,
		MaxLineLength: maxLine,
	}
}

// lockedWriter serializes whole-message writes of the SDK and the filter.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }

type lineFilter struct {
	r       *bufio.Reader
	w       *lockedWriter
	pending []byte
}

func (f *lineFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		line, err := f.readLine()
		if len(bytes.TrimSpace(line)) > 0 {
			if reply := check(line); reply != nil {
				f.w.Write(reply)
			} else {
				if line[len(line)-1] != '\n' {
					line = append(line, '\n')
				}
				f.pending = line
			}
		}
		if err != nil {
			if len(f.pending) > 0 {
				break
			}
			return 0, err
		}
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// readLine reads one line; a line longer than maxLine is consumed and
// replaced by an invalid marker so it gets an error reply.
func (f *lineFilter) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := f.r.ReadSlice('\n')
		if len(line)+len(chunk) <= maxLine {
			line = append(line, chunk...)
		} else {
			line = []byte("\x00too long")
		}
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

// check returns an error reply for a line that is not a JSON-RPC
// message, or nil.
func check(line []byte) []byte {
	trimmed := bytes.TrimSpace(line)
	if !json.Valid(trimmed) {
		return errorReply(nil, -32700, "Parse error: the line is not valid JSON; send one JSON-RPC message per line")
	}
	if trimmed[0] == '[' {
		return nil // a batch: the SDK judges it
	}
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  *string         `json:"method"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if trimmed[0] != '{' || json.Unmarshal(trimmed, &m) != nil {
		return errorReply(nil, -32600, "Invalid Request: a JSON-RPC message must be a JSON object")
	}
	if m.JSONRPC != "2.0" || (m.Method == nil && m.Result == nil && m.Error == nil) {
		return errorReply(m.ID, -32600, `Invalid Request: expected "jsonrpc": "2.0" and a "method" (or a result or error)`)
	}
	return nil
}

func errorReply(id json.RawMessage, code int, msg string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"error":   map[string]any{"code": code, "message": msg},
	})
	return append(b, '\n')
}
