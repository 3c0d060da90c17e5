// Package sandbox confines the commands unified-exec runs, on Linux, with
// Landlock (files, signals, abstract sockets) and seccomp (sockets,
// ptrace, io_uring). The server itself is never restricted: the plan is
// applied inside a re-executed helper, just before it executes the
// command.
//
// # Compile, then apply
//
// [Compile] turns the [sandbox] table of policy.toml and a workspace into
// a [Plan]: plain, JSON-serialisable data, computed from the file system
// without touching the kernel, readable with [Plan.String] and tested
// with golden files. [Plan.Marshal] encodes it for the helper, which
// calls [Apply] (usually through ptyrun.MaybeRunHelper).
//
// # Modes
//
//   - read-only: read everything except deny_read; write only the devices
//     (/dev/null, /dev/zero, /dev/full, /dev/random, /dev/urandom, /dev/shm)
//     and the terminals.
//   - workspace-write: also write the workspace, writable_roots, /tmp and
//     $TMPDIR, except the protected paths (.agents, .codex by default)
//     and, in every git repository there, what makes git run a program
//     (see Git below), which stay read-only.
//   - danger-full-access: no sandbox ([Plan.Enforced] is false).
//
// The network is off unless the policy says network = true: seccomp then
// refuses socket(2) and socketpair(2) of every family but AF_UNIX with
// EPERM. ptrace, process_vm_readv/writev and io_uring_* are refused in
// every enforced mode, and so is making a set-user-ID or set-group-ID
// file (chmod family, mknod, open/openat/creat creating one; openat2
// answers ENOSYS).
//
// # Carving
//
// Landlock only grants. "Readable except ~/.ssh" is granted as: list-only
// on /, on the home directory and on every directory down to ~/.ssh, and
// read on every other entry along that path. Writable roots are carved
// around protected paths the same way when the helper has no mount
// namespace of its own; when it has one (PID 1 of new PID and mount
// namespaces, or the forking thread's own), the roots are granted whole
// and the protected paths are bind-mounted read-only instead. See [Plan]
// for the trade-off.
//
// # Mounts
//
// In the command's mount namespace everything but the writable roots and
// /dev/shm is read-only (Landlock does not govern chmod, chown, utimes or
// xattrs), and those are nosuid and nodev; the protected paths and the
// files of [Plan.ReadOnlyFiles] (the policy file, the audit log) are
// bound read-only with the folders on the way to them pinned: made mount
// points, which cannot be renamed or removed (EBUSY), then buried under
// the root's own tree, so that renames and links across them still work.
// Without a mount namespace, metadata outside the writable roots stays
// changeable where the user may change it.
//
// # Git
//
// [Compile] searches every writable root for git repositories (bounded:
// [GitScanDepth] and [GitScanDirs], [GitScanTmpDepth] and
// [GitScanTmpDirs] for /tmp and $TMPDIR; cached, and on Linux kept
// current by inotify): .git folders and files, bare repositories, their
// submodules and linked worktrees. With [sandbox] git = "commit" what git
// writes for everyday work stays writable ([Plan.GitDirs]) and what
// makes git run a program is protected: hooks/, config, config.worktree,
// commondir and gitdir files, worktree and submodule pointers, the
// directory core.hooksPath names, included configuration files and the
// programs configuration names by path. With "read-only", and without a
// mount namespace, each repository is read-only whole. A name that does
// not exist cannot be covered by a mount: [GitState] tells what makes
// git run a program, so that a caller can report what a command added.
//
// # Host support
//
// [HostStatus] probes the kernel once: Landlock ABI, seccomp in this
// build, namespaces. [Status.Missing] lists what a plan needs that the
// host lacks, so that a policy with required = true can refuse to run
// and say why; [Status.Degraded] lists what is weaker here. Builds
// without cgo, and other systems, have no seccomp ([SeccompEnabled] is
// false) and [Apply] returns an error wrapping [ErrUnavailable].
//
// # Denials
//
// [Attribute] decides whether the sandbox stopped a failed command, so the
// caller can offer to run it again without: only on evidence of what the
// sandbox refused — a path named in the output that the plan refuses
// while the server itself could use it, or socket calls the filter
// refused, counted by a [NetWatch] (the refused families go to a seccomp
// user notification that the server answers with EPERM), or SIGSYS.
// Text alone is never a denial. [DetectDenial] is the text half: whether
// a line is a refusal message, where tools put one.
//
// # Tests
//
// Package sandboxtest runs commands under a plan in a re-executed test
// binary and skips kernel tests the host cannot run, unless
// UNIFIED_EXEC_REQUIRE_SANDBOX=1.
package sandbox
