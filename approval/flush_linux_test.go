package approval

import (
	"context"
	"testing"
	"time"

	"github.com/unified-exec/unified-exec/policy"
)

// TestTTYPrompterIgnoresTypedAhead: keys typed before the question (while
// the command ran) do not answer it: "y" typed ahead, then "n" at the
// prompt, is a no (red team 31: typed-ahead keys could answer "run
// WITHOUT the sandbox?").
func TestTTYPrompterIgnoresTypedAhead(t *testing.T) {
	p := answerAfter(t, "y\n", "n")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	q := Question{Kind: KindRetryUnsandboxed, Request: Request{Argv: []string{"/bin/bash", "-c", "make install"}}, Sandbox: policy.ModeDangerFullAccess}
	if a, err := p.Ask(ctx, q); err != nil || a != Deny {
		t.Fatalf("answer %v, %v: a key typed before the question answered it", a, err)
	}
}
