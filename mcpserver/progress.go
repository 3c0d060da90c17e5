package mcpserver

import (
	"context"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progressChunk bounds one progress notification's text.
const progressChunk = 8 << 10

// progressSender turns output arriving during a call's window into
// progress notifications: coalesced every 100 ms, at most 8 KiB each.
// An exec_command's first notification names its session ("Process
// running with session ID N", and session_id in _meta, as every later
// one has): a client that cancels the call learns the session from it.
// Its goroutine is owned by the call and ends with end().
type progressSender struct {
	observe func([]byte)
	started func(id int)
	end     func()
}

func (s *Server) progress(ctx context.Context, req *mcp.CallToolRequest) progressSender {
	tok := req.Params.GetProgressToken()
	if tok == nil {
		return progressSender{end: func() {}}
	}
	// Sent also once the call is cancelled: the session's id must reach
	// the client.
	ctx = context.WithoutCancel(ctx)
	var (
		mu   sync.Mutex
		buf  []byte
		n    float64
		id   int  // the session's, once known
		told bool // the id was sent
		wake = make(chan struct{}, 1)
		done = make(chan struct{})
		over = make(chan struct{})
	)
	send := func(p float64, msg string, id int) {
		params := &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: p, Message: msg}
		if id != 0 {
			params.Meta = mcp.Meta{"session_id": id}
		}
		req.Session.NotifyProgress(ctx, params)
	}
	flush := func() {
		for {
			mu.Lock()
			if id != 0 && !told {
				told = true
				n++
				p, sid := n, id
				mu.Unlock()
				send(p, fmt.Sprintf("Process running with session ID %d", sid), sid)
				continue
			}
			if len(buf) == 0 {
				mu.Unlock()
				return
			}
			k := min(len(buf), progressChunk)
			for k < len(buf) && k > 0 && !utf8.RuneStart(buf[k]) {
				k--
			}
			msg := string(buf[:k])
			buf = buf[k:]
			n++
			p, sid := n, id
			mu.Unlock()
			send(p, msg, sid)
		}
	}
	go func() {
		defer close(over)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				flush()
				return
			case <-tick.C:
				flush()
			case <-wake:
				mu.Lock()
				now := len(buf) >= progressChunk || id != 0 && !told
				mu.Unlock()
				if now {
					flush()
				}
			}
		}
	}()
	return progressSender{
		observe: func(b []byte) {
			mu.Lock()
			if len(buf) < 4*progressChunk { // a flood is cut, the result has it all
				buf = append(buf, b...)
			}
			mu.Unlock()
			select {
			case wake <- struct{}{}:
			default:
			}
		},
		started: func(sid int) {
			mu.Lock()
			if sid != id { // a retry without the sandbox is a new session
				id, told = sid, false
			}
			mu.Unlock()
			select {
			case wake <- struct{}{}:
			default:
			}
		},
		end: func() {
			close(done)
			<-over
		},
	}
}
