package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/unified-exec/unified-exec/policy"
)

// Access names the Landlock rights a [Grant] gives.
type Access string

// The rights a grant can give. Landlock rights on a directory reach every
// file below it; a grant on a file gives only the file rights.
const (
	// AccessRead reads and executes files and lists directories.
	AccessRead Access = "read"
	// AccessReadWrite is every file-system right: create, remove, write,
	// truncate, and rename or link across directories ("refer").
	AccessReadWrite Access = "read-write"
	// AccessTerminal is read-write plus device ioctls, for terminals.
	AccessTerminal Access = "terminal"
)

// Grant is one Landlock rule: Access on Path (and, for a directory,
// everything below it).
type Grant struct {
	Path   string `json:"path"`
	Dir    bool   `json:"dir"`
	Access Access `json:"access"`
}

// Plan is a compiled sandbox: plain data, computed without the kernel by
// [Compile], carried to the helper by [Plan.Marshal] and enforced by
// [Apply].
//
// Landlock only grants; it never subtracts. "Read everything except the
// DenyRead paths" is carved (see [Plan.Read]). "Write in the writable
// roots except the Protected paths" is enforced one of two ways, chosen
// by Apply:
//
//   - With a mount namespace of its own (the helper is PID 1 of a new PID
//     and mount namespace, or the forking thread's own), everything but
//     the writable roots is mounted read-only (Landlock does not govern
//     chmod, chown, utimes or xattrs), the writable roots nosuid and
//     nodev; the writable roots are granted whole, each Protected path and
//     ReadOnlyFiles entry is bind-mounted read-only over itself, and each
//     DenyRead path inside a writable root is covered by an empty
//     read-only mount. Landlock then forbids the command to unmount them.
//   - Without one, [Plan.Write] is used: the writable roots carved around
//     the Protected and DenyRead paths. The price: a directory on the way
//     to a protected path (the workspace itself, for .git) gets no
//     directory rights, so no new entry can be created, removed or
//     renamed directly in it; files and directories that already exist
//     there stay fully writable.
type Plan struct {
	// Mode is read-only, workspace-write or danger-full-access.
	Mode string `json:"mode"`
	// Network allows sockets of every family; off, only AF_UNIX works.
	Network bool `json:"network"`
	// Egress (allowlist mode, with Network off): the command runs in the
	// egress network namespace, which has only loopback; sockets of the
	// families that namespace isolates are allowed (see egressFamilies).
	Egress bool `json:"egress,omitempty"`
	// NotifyFD, when set (network off), is the descriptor of the helper
	// on which [Apply] sends the listener of the filter that refuses
	// sockets, so that each refusal is counted (see [NetWatch]).
	// [ApplyThread] ignores it.
	NotifyFD int `json:"notify_fd,omitempty"`

	// WritableRoots are the resolved writable directories, none inside
	// another. Empty in read-only mode.
	WritableRoots []string `json:"writable_roots,omitempty"`
	// Protected are the existing paths inside writable roots that stay
	// read-only (resolved; .git files add their gitdir and commondir).
	Protected []string `json:"protected,omitempty"`
	// DenyRead are the existing paths that cannot be read (resolved).
	DenyRead []string `json:"deny_read,omitempty"`
	// ReadOnlyFiles are files inside writable roots that commands must
	// not change: the policy file in use and the audit log (resolved). In
	// a mount namespace each is bound read-only over itself and the
	// folders on the way to it from its writable root are pinned, so
	// none can be renamed; without one, Write is carved around them. See
	// [Plan.AddReadOnlyFiles].
	ReadOnlyFiles []string `json:"read_only_files,omitempty"`
	// Git is the [sandbox] git setting in force: "commit" or "read-only".
	Git string `json:"git,omitempty"`
	// GitDirs are the gitdirs and common directories of the repositories
	// found inside writable roots (resolved). With git = "commit" they
	// are writable in a mount namespace but for their Protected paths
	// (hooks/, config, ...), and carved whole, so read-only, without one.
	GitDirs []string `json:"git_dirs,omitempty"`
	// NestedRoots are writable roots inside another one (the workspace
	// under /tmp): granted with it, and pinned by the mount layer, so that
	// no command can move one away and put a link in its place.
	NestedRoots []string `json:"nested_roots,omitempty"`
	// MakeDirs are absent directories git would take hooks from (a
	// gitdir's hooks/, the directory a core.hooksPath names): Apply makes
	// each, empty, before the mounts, so that it can be covered.
	MakeDirs []string `json:"make_dirs,omitempty"`
	// MakeFiles are absent files git would read as configuration (a
	// gitdir's config): Apply makes each, empty, for the same reason.
	MakeFiles []string `json:"make_files,omitempty"`
	// Sockets are the existing Unix sockets (or directories of them)
	// through which a command could act outside the sandbox: the user's
	// agents and the host's services (see serviceSockets). Landlock does
	// not govern connecting to a socket here, so they are covered in the
	// command's mount namespace, as the DenyRead paths are.
	Sockets []string `json:"sockets,omitempty"`

	// Read carves "everything except DenyRead": along the path from / to
	// each unreadable path, every sibling entry is granted read; the
	// directories on the path get nothing, since listing one would list
	// the unreadable path too (Landlock rights are inherited): `ls /` and
	// `ls ~` fail when ~/.ssh is unreadable. Symbolic links are never
	// granted: Landlock checks the path they resolve to.
	Read []Grant `json:"read"`
	// Write carves the writable roots around Protected and DenyRead the
	// same way, for Apply without a mount namespace.
	Write []Grant `json:"write,omitempty"`
	// Devices are the device files every command may use (read-write),
	// /dev/shm, and the terminals (with ioctls). Apply adds the session's
	// own terminal, found from its standard input.
	Devices []Grant `json:"devices"`

	// Notes are limitations a reader of the plan should know.
	Notes []string `json:"notes,omitempty"`

	// surveyCut: the git survey stopped short at one of its budgets (see
	// Keep).
	surveyCut bool
	// uncarved are the git paths in /tmp and $TMPDIR that Write is not
	// carved around (see Compile); Write is computed before the plan
	// travels.
	uncarved []string
}

// Enforced reports whether the plan restricts anything: false only for
// danger-full-access.
func (p Plan) Enforced() bool { return p.Mode != policy.ModeDangerFullAccess }

// Marshal encodes the plan for the helper; [Apply] decodes it.
func (p Plan) Marshal() ([]byte, error) { return json.Marshal(p) }

// Unmarshal decodes and checks a plan encoded by [Plan.Marshal].
func Unmarshal(b []byte) (Plan, error) {
	var p Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return Plan{}, fmt.Errorf("sandbox: decoding the plan: %w", err)
	}
	switch p.Mode {
	case policy.ModeReadOnly, policy.ModeWorkspaceWrite, policy.ModeDangerFullAccess:
	default:
		return Plan{}, fmt.Errorf("sandbox: plan has unknown mode %q", p.Mode)
	}
	for _, list := range [][]Grant{p.Read, p.Write, p.Devices} {
		for _, g := range list {
			if !filepath.IsAbs(g.Path) {
				return Plan{}, fmt.Errorf("sandbox: plan grants a relative path %q", g.Path)
			}
			switch g.Access {
			case AccessRead, AccessReadWrite, AccessTerminal:
			default:
				return Plan{}, fmt.Errorf("sandbox: plan grants unknown access %q on %q", g.Access, g.Path)
			}
		}
	}
	for _, list := range [][]string{p.WritableRoots, p.Protected, p.DenyRead, p.ReadOnlyFiles, p.Sockets, p.GitDirs, p.MakeDirs, p.MakeFiles, p.NestedRoots} {
		for _, s := range list {
			if !filepath.IsAbs(s) {
				return Plan{}, fmt.Errorf("sandbox: plan names a relative path %q", s)
			}
		}
	}
	return p, nil
}

// Syscalls refused with EPERM whatever the network setting, and the
// socket rule added when the network is off.
const (
	blockedAlways  = "ptrace, process_vm_readv, process_vm_writev, io_uring_setup, io_uring_enter, io_uring_register, keyctl, add_key, request_key"
	blockedNetwork = "socket and socketpair of any family but AF_UNIX"
	blockedIoctls  = "ioctl TIOCSTI and TIOCLINUX (typing into a terminal)"
	keptCapsText   = "as root, only chown, dac_override, fowner, fsetid, kill, setgid, setuid, net_bind_service, sys_chroot and audit_write, in every set (the bounding set too)"
	blockedSetID   = "chmod, fchmod, fchmodat, fchmodat2, mknod and mknodat with a set-user-ID or set-group-ID bit, and open, openat and creat making a file with one; openat2 answers ENOSYS (libc falls back to openat)"
	blockedOthers  = "setpriority, ioprio_set, sched_setscheduler, sched_setparam, sched_setattr, sched_setaffinity and prlimit64 (setting) on any process but the caller (renice/chrt/ionice/taskset/prlimit of a pid)"
)

// String renders the plan for people: one section per kind of grant, one
// grant per line, in a fixed order.
func (p Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mode: %s\n", p.Mode)
	if !p.Enforced() {
		b.WriteString("no sandbox: full access to files, network and processes\n")
		return b.String()
	}
	if p.Network {
		b.WriteString("network: on\n")
	} else if p.Egress {
		b.WriteString("network: allowlist (" + egressText + ")\n")
	} else {
		b.WriteString("network: off (" + blockedNetwork + " refused)\n")
	}
	paths := func(title string, s []string) {
		if len(s) == 0 {
			return
		}
		b.WriteString(title + ":\n")
		for _, x := range s {
			b.WriteString("  " + x + "\n")
		}
	}
	grants := func(title string, gs []Grant) {
		if len(gs) == 0 {
			return
		}
		b.WriteString(title + ":\n")
		for _, g := range gs {
			slash := ""
			if g.Dir && g.Path != "/" {
				slash = "/"
			}
			fmt.Fprintf(&b, "  %-10s %s%s\n", g.Access, g.Path, slash)
		}
	}
	if len(p.WritableRoots) == 0 {
		b.WriteString("writable roots: none\n")
	}
	paths("writable roots", p.WritableRoots)
	paths("git repositories (git = commit: writable but for their protected paths; git = read-only: protected whole)", p.GitDirs)
	paths("protected (read-only inside writable roots)", p.Protected)
	paths("made empty before the command, so that a mount covers them (hooks folders)", p.MakeDirs)
	paths("made empty before the command, so that a mount covers them (git configuration)", p.MakeFiles)
	paths("read-only files inside writable roots (the policy file, the audit log)", p.ReadOnlyFiles)
	paths("unreadable", p.DenyRead)
	paths("sockets of agents and services, covered in the mount namespace (unreachable)", p.Sockets)
	grants("read grants", p.Read)
	if len(p.WritableRoots) > 0 {
		b.WriteString("write, in a mount namespace: the writable roots whole (nosuid, nodev), everything else mounted read-only; protected paths and read-only files bind-mounted read-only, the folders on the way to them pinned (they cannot be moved or removed); unreadable paths inside them covered by empty mounts\n")
		if p.Git == policy.GitCommit {
			b.WriteString("git: commit (everyday writes to the repositories; hooks, config and what they name read-only); without a mount namespace, read-only\n")
		} else if p.Git != "" {
			b.WriteString("git: read-only (each repository whole)\n")
		}
		grants("write grants, without a mount namespace", p.Write)
	}
	grants("devices", p.Devices)
	b.WriteString("syscalls refused (EPERM): " + blockedAlways + "\n")
	b.WriteString("syscalls refused (EPERM): " + blockedOthers + "\n")
	b.WriteString("syscalls refused (EPERM): " + blockedIoctls + "\n")
	b.WriteString("syscalls refused (EPERM): " + blockedSetID + "\n")
	b.WriteString("capabilities: " + keptCapsText + "\n")
	b.WriteString("scoped (Landlock ABI 6): no signals or abstract UNIX socket connections to processes outside the sandbox\n")
	for _, n := range p.Notes {
		b.WriteString("note: " + n + "\n")
	}
	return b.String()
}

// deviceFiles are granted read-write in every enforced mode.
var deviceFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}

// terminals are granted with ioctls: the controlling terminal and what
// nested PTYs (script, tmux, expect, Python's pty) need.
var terminals = []string{"/dev/tty", "/dev/ptmx", "/dev/pts"}

// Compile turns the [sandbox] table and a workspace into a Plan. It reads
// the file system (stat, readdir, readlink, and the first line of .git
// files) and $HOME and $TMPDIR, and changes nothing.
//
// Writable roots (workspace-write only) are the workspace, the policy's
// writable_roots (relative ones are relative to the workspace, "~/"
// expands to $HOME), /tmp and $TMPDIR unless excluded. Each is resolved
// through symbolic links; a missing workspace or writable root is an
// error naming it, a missing /tmp or $TMPDIR is skipped with a note.
// read-only mode has no writable roots, not even /tmp: only the devices
// are writable.
//
// Protected names are relative to each writable root (absolute and "~/"
// paths count when inside one). A protected path that does not exist is
// skipped: Landlock cannot forbid creating it without forbidding every
// new entry in its parent, and a mount needs something to mount on.
//
// Git repositories are searched for below every writable root (at most
// [GitScanDepth] directories down and [GitScanDirs] directories read per
// root, breadth first, node_modules not entered; a .git the protected list
// names is covered wherever it is): .git directories and files, bare
// repositories, their submodules (modules/) and linked worktrees
// (worktrees/), and what their configuration names (core.hooksPath,
// includes, programs by path). With git = "commit" (the default) what
// makes git run a program in them is Protected, and the gitdirs are
// GitDirs; with "read-only" each gitdir is Protected whole. When a
// writable root is a linked worktree or a submodule whose gitdir, outside
// the roots, names it back, that gitdir and its common directory become
// writable roots (git = "commit"). A repository made later (git init) is
// covered by the plans compiled after it; see [GitState] for what the
// command that made it wrote there.
//
// DenyRead paths that do not exist are skipped: there is nothing to
// protect, but a file created there later is readable.
func Compile(p policy.Sandbox, workspace string) (Plan, error) {
	plan := Plan{Mode: p.Mode, Network: p.Network}
	switch p.Mode {
	case policy.ModeDangerFullAccess:
		plan.Network = true
		return plan, nil
	case policy.ModeReadOnly, policy.ModeWorkspaceWrite:
	case "":
		return Plan{}, errors.New("sandbox: no mode: set [sandbox] mode to read-only, workspace-write or danger-full-access")
	default:
		return Plan{}, fmt.Errorf("sandbox: unknown mode %q: use read-only, workspace-write or danger-full-access", p.Mode)
	}
	ws, err := realDir(workspace, "", "workspace")
	if err != nil {
		return Plan{}, err
	}
	home := os.Getenv("HOME")
	// What the git survey may read for commands (see fence): the
	// unreadable paths as the plan finds them below; looked up on their
	// own only if gitRoots needs them first (a linked worktree).
	var targets []string
	targetsFound := false
	fc := newFence(sync.OnceValue(func() []string {
		if targetsFound {
			return targets
		}
		return unreadableTargets(p, ws)
	}))
	// The plan's listings: each folder read once at most, and those kept
	// while they stand (see dirNames) read not at all.
	lookups := newAbsence()
	commit := p.Git != policy.GitReadOnly
	plan.Git = policy.GitCommit
	if !commit {
		plan.Git = policy.GitReadOnly
	}

	roots, tmpRoots, notes, err := writableRoots(p, ws, home)
	if err != nil {
		return Plan{}, err
	}
	if abs, err := filepath.Abs(workspace); err == nil {
		real, link := walkPath(abs, roots)
		if link != "" {
			return Plan{}, fmt.Errorf("sandbox: the workspace %s is reached through the symbolic link %s, which lies where commands can write: a command may have made it (moved the workspace away and put the link in its place); check it, and give the workspace's real path", abs, link)
		}
		if real != ws {
			return Plan{}, fmt.Errorf("sandbox: the workspace %s changed while the sandbox was planned (it led to %s, then to %q): a command may be swapping it for a link; check it, and run the command again", abs, ws, real)
		}
	}
	plan.Notes = append(plan.Notes, notes...)
	if commit && len(roots) > 0 {
		// A workspace that is a linked worktree commits into a gitdir
		// elsewhere.
		extra, notes := gitRoots(roots, home, fc)
		roots = dedupe(append(roots, extra...))
		plan.Notes = append(plan.Notes, notes...)
	}
	inRoots := func(path string) bool {
		return slices.ContainsFunc(roots, func(r string) bool { return path == r || within(path, r) })
	}

	// later: the unreadable paths that are absent, where they would be
	// made (see realLater); the folders on the way to them are carved,
	// so that what a session left running sees made there later (a
	// gh auth login while it runs) is unreadable to it as well.
	var deny, later []string
	resolved := map[string]string{}
	// "~" is the home of $HOME and the account's own (see homesOf).
	homes := homesIn(p)
	for _, h := range homes {
		if inRoots(h) {
			plan.Notes = append(plan.Notes, fmt.Sprintf("the home folder %s lies inside a writable root: commands can change the startup files of shells and tools there (.bashrc, .profile, ...), which run outside the sandbox when a person, or a command let out of it, uses them (a command run outside the sandbox then runs without a login shell; git's own configuration there is kept read-only)", h))
		}
	}
	moved, movedNotes := movedStores(p, ws)
	plan.Notes = append(plan.Notes, movedNotes...)
	for _, entry := range slices.Concat(p.DenyRead, moved) {
		ds, why, err := expandHomes(entry, homes)
		if err != nil {
			return Plan{}, fmt.Errorf("deny_read %w", err)
		}
		if why != "" {
			plan.Notes = append(plan.Notes, fmt.Sprintf("deny_read %q skipped: %s", entry, why))
		}
		for _, d := range ds {
			if !filepath.IsAbs(d) {
				d = filepath.Join(ws, d)
			}
			targets = append(targets, filepath.Clean(d))
			// Most of the default list is absent: one stat says so, where
			// EvalSymlinks would lstat each component.
			if lookups.absent(d) || !exists(d) {
				l := realLater(d, resolved, lookups)
				if l != "" && !inRoots(l) {
					later = append(later, l)
				}
				if l != "" {
					targets = append(targets, l)
				}
				continue
			}
			real, err := filepath.EvalSymlinks(d)
			if err != nil {
				continue
			}
			targets = append(targets, real)
			if real == "/" {
				return Plan{}, fmt.Errorf("sandbox: deny_read %q is the root directory: nothing could run", d)
			}
			deny = append(deny, real)
		}
	}
	// And each at every other path a mount gives it (see mountAliases).
	aliases, err := mountAliases(dedupe(deny))
	if err != nil {
		return Plan{}, fmt.Errorf("sandbox: %w; no command runs until it can be read", err)
	}
	plan.DenyRead = dedupe(append(deny, aliases...))
	targets, targetsFound = dedupe(append(targets, aliases...)), true

	// Protected paths, found under every root before nested roots go. A
	// .git named there is the git survey's to cover.
	var protected, absent, seeds []string
	var names []string
	for _, name := range p.Protected {
		paths, why, err := expandHomes(name, homes)
		if err != nil {
			return Plan{}, fmt.Errorf("protected %w", err)
		}
		if why != "" {
			plan.Notes = append(plan.Notes, fmt.Sprintf("protected %q skipped: %s", name, why))
		}
		names = append(names, paths...)
	}
	for _, root := range roots {
		for _, path := range names {
			if filepath.IsAbs(path) {
				if !within(filepath.Clean(path), root) {
					continue
				}
			} else {
				path = filepath.Join(root, path)
			}
			if filepath.Base(path) == ".git" {
				seeds = append(seeds, path)
				continue
			}
			if lookups.absent(path) {
				if root == ws {
					absent = append(absent, path)
				}
				continue
			}
			real, err := filepath.EvalSymlinks(path)
			if err != nil {
				if root == ws && errors.Is(err, os.ErrNotExist) {
					absent = append(absent, path)
				}
				continue
			}
			if inRoots(real) {
				protected = append(protected, real)
			}
		}
	}
	if len(absent) > 0 {
		plan.Notes = append(plan.Notes, "not protected because absent, and writable if created later: "+strings.Join(absent, ", "))
	}
	// Git repositories: every one the host's git may use later. The
	// search runs beside what does not depend on it (the sockets, the
	// carve of what is readable, the devices): on two cores, the plan
	// then takes the longer of the two, not their sum.
	var surveyed chan *gitSurvey
	if len(roots) > 0 {
		var denyIn []string
		for _, d := range plan.DenyRead {
			if inRoots(d) {
				denyIn = append(denyIn, d)
			}
		}
		surveyed = make(chan *gitSurvey, 1) // its goroutine never waits
		go func() { surveyed <- survey(roots, tmpRoots, denyIn, seeds, fc, home, commit, p.CommandEnv) }()
	}
	plan.WritableRoots = outermost(roots)
	plan.NestedRoots = slices.DeleteFunc(slices.Clone(roots), func(r string) bool { return slices.Contains(plan.WritableRoots, r) })

	// Landlock governs reading an unreadable directory, not connecting to
	// a socket in it (an agent's in ~/.ssh or ~/.gnupg): those are
	// covered one by one, so reading there still fails as a denial.
	sockets, err := serviceSockets(lookups, home, plan.WritableRoots)
	if err != nil {
		return Plan{}, err
	}
	for _, d := range plan.DenyRead {
		sockets = append(sockets, socketsUnder(d, maxSocketScan)...)
	}
	plan.Sockets = existingSockets(lookups, sockets)
	plan.Read = carve("/", append(slices.Clip(plan.DenyRead), later...), AccessRead)
	plan.Devices = planDevices()

	if surveyed != nil {
		s := <-surveyed
		protected = append(protected, s.protect...)
		// Carved without a mount namespace, a repository in /tmp would
		// leave /tmp unable to take new entries: those are left to the
		// report after each command.
		inTmp := func(x string) bool {
			return slices.ContainsFunc(tmpRoots, func(t string) bool { return x == t || within(x, t) }) &&
				!slices.ContainsFunc(roots, func(r string) bool {
					return !slices.Contains(tmpRoots, r) && (x == r || within(x, r))
				})
		}
		for _, x := range slices.Concat(s.protect, s.gitdirs) {
			if inTmp(x) {
				plan.uncarved = append(plan.uncarved, x)
			}
		}
		for k := range s.items {
			if strings.HasPrefix(k, "bound ") {
				plan.surveyCut = true
				break
			}
		}
		plan.MakeDirs = dedupe(s.makeDirs)
		plan.MakeFiles = dedupe(s.makeFiles)
		if commit {
			for _, g := range s.gitdirs {
				if inRoots(g) {
					plan.GitDirs = append(plan.GitDirs, g)
				}
			}
			plan.GitDirs = dedupe(plan.GitDirs)
		}
		plan.Notes = append(plan.Notes, s.notes...)
		if _, err := os.Lstat(filepath.Join(ws, ".git")); err != nil {
			plan.Notes = append(plan.Notes, "the workspace holds no git repository: one made later (git init, git clone) is covered from the next command on, and what makes git run a program that a command writes in it is reported after that command")
		}
	}
	plan.Protected = dedupe(protected)
	for _, d := range plan.DenyRead {
		if slices.ContainsFunc(plan.WritableRoots, func(r string) bool { return r == d || within(r, d) }) {
			plan.Notes = append(plan.Notes, fmt.Sprintf("unreadable %s holds a writable root: the writable root stays readable", d))
		}
	}
	plan.carveWrite()
	if len(plan.DenyRead) > 0 {
		plan.Notes = append(plan.Notes, "the directories on the way to an unreadable path cannot be listed (say ls / and ls ~), and an entry created in one later (say a new file in ~) is unreadable; their other entries are readable")
	}
	return plan, nil
}

// planDevices is what an enforced plan grants in /dev: the device files,
// /dev/shm, the terminals.
func planDevices() []Grant {
	var devices []Grant
	for _, d := range deviceFiles {
		devices = append(devices, Grant{Path: d, Access: AccessReadWrite})
	}
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		devices = append(devices, Grant{Path: "/dev/shm", Dir: true, Access: AccessReadWrite})
	}
	for _, t := range terminals {
		st, err := os.Stat(t)
		devices = append(devices, Grant{Path: t, Dir: err == nil && st.IsDir(), Access: AccessTerminal})
	}
	return devices
}

// writableRoots are the writable directories of p (workspace-write
// only), resolved and sorted: the workspace, writable_roots, /tmp and
// $TMPDIR (a missing one of the last two is a note).
func writableRoots(p policy.Sandbox, ws, home string) (roots, tmp, notes []string, err error) {
	if p.Mode != policy.ModeWorkspaceWrite {
		return nil, nil, nil, nil
	}
	// Each root as configured (absolute, as realDir reads it) and as
	// resolved, in a fixed order.
	type root struct{ path, what, real string }
	var all []root
	abs := func(path string) string {
		if !filepath.IsAbs(path) {
			return filepath.Join(ws, path)
		}
		return path
	}
	for _, r := range p.WritableRoots {
		d, err := realDir(expand(r, home), ws, "writable root")
		if err != nil {
			return nil, nil, nil, err
		}
		all = append(all, root{abs(expand(r, home)), "writable root", d})
	}
	if !p.ExcludeSlashTmp {
		if d, err := realDir("/tmp", ws, "/tmp"); err == nil {
			all = append(all, root{"/tmp", "/tmp", d})
		} else {
			notes = append(notes, "/tmp is not writable: "+err.Error())
		}
	}
	if t := os.Getenv("TMPDIR"); t != "" && !p.ExcludeTmpdirEnvVar {
		if d, err := realDir(t, ws, "$TMPDIR"); err == nil {
			all = append(all, root{abs(t), "$TMPDIR", d})
		} else {
			notes = append(notes, "$TMPDIR is not writable: "+err.Error())
		}
	}
	// A root reached through a symbolic link that lies where commands can
	// write (another root, /dev/shm) may be one a command pointed
	// anywhere — the workspace moved away under /tmp and a link to the
	// home made in its place: it is refused. Every root is judged against
	// all of them, before any is dropped.
	every := []string{ws}
	for _, r := range all {
		every = append(every, r.real)
	}
	roots = []string{ws}
	for _, r := range all {
		real, link := walkPath(r.path, every)
		if link != "" {
			notes = append(notes, fmt.Sprintf("%s %s is reached through the symbolic link %s, which lies where commands can write: not writable", r.what, r.path, link))
			continue
		}
		if real != r.real {
			// Resolved one way and judged another: a command is swapping
			// a folder on the way for a link. Only the judged walk's
			// result could be used, and it is not what the root was.
			notes = append(notes, fmt.Sprintf("%s %s changed while the sandbox was planned (it led to %s, then to %q): not writable", r.what, r.path, r.real, real))
			continue
		}
		roots = append(roots, real)
		if r.what == "/tmp" || r.what == "$TMPDIR" {
			tmp = append(tmp, r.real)
		}
	}
	// tmp: the shared temporary directories, unless one is the
	// workspace's or a configured root's.
	own := []string{ws}
	for _, r := range all {
		if r.what == "writable root" && slices.Contains(roots, r.real) {
			own = append(own, r.real)
		}
	}
	tmp = slices.DeleteFunc(dedupe(tmp), func(t string) bool { return slices.Contains(own, t) })
	return dedupe(roots), tmp, notes, nil
}

// plantableLink returns the first symbolic link met on the way to path,
// followed as the kernel follows it (a link's target is walked too),
// that lies inside one of roots or in /dev — where commands can write,
// and so could have made it — or "".
func plantableLink(path string, roots []string) string {
	_, link := walkPath(path, roots)
	return link
}

// walkPath follows path as the kernel does (a link's target is walked
// too, ".." applies where a link leads) and returns where it leads, ""
// when it leads nowhere (yet), and the first symbolic link on the way
// that lies inside one of roots or in /dev (see plantableLink), where the
// walk stops (real is then ""). The judgement and the resolution come
// from the same walk: a root resolved once and judged by another walk
// could be a link to the home for the one and a folder for the other,
// swapped in between by a command (red team 9).
func walkPath(path string, roots []string) (real, link string) {
	plantable := func(p string) bool {
		return p == "/dev" || within(p, "/dev") || slices.ContainsFunc(roots, func(r string) bool { return within(p, r) })
	}
	// Not cleaned first: ".." after a link applies to where the link
	// leads, as the kernel (and filepath.EvalSymlinks) take it.
	pending := strings.Split(path, "/")
	cur := "/"
	for links := 0; len(pending) > 0; {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		st, err := os.Lstat(next)
		if err != nil {
			return "", "" // missing: the path leads nowhere (yet)
		}
		if st.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if plantable(next) {
			return "", next
		}
		target, err := os.Readlink(next)
		if links++; err != nil || links > 40 {
			return "", ""
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		pending = append(strings.Split(target, "/"), pending...)
	}
	return cur, ""
}

// carveWrite computes Write: the writable roots carved around the
// protected, unreadable and read-only paths.
func (p *Plan) carveWrite() {
	p.Write = nil
	excluded := slices.DeleteFunc(slices.Concat(p.Protected, p.DenyRead, p.ReadOnlyFiles, p.GitDirs),
		func(x string) bool { return slices.Contains(p.uncarved, x) })
	for _, r := range p.WritableRoots {
		p.Write = append(p.Write, carve(r, excluded, AccessReadWrite)...)
	}
}

// AddReadOnlyFiles keeps files that lie inside writable roots read-only
// for commands: the policy file in use and the audit log, which a command
// could otherwise rewrite (a policy of danger-full-access for the next
// run) or truncate and forge. Each is resolved through symbolic links;
// missing ones, and those outside every writable root (read-only
// already), are skipped. Plans without writable roots are left as they
// are.
func (p *Plan) AddReadOnlyFiles(files ...string) {
	added := false
	for _, f := range files {
		if f == "" {
			continue
		}
		abs, err := filepath.Abs(f)
		if err != nil {
			continue
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil || !slices.ContainsFunc(p.WritableRoots, func(r string) bool { return within(real, r) }) {
			continue
		}
		p.ReadOnlyFiles = append(p.ReadOnlyFiles, real)
		added = true
	}
	if added {
		p.ReadOnlyFiles = dedupe(p.ReadOnlyFiles)
		p.carveWrite()
	}
}

// Kept is what p keeps read-only for commands that later plans of the
// same workspace must keep so too (see [Plan.Keep]): its protected paths,
// but those left to the report after each command (in /tmp and $TMPDIR,
// carved without a mount namespace).
func (p *Plan) Kept() []string {
	return slices.DeleteFunc(slices.Clone(p.Protected), func(x string) bool { return slices.Contains(p.uncarved, x) })
}

// Keep keeps read-only in p what an earlier plan kept so (its [Plan.Kept])
// and is still there, inside a writable root, where p's survey of the git
// repositories stopped short at a budget: the survey of the git
// repositories has budgets, and a repository a command made, surveyed
// first, can spend them, leaving unread the configuration that named a
// host's program (red team 6, F5: projA's core.fsmonitor script, kept
// read-only until then, was rewritten by the next command, untold). Each
// is kept only where it is still reached through no symbolic link: a
// protected link (a hooks folder linked to the workspace, red team 44) is
// the survey's to cover as it is, never followed here.
func (p *Plan) Keep(paths []string) {
	if !p.surveyCut {
		// The survey read all it looked for: what it protects is what
		// git reads now (a hooks folder the user's git config --unset
		// let go of is writable again: red team 8).
		return
	}
	added := false
	for _, x := range paths {
		real, err := filepath.EvalSymlinks(x)
		if err != nil || real != x || !slices.ContainsFunc(p.WritableRoots, func(r string) bool { return within(real, r) }) {
			continue
		}
		if slices.Contains(p.uncarved, real) || slices.Contains(p.Protected, real) {
			continue
		}
		p.Protected = append(p.Protected, real)
		added = true
	}
	if added {
		p.Protected = dedupe(p.Protected)
		p.carveWrite()
	}
}

// serviceSockets names the sockets through which a sandboxed command
// could act outside the sandbox, with the user's keys or as root: the
// ssh-agent ($SSH_AUTH_SOCK), the gpg and keyring agents, the user's and
// the system's D-Bus and systemd managers (systemd-run starts anything),
// the container and snap daemons (docker run --privileged is root on the
// host), the X servers (which type into any window) and the sound servers
// (the microphone). The X sockets are covered one by one, so a command can
// still start its own server (xvfb-run). A variable, so tests compile
// plans without the host's.
var serviceSockets = func(lookups *absence, home string, roots []string) ([]string, error) {
	uid := strconv.Itoa(os.Getuid())
	// The user's runtime directory is the user's services and nothing a
	// command needs: D-Bus, systemd, the sound and display servers, the
	// agents, editors' and terminals' control sockets (VS Code, emacs,
	// zellij, wezterm). It is covered whole.
	run := "/run/user/" + uid
	x11 := globIn(lookups, "/tmp/.X11-unix", "X*")
	// Terminal multiplexers and agents that keep their sockets in /tmp:
	// a command that reached tmux's or screen's server would type into
	// the user's own shells, outside the sandbox. /tmp is read once for
	// all of its patterns (it is often large).
	makeSocketFolders(lookups, uid)
	tmp := globIn(lookups, "/tmp", "tmux-"+uid, "ssh-*", "ssh-*/agent.*", "emacs"+uid, "vscode-*.sock", "kitty-*", "zellij-"+uid, "screens/S-*")
	for _, pattern := range []string{os.Getenv("TMUX_TMPDIR") + "/tmux-" + uid, "/run/screen/S-*", "/var/run/screen/S-*"} {
		tmp = append(tmp, globIn(lookups, filepath.Dir(pattern), filepath.Base(pattern))...)
	}
	sockets := append(x11, tmp...)
	bound, err := boundSockets(programStart, roots)
	if err != nil {
		return nil, err
	}
	sockets = append(sockets, bound...)
	return append(sockets,
		run, os.Getenv("SSH_AUTH_SOCK"), strings.Split(os.Getenv("TMUX"), ",")[0],
		"/run/dbus/system_bus_socket", "/run/systemd/private",
		"/run/docker.sock", "/var/run/docker.sock", "/run/containerd/containerd.sock",
		"/run/podman/podman.sock", "/run/snapd.socket", "/run/snapd-snap.socket",
	), nil
}

// makeSocketFolders makes the folders the user's terminal multiplexers
// and editor servers keep their sockets in (tmux, zellij, emacs), as they
// would make them (0700, the user's), where they are missing, so that
// every session covers them from its start. A socket appears in one only
// when the host starts the server; a session that started before the
// folder existed kept it uncovered for its whole life and reached the
// user's tmux started later: run-shell runs anything outside the sandbox
// (red team 9). A sandboxed tmux then needs a socket of its own
// (tmux -S, or TMUX_TMPDIR in a writable root).
func makeSocketFolders(lookups *absence, uid string) {
	dirs := []string{"/tmp/tmux-" + uid, "/tmp/zellij-" + uid, "/tmp/emacs" + uid}
	if t := os.Getenv("TMUX_TMPDIR"); t != "" && filepath.IsAbs(t) {
		dirs = append(dirs, filepath.Join(t, "tmux-"+uid))
	}
	for _, d := range dirs {
		if lookups.present(d) {
			continue // made, or a name left as it is
		}
		// No link's target is made, at the end or on the way ($TMUX_TMPDIR
		// in /tmp, where a command may put one: red team 10); an existing
		// name is left as it is. The umask can only take bits away from
		// 0700. Whatever happened, the plan lists the folder afresh.
		mkdirNoLinks(d, 0o700)
		lookups.forget(filepath.Dir(d))
	}
}

// globIn is filepath.Glob of each pattern under dir, with dir read once
// (and its listing reused while dir is unchanged: see dirNames): a
// pattern's first element is matched against that listing, and the rest
// (if any) globbed under each match.
func globIn(lookups *absence, dir string, patterns ...string) []string {
	names, err := lookups.read(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		// A folder that can be searched but not read: what a lookup of
		// each name finds (no wildcard), as before.
		var out []string
		for _, pattern := range patterns {
			m, _ := filepath.Glob(filepath.Join(dir, pattern))
			out = append(out, m...)
		}
		return out
	}
	var out []string
	for _, pattern := range patterns {
		first, rest, nested := strings.Cut(pattern, "/")
		for _, n := range matching(names, first) {
			if !nested {
				out = append(out, filepath.Join(dir, n))
				continue
			}
			m, _ := filepath.Glob(filepath.Join(dir, n, rest))
			out = append(out, m...)
		}
	}
	return out
}

// matching is the names of sorted that pattern (one path element)
// matches: only those beginning with its literal start are tried.
func matching(sorted []string, pattern string) []string {
	prefix := pattern
	if i := strings.IndexAny(pattern, `*?[\`); i >= 0 {
		prefix = pattern[:i]
	}
	start, _ := slices.BinarySearch(sorted, prefix)
	var out []string
	for _, n := range sorted[start:] {
		if !strings.HasPrefix(n, prefix) {
			break
		}
		if ok, _ := filepath.Match(pattern, n); ok {
			out = append(out, n)
		}
	}
	return out
}

func readDirNames(dir string) ([]string, error) {
	d, err := openDirFollowing(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}

// programStart is when this program started: a Unix socket in a shared
// temporary directory that is older belongs to the host (a daemon, the
// user's tmux), one that is newer may be a session's own (a dev server
// another session connects to).
var programStart = time.Now()

// boundSockets lists the bound Unix sockets (from /proc/net/unix: no walk
// of the file system) that a command could connect to (it may write the
// socket file) and that are not its sessions' own. Landlock (before ABI
// 9) does not govern connecting to a socket by its path, and a socket
// can be a way out: a tmux, screen or IDE server runs what it is sent,
// outside the sandbox. A socket outside the writable roots is never a
// session's (a sandboxed command cannot make one there); inside them, one
// made before t (this program's start) is not either, nor one that no
// process this program can see holds: in the program's own PID
// namespace it sees only its sessions' processes, so a socket a host
// process bound there later (a tmux started after the server) is found
// out. What a session binds there (a dev server another session talks
// to) stays reachable. Each is covered by a mount, and the folders on the
// way to one in a writable root are pinned (a moved folder would take the
// socket out of the path /proc/net/unix shows). More than
// maxCoveredSockets of them, or more descriptors to look through than
// maxHolderScan, is an error: none is left uncovered, and none makes a
// command take seconds to start.
func boundSockets(t time.Time, roots []string) ([]string, error) {
	b, err := readNetUnix()
	if err != nil {
		return nil, nil
	}
	var out []string
	recent := map[string]string{} // socket inode -> path, inside the roots and newer than t
	for _, line := range strings.Split(string(b), "\n") {
		ino, p, ok := unixSocketLine(line)
		if !ok || !strings.HasPrefix(p, "/") {
			continue
		}
		info, err := os.Lstat(p)
		if err != nil || info.Mode()&fs.ModeSocket == 0 || !serverAllows(p, true) {
			continue
		}
		inside := slices.ContainsFunc(roots, func(r string) bool { return p == r || within(p, r) })
		if inside && !info.ModTime().Before(t) {
			recent[ino] = p
			continue
		}
		out = append(out, p)
	}
	if len(recent) > 0 {
		held, err := heldSockets(recent)
		if err != nil {
			return nil, err
		}
		for ino, p := range recent {
			if !held[ino] {
				out = append(out, p)
			}
		}
	}
	out = dedupe(out)
	if len(out) > maxCoveredSockets {
		return nil, fmt.Errorf("%d bound Unix sockets a command could connect to are not its sessions' own (at most %d are covered; each is a mount): remove the ones you do not need (another program's in /tmp, say), or put their folder in deny_read", len(out), maxCoveredSockets)
	}
	return out, nil
}

// netUnix is /proc/net/unix, opened once: a read from its start is the
// table as it is then, and looking the path up (through /proc/self) costs
// as much as the read.
var netUnix struct {
	once sync.Once
	f    *os.File
}

// readNetUnix reads /proc/net/unix whole.
func readNetUnix() ([]byte, error) {
	netUnix.once.Do(func() {
		if f, err := os.Open("/proc/net/unix"); err == nil {
			netUnix.f = f
		}
	})
	if netUnix.f == nil {
		return os.ReadFile("/proc/net/unix")
	}
	b := make([]byte, 0, 16<<10)
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, cap(b))
		}
		n, err := netUnix.f.ReadAt(b[len(b):cap(b)], int64(len(b)))
		b = b[:len(b)+n]
		if err == io.EOF || (err == nil && n == 0) {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// maxCoveredSockets bounds the sockets boundSockets covers.
const maxCoveredSockets = 4096

// unixSocketLine reads a line of /proc/net/unix: the socket's inode and
// the path it is bound to (the rest of the line: a path may hold
// spaces), "" for none.
func unixSocketLine(line string) (inode, path string, ok bool) {
	// Num RefCount Protocol Flags Type St Inode Path
	rest := line
	for i := 0; i < 7; i++ {
		rest = strings.TrimLeft(rest, " ")
		end := strings.IndexByte(rest, ' ')
		if end < 0 {
			if i == 6 && rest != "" {
				return rest, "", true
			}
			return "", "", false
		}
		if i == 6 {
			inode = rest[:end]
		}
		rest = rest[end:]
	}
	if inode == "" || inode == "Inode" {
		return "", "", false
	}
	return inode, strings.TrimPrefix(rest, " "), true
}

// maxHolderScan bounds the descriptors heldSockets reads.
const maxHolderScan = 1 << 16

// heldSockets reports which of the socket inodes some process this
// program can see holds open; an error when there are more descriptors
// to look through than maxHolderScan.
func heldSockets(inodes map[string]string) (map[string]bool, error) {
	held := map[string]bool{}
	procs, err := readDirNames("/proc")
	if err != nil {
		return held, nil
	}
	scanned := 0
	for _, pid := range procs {
		if pid[0] < '0' || pid[0] > '9' {
			continue
		}
		fds, err := readDirNames("/proc/" + pid + "/fd")
		if err != nil {
			continue
		}
		if scanned += len(fds); scanned > maxHolderScan {
			return nil, fmt.Errorf("more than %d open descriptors to look through to tell the sessions' Unix sockets from others' in the writable roots: end the sessions that hold so many", maxHolderScan)
		}
		for _, fd := range fds {
			link, _ := os.Readlink("/proc/" + pid + "/fd/" + fd)
			if ino, ok := strings.CutPrefix(link, "socket:["); ok {
				ino = strings.TrimSuffix(ino, "]")
				if _, want := inodes[ino]; want {
					held[ino] = true
				}
			}
		}
	}
	return held, nil
}

// maxSocketScan bounds the entries socketsUnder visits in one unreadable
// path: the plan is compiled for every command.
const maxSocketScan = 2000

// socketsUnder lists the sockets at or below path, visiting at most limit
// entries and following no links.
func socketsUnder(path string, limit int) []string {
	var out []string
	seen := 0
	filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if seen++; seen > limit {
			return filepath.SkipAll
		}
		if err == nil && d.Type()&fs.ModeSocket != 0 {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// existingSockets resolves the paths that exist as sockets or directories
// (of sockets), once each.
func existingSockets(lookups *absence, paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == "" || !filepath.IsAbs(p) {
			continue
		}
		if lookups.absent(p) {
			continue
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		st, err := os.Stat(real)
		if err != nil || (st.Mode()&os.ModeSocket == 0 && !st.IsDir()) {
			continue
		}
		out = append(out, real)
	}
	return dedupe(out)
}

// carve returns grants that together cover root except the excluded
// paths: an excluded path is not granted, nor is anything below it, nor
// any directory on the way to it; every other entry gets leaf. Symbolic
// links are skipped: a grant through one would land on its target,
// wherever that is.
func carve(root string, excluded []string, leaf Access) []Grant {
	st, err := os.Lstat(root)
	if err != nil {
		return nil
	}
	return carveFrom(root, st.Mode().Type(), excluded, leaf)
}

// carveFrom is carve of root, whose file type is typ: the entries of a
// directory come with theirs, so they need no stat of their own (a
// listing of the home holds many).
func carveFrom(root string, typ os.FileMode, excluded []string, leaf Access) []Grant {
	var below []string
	for _, e := range excluded {
		if e == root {
			return nil
		}
		if within(e, root) {
			below = append(below, e)
		}
	}
	if typ&os.ModeSymlink != 0 {
		return nil
	}
	if len(below) == 0 {
		return []Grant{{Path: root, Dir: typ.IsDir(), Access: leaf}}
	}
	var out []Grant
	names, types, exact, err := listEntries(root)
	if err != nil {
		return out
	}
	if !exact {
		below = respell(root, names, below)
	}
	for i, name := range names {
		out = append(out, carveFrom(joinName(root, name), types[i], below, leaf)...)
	}
	return out
}

// respell is excluded (paths below dir) as the entries of dir (names)
// spell them, for a folder whose lookups may find an entry by a name it
// does not list (a case-folding folder finds .AWS as .aws; a file system
// not known to list names as it looks them up): an excluded path whose
// name in dir is not an entry is matched by identity with the entries,
// and each entry that is the same file stands for it too (a hard link
// beside it included).
func respell(dir string, names []string, excluded []string) []string {
	var ids []os.FileInfo // each entry's status, read on first need
	out := excluded
	for _, e := range excluded {
		first, rest, _ := strings.Cut(strings.TrimPrefix(e, dir+"/"), "/")
		if dir == "/" {
			first, rest, _ = strings.Cut(strings.TrimPrefix(e, "/"), "/")
		}
		if _, listed := slices.BinarySearch(names, first); listed {
			continue
		}
		st, err := os.Lstat(filepath.Join(dir, first))
		if err != nil {
			continue // no entry is found by that name
		}
		if ids == nil {
			ids = make([]os.FileInfo, len(names))
			for i, name := range names {
				ids[i], _ = os.Lstat(filepath.Join(dir, name))
			}
		}
		for i, name := range names {
			if ids[i] != nil && os.SameFile(ids[i], st) {
				alias := filepath.Join(dir, name)
				if rest != "" {
					alias = filepath.Join(alias, rest)
				}
				out = append(out, alias)
			}
		}
	}
	return out
}

// within reports whether path is strictly below dir (both clean).
func within(path, dir string) bool {
	if dir == "/" {
		return path != "/" && strings.HasPrefix(path, "/")
	}
	// No dir+"/" built: carve asks this of every entry of a home.
	return len(path) > len(dir) && path[len(dir)] == '/' && strings.HasPrefix(path, dir)
}

// hasDotDot reports whether path has a ".." name (without splitting it:
// the plan asks this of many paths).
func hasDotDot(path string) bool {
	for rest := path; rest != ""; {
		var name string
		name, rest, _ = strings.Cut(rest, "/")
		if name == ".." {
			return true
		}
	}
	return false
}

// exists: path (followed) is there.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// realLater is where the absent path p would be made: its deepest
// existing folder, resolved, joined with the rest of it — through a
// dangling symbolic link on the way (~/.netrc a link to dotfiles/netrc,
// not made yet: what is made is dotfiles/netrc, red team 18), to at most
// 40 links; "" when p has a "..", a file stands on its way, or the links
// do not end. resolved keeps the folders resolved so far ("" for one
// absent). lookups spares the lookups of names its listings say absent.
func realLater(p string, resolved map[string]string, lookups *absence) string {
	for range 40 {
		if hasDotDot(p) {
			return ""
		}
		p = filepath.Clean(p)
		dir, rest := filepath.Dir(p), filepath.Base(p)
		var real string
		for {
			r, ok := resolved[dir]
			if !ok && lookups.absent(dir) {
				ok = true // r = "": absent
				resolved[dir] = r
			}
			if !ok {
				if e, err := filepath.EvalSymlinks(dir); err == nil {
					r = e
					if st, err := os.Stat(e); err != nil || !st.IsDir() {
						r = fileOnWay // nothing can be made there
					}
				}
				resolved[dir] = r
			}
			if r == fileOnWay {
				return ""
			}
			if r != "" {
				real = r
				break
			}
			if dir == "/" {
				return ""
			}
			dir, rest = filepath.Dir(dir), filepath.Join(filepath.Base(dir), rest)
		}
		// real exists and its entry rest's first name does not lead to
		// a folder: a dangling link leads on, else that is where.
		first, after, _ := strings.Cut(rest, "/")
		if lookups.absent(filepath.Join(real, first)) {
			return filepath.Join(real, rest) // no link there either
		}
		target, err := os.Readlink(filepath.Join(real, first))
		if err != nil {
			return filepath.Join(real, rest)
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(real, target)
		}
		p = filepath.Join(target, after)
	}
	return ""
}

// fileOnWay marks, in realLater's folders, one that is a file.
const fileOnWay = "\x00file"

// realDir resolves path (relative to base) to an existing directory
// without symbolic links.
func realDir(path, base, what string) (string, error) {
	if !filepath.IsAbs(path) {
		if base == "" {
			abs, err := filepath.Abs(path)
			if err != nil {
				return "", fmt.Errorf("sandbox: %s %q: %w", what, path, err)
			}
			path = abs
		} else {
			path = filepath.Join(base, path)
		}
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("sandbox: %s %q does not exist: create it or remove it from the policy", what, path)
	}
	st, err := os.Stat(real)
	if err != nil || !st.IsDir() {
		return "", fmt.Errorf("sandbox: %s %q is not a directory", what, path)
	}
	return real, nil
}

// expand replaces a leading "~" by home (when home is known), and
// "~user" by that user's home.
func expand(p, home string) string {
	return expandWith(p, home, func(name string) (string, error) { return UserHome(name, false) })
}

// expandWith is expand, with the homes of ~user/ from userHome. It
// expands as git does (interpolate_path): the home, then the rest as it
// is — not cleaned: a ".." after a link is the link target's parent to
// git (fresh-eyes review: ~root/../ws/lnk/../hooks, cleaned as text, was
// another folder than git's), which resolvePath follows. A home the
// database gives empty is "" to git too (~nohome/tmp/h is /tmp/h).
func expandWith(p, home string, userHome func(name string) (string, error)) string {
	if rest, ok := strings.CutPrefix(p, "%(prefix)/"); ok {
		// git's own prefix (fresh-eyes review: %(prefix)/../ws/hk was
		// /usr/../ws/hk to git, and a relative path to the plan).
		return gitPrefix() + "/" + rest
	}
	if !strings.HasPrefix(p, "~") {
		return p
	}
	// ~user/ and ~user as git expands them (red team 25: Debian's user
	// sys has /dev for its home, so ~sys/shm/h is /dev/shm/h to git;
	// fresh-eyes review: core.hooksPath = ~victim is victim's home).
	name, _, _ := strings.Cut(p[1:], "/")
	rest := p[1+len(name):] // "" or from the slash on
	if name == "" {
		if home == "" {
			return p // git expands nothing, and fails
		}
		return home + rest
	}
	h, err := userHome(name)
	if err != nil {
		return p
	}
	return h + rest
}

// gitPrefix is the prefix git was installed under, which it gives
// "%(prefix)/" in a path of its configuration: the folder above the bin/
// holding the git that PATH finds (git's prefix, unless it was built to
// find its prefix at run time, which puts it there too), else /usr.
var gitPrefix = sync.OnceValue(func() string {
	if g, err := exec.LookPath("git"); err == nil {
		if r, err := filepath.EvalSymlinks(g); err == nil {
			g = r
		}
		if bin := filepath.Dir(g); filepath.Base(bin) == "bin" && filepath.IsAbs(bin) {
			return filepath.Dir(bin)
		}
	}
	return "/usr"
})

// envValues are the values of the variable name, this program's and the
// one commands get (p.CommandEnv, where [env] set may give another), each
// once, empty ones left out: what a command's tools read is where the
// second points, what the host's read where the first does.
func envValues(p policy.Sandbox, name string) []string {
	var out []string
	if v := os.Getenv(name); v != "" {
		out = append(out, v)
	}
	if v := p.CommandValue(name); v != "" && !slices.Contains(out, v) {
		out = append(out, v)
	}
	return out
}

// homesIn are the homes (see homesOf) of every HOME envValues gives.
func homesIn(p policy.Sandbox) []string {
	values := envValues(p, "HOME")
	if len(values) == 0 {
		return homesOf("")
	}
	var out []string
	for _, h := range values {
		for _, d := range homesOf(h) {
			if !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	return out
}

// homesOf is where "~" is in a deny_read or protected entry: $HOME (home)
// and the account's own home, from the password database, where it
// differs. A job run with HOME elsewhere (a CI step's scratch folder) or
// unset (env -i, a service's environment) still has the account's
// credentials in its home, and tools that read the database (ssh) use
// them there: both are covered, so neither setting opens ~/.ssh.
func homesOf(home string) []string {
	var out []string
	if home != "" {
		out = append(out, filepath.Clean(home))
		// And as the kernel resolves it, where they differ: a ".." after
		// a link is the link target's parent (red team 30: HOME=/x/lnk/..
		// was /x to the plan, and the target's parent to every tool).
		if r, err := filepath.EvalSymlinks(home); err == nil && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	if a := accountHome(); a != "" && !slices.Contains(out, a) {
		out = append(out, a)
	}
	return out
}

// accountHome is the home the password database gives this process's
// user ("" where it gives none), looked up once it answers: a lookup that
// failed (a name service offline) is tried again at the next plan, not
// taken for the server's life.
var accountHome = func() string {
	accountHomes.mu.Lock()
	known, home := accountHomes.known, accountHomes.home
	accountHomes.mu.Unlock()
	if known {
		return home
	}
	h, err := UserHome(strconv.Itoa(os.Getuid()), true) // without the lock: it may take seconds
	if err != nil && !unknownUser(err) {
		return ""
	}
	if err == nil && filepath.IsAbs(h) {
		home = filepath.Clean(h)
	}
	accountHomes.mu.Lock()
	accountHomes.known, accountHomes.home = true, home
	accountHomes.mu.Unlock()
	return home
}

var accountHomes struct {
	mu    sync.Mutex
	known bool
	home  string
}

// storeVars name, for a deny_read entry, the variables that move that
// store elsewhere: a tool reads it where they say (a CI step's
// DOCKER_CONFIG, KUBECONFIG or AWS_SHARED_CREDENTIALS_FILE in a scratch
// folder), and a deny of the home's copy alone left that one readable (red
// team 30). "VAR/name" is the file name in the folder VAR names. Entries
// under ~/.config, ~/.local/share and ~/.local/state also follow
// XDG_CONFIG_HOME, XDG_DATA_HOME and XDG_STATE_HOME.
var storeVars = map[string][]string{
	"~/.aws":                               {"AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE"},
	"~/.gnupg":                             {"GNUPGHOME"},
	"~/.config/gh":                         {"GH_CONFIG_DIR"},
	"~/.netrc":                             {"NETRC"},
	"~/.docker":                            {"DOCKER_CONFIG"},
	"~/.kube":                              {"KUBECONFIG"},
	"~/.config/gcloud":                     {"CLOUDSDK_CONFIG"},
	"~/.azure":                             {"AZURE_CONFIG_DIR"},
	"~/.npmrc":                             {"NPM_CONFIG_USERCONFIG", "npm_config_userconfig"},
	"~/.pgpass":                            {"PGPASSFILE"},
	"~/.cargo/credentials":                 {"CARGO_HOME/credentials"},
	"~/.cargo/credentials.toml":            {"CARGO_HOME/credentials.toml"},
	"~/.terraform.d/credentials.tfrc.json": {"TF_CLI_CONFIG_FILE"},
	"~/.password-store":                    {"PASSWORD_STORE_DIR"},
	"~/.boto":                              {"BOTO_CONFIG"},
	"~/.codex/auth.json":                   {"CODEX_HOME/auth.json"},
	"~/.claude/.credentials.json":          {"CLAUDE_CONFIG_DIR/.credentials.json"},
	"~/.bash_history":                      {"HISTFILE"},
	"~/.zsh_history":                       {"HISTFILE"},
	"~/.histfile":                          {"HISTFILE"},
	"~/.python_history":                    {"PYTHON_HISTORY"},
	"~/.psql_history":                      {"PSQL_HISTORY"},
	"~/.mysql_history":                     {"MYSQL_HISTFILE"},
	"~/.sqlite_history":                    {"SQLITE_HISTORY"},
	"~/.node_repl_history":                 {"NODE_REPL_HISTORY"},
	"~/.lesshst":                           {"LESSHISTFILE"},
	"~/.rediscli_history":                  {"REDISCLI_HISTFILE"},
}

// movedStores are the paths where the environment moves the stores of
// entries (see storeVars), as entries of their own. A path that is not
// absolute, lies in /dev, /proc or /sys (HISTFILE=/dev/null), or holds the
// workspace (nothing could run) is left out, with a note for the last.
func movedStores(p policy.Sandbox, ws string) (out, notes []string) {
	entries := p.DenyRead
	add := func(entry, name, path string) {
		switch {
		case !filepath.IsAbs(path):
			return
		case slices.ContainsFunc([]string{"/dev", "/proc", "/sys"}, func(d string) bool { return path == d || within(path, d) }):
			return
		case path == "/" || within(ws, filepath.Clean(path)) || ws == filepath.Clean(path):
			notes = append(notes, fmt.Sprintf("deny_read %q: $%s names %s, which holds the workspace: left readable", entry, name, path))
			return
		}
		out = append(out, filepath.Clean(path))
	}
	for _, entry := range entries {
		for _, v := range storeVars[entry] {
			name, file, _ := strings.Cut(v, "/")
			for _, val := range envValues(p, name) {
				if name == "KUBECONFIG" {
					for _, k := range filepath.SplitList(val) {
						add(entry, name, k)
					}
					continue
				}
				if file != "" {
					val = filepath.Join(val, file)
				}
				add(entry, name, val)
			}
		}
		for prefix, name := range map[string]string{"~/.config/": "XDG_CONFIG_HOME", "~/.local/share/": "XDG_DATA_HOME", "~/.local/state/": "XDG_STATE_HOME"} {
			if rest, ok := strings.CutPrefix(entry, prefix); ok {
				for _, dir := range envValues(p, name) {
					add(entry, name, filepath.Join(dir, rest))
				}
			}
		}
	}
	return dedupe(out), notes
}

// unreadableTargets are the deny_read entries as paths, absent ones
// included (a file made there later is unreadable too): each as written
// (in each home, relative ones in the workspace) and, where it exists, as
// links resolve it.
func unreadableTargets(p policy.Sandbox, ws string) []string {
	var out []string
	moved, _ := movedStores(p, ws)
	homes := homesIn(p)
	// As Compile looks them up: most of the default list is absent, which
	// a listing of the home says (see absence); an absent one is where it
	// would be made (see realLater).
	lookups := newAbsence()
	resolved := map[string]string{}
	var existing []string
	for _, entry := range slices.Concat(p.DenyRead, moved) {
		paths, _, _ := expandHomes(entry, homes) // an entry whose home is not known stops the plan
		for _, d := range paths {
			if !filepath.IsAbs(d) {
				d = filepath.Join(ws, d)
			}
			d = filepath.Clean(d)
			out = append(out, d)
			// Reached through no link, found or absent: where it is
			// (one lookup, the usual case).
			if f, err := openNoLinks(d, oPath); err == nil {
				f.Close()
				existing = append(existing, d)
				continue
			} else if !linkOnWay(err) {
				continue
			}
			if lookups.absent(d) || !exists(d) {
				if l := realLater(d, resolved, lookups); l != "" {
					out = append(out, l)
				}
				continue
			}
			if real, err := filepath.EvalSymlinks(d); err == nil {
				out = append(out, real)
				existing = append(existing, real)
			}
		}
	}
	aliases, err := mountAliases(existing)
	if err != nil {
		// Other paths may show them: the fence takes every path for one
		// (the survey reads nothing for commands, and says so).
		out = append(out, "/")
	}
	return dedupe(append(out, aliases...))
}

// expandHomes is entry with a leading "~" or "~/" in each of homes, or
// with "~user" or "~user/" in that user's home; entry as it is when it
// has no "~". why says why there is none: no home known, or no such user;
// err that the user's home could not be looked up.
func expandHomes(entry string, homes []string) (paths []string, why string, err error) {
	if !strings.HasPrefix(entry, "~") {
		return []string{entry}, "", nil
	}
	name, rest, _ := strings.Cut(entry[1:], "/")
	if name == "" {
		if len(homes) == 0 {
			return nil, "$HOME is not set and the password database gives this user no home", nil
		}
		for _, h := range homes {
			paths = append(paths, filepath.Join(h, rest))
		}
		return paths, "", nil
	}
	h, err := UserHome(name, false)
	if err != nil && !unknownUser(err) {
		// The name services did not answer (an LDAP offline, a getent
		// that timed out): the user may well have a home, which this
		// entry must cover (fresh-eyes review: a slow LDAP left
		// deny_read ~ldapalice/secret readable).
		return nil, "", fmt.Errorf("sandbox: %q: the home of user %q could not be looked up (%v); no command runs until it can be (try again), or remove the entry from the policy", entry, name, err)
	}
	if err != nil || !filepath.IsAbs(h) {
		return nil, fmt.Sprintf("no user %q here, so no home of theirs", name), nil
	}
	return []string{filepath.Join(h, rest)}, "", nil
}

// resolveFrom resolves p (relative to dir) through symbolic links; "" if
// it does not exist.
func resolveFrom(fc *fence, dir, p string) string {
	if p == "" {
		return ""
	}
	if !filepath.IsAbs(p) {
		p = dir + "/" + p // not cleaned: a ".." after a link is the link's target's parent
	}
	real, err := fc.resolve(p)
	if err != nil {
		return ""
	}
	return real
}

// outermost drops the sorted paths that lie inside another one.
func outermost(sorted []string) []string {
	var out []string
	for _, p := range sorted {
		if !slices.ContainsFunc(out, func(o string) bool { return within(p, o) }) {
			out = append(out, p)
		}
	}
	return out
}

func dedupe(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}
