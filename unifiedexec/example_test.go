//go:build linux

package unifiedexec_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/unified-exec/unified-exec/unifiedexec"
)

func ExampleManager() {
	m := unifiedexec.New(unifiedexec.Config{})
	defer m.Close()
	ctx := context.Background()
	login := false

	// A command that ends within its window.
	r, err := m.Exec(ctx, unifiedexec.ExecRequest{Cmd: "echo hello", Login: &login})
	if err != nil {
		panic(err)
	}
	fmt.Printf("exit %d: %q\n", *r.ExitCode, r.Output)

	// An interactive one: the turn ends at its prompt.
	r, err = m.Exec(ctx, unifiedexec.ExecRequest{Cmd: `read -p 'name? ' n; echo "hi $n"`, Login: &login, TTY: true, Yield: 20 * time.Second})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q %s\n", r.Output, strings.Join(r.Notes, "; "))
	r, err = m.Write(ctx, unifiedexec.WriteRequest{SessionID: r.SessionID, Chars: "bob\n", Yield: 20 * time.Second})
	if err != nil {
		panic(err)
	}
	fmt.Printf("exit %d: %q\n", *r.ExitCode, r.Output)
	// Output:
	// exit 0: "hello\n"
	// "name? " Process is waiting for input
	// exit 0: "bob\nhi bob\n"
}

func ExampleTruncate() {
	fmt.Println(unifiedexec.Truncate("one\ntwo\nthree\nfour\nfive\nsix\n", 4))
	// Output:
	// Total output lines: 6
	//
	// one
	// two
	// …4 tokens truncated…
	// six
}
