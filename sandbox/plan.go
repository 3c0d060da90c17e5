package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/unified-exec/unified-exec/policy"
)

// Plan is a compiled sandbox: plain data, computed without the kernel by
// [Compile], carried to the helper as JSON and enforced by [Apply].
//
// Landlock only grants, it never subtracts. "Read everything except the
// secret stores" is therefore carved: the plan grants read on every
// sibling along the path from / down to each denied path, never on the
// path itself or its ancestors. Protected paths inside writable roots
// cannot be carved the same way (a right granted on a directory reaches
// everything below it, .git included), so they are made read-only by a
// read-only bind mount in the session's own mount namespace.
type Plan struct {
	// Mode is read-only, workspace-write or danger-full-access.
	Mode string `json:"mode"`
	// Network allows sockets other than AF_UNIX.
	Network bool `json:"network"`
	// ReadDirs and ReadFiles are granted read and execute.
	ReadDirs  []string `json:"read_dirs"`
	ReadFiles []string `json:"read_files"`
	// WriteDirs are granted full access, renames and links included.
	WriteDirs []string `json:"write_dirs"`
	// Devices are granted read and write (files).
	Devices []string `json:"devices"`
	// Terminals are granted read, write and device ioctls; Apply adds the
	// session's own terminal.
	Terminals []string `json:"terminals"`
	// Protected stay read-only (bind-mounted read-only).
	Protected []string `json:"protected"`
	// DenyRead are the existing paths that cannot be read.
	DenyRead []string `json:"deny_read"`
	// Hide are the unreadable paths inside writable roots: a write grant
	// would reach them, so they are covered by an empty read-only mount in
	// the session's mount namespace.
	Hide []string `json:"hide"`
	// Notes are limitations a reader of the plan should know.
	Notes []string `json:"notes,omitempty"`
}

// Enforced reports whether the plan restricts anything.
func (p Plan) Enforced() bool { return p.Mode != policy.ModeDangerFullAccess }

// Marshal encodes the plan for the helper.
func (p Plan) Marshal() ([]byte, error) { return json.Marshal(p) }

// Unmarshal decodes a plan sent by Marshal.
func Unmarshal(b []byte) (Plan, error) {
	var p Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("sandbox: decoding the plan: %w", err)
	}
	if p.Mode != policy.ModeReadOnly && p.Mode != policy.ModeWorkspaceWrite && p.Mode != policy.ModeDangerFullAccess {
		return p, fmt.Errorf("sandbox: plan has unknown mode %q", p.Mode)
	}
	return p, nil
}

// String renders the plan for people: one grant per line, sorted.
func (p Plan) String() string {
	var b strings.Builder
	net := "off"
	if p.Network {
		net = "on"
	}
	fmt.Fprintf(&b, "mode: %s\nnetwork: %s\n", p.Mode, net)
	if !p.Enforced() {
		b.WriteString("no sandbox: full access to files, network and processes\n")
		return b.String()
	}
	list := func(name string, paths []string) {
		if len(paths) == 0 {
			return
		}
		fmt.Fprintf(&b, "%s:\n", name)
		for _, s := range paths {
			fmt.Fprintf(&b, "  %s\n", s)
		}
	}
	list("read-write", p.WriteDirs)
	list("read-only (protected)", p.Protected)
	list("unreadable", p.DenyRead)
	list("hidden by a mount (unreadable inside a writable root)", p.Hide)
	list("devices (read-write)", p.Devices)
	list("terminals (read-write, ioctl)", p.Terminals)
	b.WriteString("readable: everything else\n")
	if !p.Network {
		b.WriteString("blocked syscalls: socket/socketpair except AF_UNIX, ptrace, process_vm_readv/writev, io_uring_*\n")
	} else {
		b.WriteString("blocked syscalls: ptrace, process_vm_readv/writev, io_uring_*\n")
	}
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	return b.String()
}

// devices are the device files every sandboxed command may use.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}

// terminals may be ioctl'd: the controlling terminal and nested PTYs.
var terminals = []string{"/dev/tty", "/dev/ptmx", "/dev/pts"}

// Compile turns the [sandbox] table and a workspace into a Plan. It reads
// the filesystem (to resolve symlinks, list the siblings to carve, and
// find .git files) and $HOME / $TMPDIR, and changes nothing.
func Compile(p policy.Sandbox, workspace string) (Plan, error) {
	plan := Plan{Mode: p.Mode, Network: p.Network}
	switch p.Mode {
	case policy.ModeDangerFullAccess:
		plan.Network = true
		return plan, nil
	case policy.ModeReadOnly, policy.ModeWorkspaceWrite:
	case "":
		return plan, fmt.Errorf("sandbox: no mode: set [sandbox] mode to read-only, workspace-write or danger-full-access")
	default:
		return plan, fmt.Errorf("sandbox: unknown mode %q: use read-only, workspace-write or danger-full-access", p.Mode)
	}
	ws, err := realDir(workspace, "workspace")
	if err != nil {
		return plan, err
	}
	home := os.Getenv("HOME")

	// Writable roots.
	var roots []string
	if p.Mode == policy.ModeWorkspaceWrite {
		roots = append(roots, ws)
		for _, r := range p.WritableRoots {
			r = expand(r, home)
			if !filepath.IsAbs(r) {
				r = filepath.Join(ws, r)
			}
			d, err := realDir(r, "writable root")
			if err != nil {
				return plan, err
			}
			roots = append(roots, d)
		}
		if !p.ExcludeSlashTmp {
			if d, err := realDir("/tmp", "/tmp"); err == nil {
				roots = append(roots, d)
			}
		}
		if t := os.Getenv("TMPDIR"); t != "" && !p.ExcludeTmpdirEnvVar {
			if d, err := realDir(t, "$TMPDIR"); err == nil {
				roots = append(roots, d)
			}
		}
		if d, err := realDir("/dev/shm", "/dev/shm"); err == nil {
			roots = append(roots, d)
		}
		roots = dedupe(roots)
	}
	plan.WriteDirs = roots

	// Protected paths inside writable roots.
	var protected []string
	for _, root := range roots {
		for _, name := range p.Protected {
			var path string
			switch {
			case strings.HasPrefix(name, "~/") || filepath.IsAbs(name):
				path = expand(name, home)
				if !within(path, root) {
					continue
				}
			default:
				path = filepath.Join(root, name)
			}
			real, err := filepath.EvalSymlinks(path)
			if err != nil {
				continue // nothing there to protect
			}
			protected = append(protected, real)
			if filepath.Base(path) == ".git" {
				if gd := gitdirTarget(real); gd != "" {
					protected = append(protected, gd)
				}
			}
		}
	}
	plan.Protected = dedupe(protected)
	if p.Mode == policy.ModeWorkspaceWrite {
		plan.Notes = append(plan.Notes, "a protected name that does not exist yet (say .git before git init) is not protected")
	}

	// Read: everything but deny_read, carved.
	var deny []string
	for _, d := range p.DenyRead {
		d = expand(d, home)
		if !filepath.IsAbs(d) {
			continue
		}
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			continue
		}
		deny = append(deny, real)
	}
	plan.DenyRead = dedupe(deny)
	for _, d := range plan.DenyRead {
		for _, r := range plan.WriteDirs {
			if d == r || within(d, r) {
				plan.Hide = append(plan.Hide, d)
				break
			}
		}
	}
	plan.ReadDirs, plan.ReadFiles = carve("/", plan.DenyRead)
	if len(plan.DenyRead) > 0 {
		plan.Notes = append(plan.Notes, "files created later next to an unreadable path (in the same parent directories) are unreadable too")
	}
	plan.Devices = slices.Clone(devices)
	plan.Terminals = slices.Clone(terminals)
	return plan, nil
}

// carve returns the directories and files under root that together cover
// everything except the excluded paths (and nothing of them).
func carve(root string, excluded []string) (dirs, files []string) {
	var below []string
	for _, e := range excluded {
		if e == root {
			return nil, nil
		}
		if within(e, root) {
			below = append(below, e)
		}
	}
	if len(below) == 0 {
		st, err := os.Stat(root)
		switch {
		case err != nil:
			return nil, nil
		case st.IsDir():
			return []string{root}, nil
		default:
			return nil, []string{root}
		}
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, nil
	}
	for _, e := range entries {
		d, f := carve(filepath.Join(root, e.Name()), below)
		dirs = append(dirs, d...)
		files = append(files, f...)
	}
	return dirs, files
}

// within reports whether path is strictly below dir.
func within(path, dir string) bool {
	if dir == "/" {
		return path != "/" && strings.HasPrefix(path, "/")
	}
	return strings.HasPrefix(path, dir+"/")
}

func realDir(path, what string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("sandbox: %s %q: %w", what, path, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("sandbox: %s %q does not exist: create it or remove it from the policy", what, path)
	}
	st, err := os.Stat(real)
	if err != nil || !st.IsDir() {
		return "", fmt.Errorf("sandbox: %s %q is not a directory", what, path)
	}
	return real, nil
}

func expand(p, home string) string {
	if home != "" && (p == "~" || strings.HasPrefix(p, "~/")) {
		return filepath.Join(home, p[1:])
	}
	return p
}

// gitdirTarget follows a `.git` file ("gitdir: PATH", as in worktrees and
// submodules) to the directory that holds the repository.
func gitdirTarget(dotgit string) string {
	st, err := os.Stat(dotgit)
	if err != nil || st.IsDir() {
		return ""
	}
	b, err := os.ReadFile(dotgit)
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(b), "\n")
	target, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return ""
	}
	target = strings.TrimSpace(target)
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(dotgit), target)
	}
	real, err := filepath.EvalSymlinks(target)
	if err != nil {
		return ""
	}
	return real
}

func dedupe(s []string) []string {
	sort.Strings(s)
	return slices.Compact(s)
}
