package orchestrator

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/unified-exec/unified-exec/approval"
	"github.com/unified-exec/unified-exec/policy"
)

// etcShells lists the system's shells; a variable for tests.
var etcShells = "/etc/shells"

// fallbackShells are the shells accepted where /etc/shells cannot be read
// (some minimal container images have none).
var fallbackShells = []string{"/bin/sh", "/usr/bin/sh", "/bin/bash", "/usr/bin/bash", "/bin/dash", "/usr/bin/dash"}

// listedShells returns the shells of /etc/shells, or fallbackShells.
func listedShells() []string {
	f, err := os.Open(etcShells)
	if err != nil {
		return fallbackShells
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l != "" && !strings.HasPrefix(l, "#") && filepath.IsAbs(l) {
			out = append(out, filepath.Clean(l))
		}
	}
	return out
}

// resolveShell returns the program to run as the shell named name (""
// means /bin/bash): a shell listed in /etc/shells — by its path, a path to
// the same file, or its base name ("sh") — that the rules can read
// ([approval.ParsesShell]: bash, sh, dash, ...; not rbash, fish, tmux), and
// that lies outside every directory a sandboxed command may write (so
// neither it nor the link to it can be a file the agent made). Anything
// else is a *RefusedError saying which shells are accepted.
func (o *Orchestrator) resolveShell(name string, sp policy.Sandbox) (string, error) {
	if name == "" {
		name = "/bin/bash"
	}
	listed := listedShells()
	refuse := func(format string, a ...any) error {
		var ok []string
		for _, s := range listed {
			if approval.ParsesShell(s) && o.inWritableRoot(s, sp) == "" {
				ok = append(ok, s)
			}
		}
		return &RefusedError{Reason: "refused: " + fmt.Sprintf(format, a...) + "; use one of " + strings.Join(ok, ", ") + " (or leave shell out for /bin/bash)"}
	}
	shell := ""
	switch {
	case !strings.ContainsRune(name, '/'):
		for _, s := range listed {
			if filepath.Base(s) == name && isExecutable(s) {
				shell = s
				break
			}
		}
	case filepath.IsAbs(name):
		clean := filepath.Clean(name)
		real, err := filepath.EvalSymlinks(clean)
		for _, s := range listed {
			if s == clean {
				shell = clean
				break
			}
			if r, err2 := filepath.EvalSymlinks(s); err == nil && err2 == nil && r == real {
				shell = clean
				break
			}
		}
	}
	if shell == "" {
		return "", refuse("shell %q is not a shell listed in %s", name, etcShells)
	}
	if !isExecutable(shell) {
		return "", refuse("shell %q is not an executable file", name)
	}
	if !approval.ParsesShell(shell) {
		return "", refuse("shell %q cannot be read by the policy's rules, so no rule would see its commands", name)
	}
	if root := o.inWritableRoot(shell, sp); root != "" {
		return "", refuse("shell %q lies in %s, which commands may write", name, root)
	}
	return shell, nil
}

// shellLine checks the shell of a wrapped command: when argv is a shell
// given a script (the rules judged the script) or names a listed shell,
// that shell must be one [Orchestrator.resolveShell] accepts, and argv
// runs it by its listed path (not whatever the command's PATH finds).
func (o *Orchestrator) shellLine(argv []string, sp policy.Sandbox) ([]string, error) {
	_, line := approval.ShellScript(argv)
	named := slices.ContainsFunc(listedShells(), func(s string) bool { return filepath.Base(s) == filepath.Base(argv[0]) })
	if !line && !named {
		return argv, nil
	}
	shell, err := o.resolveShell(argv[0], sp)
	if err != nil {
		return nil, err
	}
	argv = slices.Clone(argv)
	argv[0] = shell
	return argv, nil
}

// inWritableRoot returns the directory a sandboxed command may write that
// holds path or the file it resolves to, or "". The roots are those of
// workspace-write whatever the mode, and /tmp, $TMPDIR and /dev/shm even
// when the policy excludes them: a shell found there is refused.
func (o *Orchestrator) inWritableRoot(path string, sp policy.Sandbox) string {
	roots := []string{o.ws, "/tmp", "/dev/shm", os.TempDir()}
	home := os.Getenv("HOME")
	for _, r := range sp.WritableRoots {
		if strings.HasPrefix(r, "~/") && home != "" {
			r = filepath.Join(home, r[2:])
		}
		if !filepath.IsAbs(r) {
			r = filepath.Join(o.ws, r)
		}
		roots = append(roots, r)
	}
	paths := []string{filepath.Clean(path)}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		paths = append(paths, real)
	}
	for _, r := range roots {
		cands := []string{filepath.Clean(r)}
		if real, err := filepath.EvalSymlinks(r); err == nil {
			cands = append(cands, real)
		}
		for _, root := range cands {
			for _, p := range paths {
				if p == root || strings.HasPrefix(p, root+string(filepath.Separator)) || root == "/" {
					return r
				}
			}
		}
	}
	return ""
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}
