package integration

import (
	"bytes"
	"errors"
	"os/exec"
	"testing"
)

// wrap runs `unified-exec [flags] -- argv...` and returns its combined
// output and exit code.
func wrap(t *testing.T, flags []string, argv ...string) (string, int) {
	t.Helper()
	args := append(append(append([]string{}, flags...), "--"), argv...)
	cmd := exec.Command(binary, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), 0
}
