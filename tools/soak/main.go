//go:build unix

// Command soak drives a real unified-exec MCP server with a random mix of
// exec_command calls and checks, at the end, that nothing leaked: file
// descriptors, goroutines, child processes, zombies, and that the server's
// RSS after warm-up grew by less than 10 %. Run it with scripts/soak.
package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/unified-exec/unified-exec/internal/proctree"
)

func main() {
	bin := os.Args[1]
	calls := 10000
	if v, err := strconv.Atoi(os.Getenv("SOAK_CALLS")); err == nil && v > 0 {
		calls = v
	}
	dir, _ := os.MkdirTemp("", "ue-soak-")
	defer os.RemoveAll(dir)
	stats := dir + "/stats"
	cmd := exec.Command(bin, "--workspace", dir)
	cmd.Env = append(os.Environ(), "UNIFIED_EXEC_STATS="+stats)
	cmd.Stderr = os.Stderr
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "soak", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		fail("connect: %v", err)
	}
	// Signals go to the process we started; it relays them. What is
	// measured is the process that serves (see proctree.ServingPid).
	relay := cmd.Process.Pid
	pid := proctree.ServingPid(relay)

	var mu sync.Mutex
	var live []int
	call := func(name string, args map[string]any) string {
		ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			fail("%s: %v", name, err)
		}
		var b strings.Builder
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				b.WriteString(t.Text)
			}
		}
		return b.String()
	}
	session := func(text string) int {
		var id int
		for _, l := range strings.Split(text, "\n") {
			if _, err := fmt.Sscanf(l, "Process running with session ID %d", &id); err == nil {
				return id
			}
		}
		return 0
	}
	pick := func(remove bool) int {
		mu.Lock()
		defer mu.Unlock()
		if len(live) == 0 {
			return 0
		}
		i := rand.IntN(len(live))
		id := live[i]
		if remove {
			live = append(live[:i], live[i+1:]...)
		}
		return id
	}
	add := func(id int) {
		if id == 0 {
			return
		}
		mu.Lock()
		live = append(live, id)
		n := len(live)
		mu.Unlock()
		for n > 56 { // stay under 64 live, as an agent should
			if old := pick(true); old != 0 {
				call("kill_session", map[string]any{"session_id": old})
			}
			mu.Lock()
			n = len(live)
			mu.Unlock()
		}
	}

	warm := max(calls/5, min(calls/2, 500))
	settle := func() {
		syscall.Kill(relay, syscall.SIGUSR1)
		time.Sleep(300 * time.Millisecond)
	}
	var rssWarm int
	start := time.Now()
	var wg sync.WaitGroup
	jobs := make(chan int)
	for w := 0; w < 4; w++ {
		wg.Go(func() {
			for i := range jobs {
				one(i, call, session, add, pick)
			}
		})
	}
	for i := 0; i < calls; i++ {
		if i == warm {
			close(jobs)
			wg.Wait()
			settle()
			rssWarm = status(pid, "VmRSS")
			jobs = make(chan int)
			for w := 0; w < 4; w++ {
				wg.Go(func() {
					for i := range jobs {
						one(i, call, session, add, pick)
					}
				})
			}
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	for id := pick(true); id != 0; id = pick(true) {
		call("kill_session", map[string]any{"session_id": id})
	}
	time.Sleep(time.Second)
	settle()
	rss := status(pid, "VmRSS")
	fds := countDir(fmt.Sprintf("/proc/%d/fd", pid))
	kids, zombies := children(pid)
	g, err := os.ReadFile(stats)
	if err != nil {
		fail("reading the server's stats: %v", err)
	}
	goroutines, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(string(g), "goroutines")))
	if err != nil {
		fail("the server's stats %q do not give a goroutine count: %v", g, err)
	}
	growth := 100 * float64(rss-rssWarm) / float64(rssWarm)
	cs.Close()
	ok := kids == 0 && zombies == 0 && fds <= 16 && goroutines <= 40 && growth < 10
	verdict := "PASS"
	if !ok {
		verdict = "FAIL"
	}
	fmt.Printf("soak: %d calls in %s; children %d, zombies %d, fds %d, goroutines %d, RSS %d KiB after warm-up -> %d KiB (%+.1f%%): %s\n",
		calls, time.Since(start).Round(time.Second), kids, zombies, fds, goroutines, rssWarm, rss, growth, verdict)
	if !ok {
		os.Exit(1)
	}
}

// one runs call number i: a random kind of work.
func one(i int, call func(string, map[string]any) string, session func(string) int, add func(int), pick func(bool) int) {
	tty := rand.IntN(2) == 0
	switch r := rand.IntN(100); {
	case r < 50:
		call("exec_command", map[string]any{"cmd": fmt.Sprintf("echo call-%d", i), "login": false, "tty": tty})
	case r < 62:
		add(session(call("exec_command", map[string]any{"cmd": "sleep 30", "login": false, "tty": tty, "yield_time_ms": 250})))
	case r < 74:
		if id := pick(false); id != 0 {
			call("write_stdin", map[string]any{"session_id": id, "yield_time_ms": 250})
		}
	case r < 84:
		if id := pick(true); id != 0 {
			call("kill_session", map[string]any{"session_id": id})
		}
	case r < 90:
		call("exec_command", map[string]any{"cmd": "head -c 3000000 /dev/zero | tr '\\0' x; echo", "login": false, "max_output_tokens": 500})
	case r < 96:
		id := session(call("exec_command", map[string]any{"cmd": "sleep 30", "login": false, "tty": true, "yield_time_ms": 250}))
		if id != 0 {
			call("write_stdin", map[string]any{"session_id": id, "keys": []string{"C-c"}, "yield_time_ms": 1000})
		}
	default:
		call("list_sessions", map[string]any{})
	}
}

func status(pid int, field string) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, field+":") {
			n, _ := strconv.Atoi(strings.Fields(l)[1])
			return n
		}
	}
	return 0
}

func countDir(d string) int {
	e, _ := os.ReadDir(d)
	return len(e)
}

func children(pid int) (kids, zombies int) {
	for _, c := range proctree.Children(pid) {
		kids++
		if c.State == "Z" {
			zombies++
		}
	}
	return kids, zombies
}

func fail(format string, a ...any) {
	fmt.Printf("soak: FAIL: "+format+"\n", a...)
	os.Exit(1)
}
