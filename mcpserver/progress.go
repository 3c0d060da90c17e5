package mcpserver

import (
	"context"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progressChunk bounds one progress notification's text.
const progressChunk = 8 << 10

// progressSender turns output arriving during a call's window into
// progress notifications: coalesced every 100 ms, at most 8 KiB each.
// Its goroutine is owned by the call and ends with end().
type progressSender struct {
	observe func([]byte)
	end     func()
}

func (s *Server) progress(ctx context.Context, req *mcp.CallToolRequest) progressSender {
	tok := req.Params.GetProgressToken()
	if tok == nil {
		return progressSender{end: func() {}}
	}
	var (
		mu   sync.Mutex
		buf  []byte
		n    float64
		wake = make(chan struct{}, 1)
		done = make(chan struct{})
		over = make(chan struct{})
	)
	flush := func() {
		for {
			mu.Lock()
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
			p := n
			mu.Unlock()
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: p, Message: msg})
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
				big := len(buf) >= progressChunk
				mu.Unlock()
				if big {
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
		end: func() {
			close(done)
			<-over
		},
	}
}
