//go:build linux

package sandbox

import (
	"errors"
	"path/filepath"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// The Landlock rules of a plan are described once, here, and both ways
// of enforcing it add them: [Apply] through go-landlock in the helper,
// [ApplyThread] on a raw ruleset. landlockGrants says which paths,
// grantRights which rights; TestLandlockRulesAgree checks the two rule
// sets on every golden plan.

// Access rights as go-landlock's RODirs/RWDirs give them, and those the
// kernel accepts on a file (ACCESS_FILE): a rule on a file keeps only
// these.
const (
	rightsRead     = uint64(ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir)
	rightsWrite    = uint64(ll.AccessFSWriteFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeChar | ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeBlock | ll.AccessFSMakeSym | ll.AccessFSTruncate)
	rightsFileOnly = uint64(ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSReadFile | ll.AccessFSIoctlDev)
)

// Accesses of the thread sandbox's second layer (see devicesRuleset),
// never in a plan: every right, and listing directories.
const (
	accessAll  Access = "all"
	accessList Access = "list"
)

// landlockGrants lists what Landlock grants under plan, in order: the
// read grants; with a mount namespace (mounts) the writable roots whole,
// the mounts protecting inside them, else the carved write grants; the
// devices; the session's terminals.
func landlockGrants(plan Plan, mounts bool, terminals []string) []Grant {
	grants := append([]Grant(nil), plan.Read...)
	if mounts {
		for _, root := range plan.WritableRoots {
			grants = append(grants, Grant{Path: root, Dir: true, Access: AccessReadWrite})
		}
	} else {
		grants = append(grants, plan.Write...)
	}
	grants = append(grants, plan.Devices...)
	for _, t := range terminals {
		grants = append(grants, Grant{Path: t, Access: AccessTerminal})
	}
	return grants
}

// grantRights is the Landlock rights g gives, within handled: read is
// execute, read file and read directory; read-write adds every write
// right and refer; terminal is read-write plus device ioctls. dir is
// whether the path is a directory now: on a file, or on a path the plan
// saw as a file, only the rights that apply to files remain (the kernel
// refuses the others there). 0 means no rule.
func grantRights(g Grant, dir bool, handled uint64) uint64 {
	rights := rightsRead
	switch g.Access {
	case accessAll:
		rights = handled
	case accessList:
		rights = uint64(ll.AccessFSReadDir)
	case AccessReadWrite:
		rights |= rightsWrite | uint64(ll.AccessFSRefer)
	case AccessTerminal:
		rights |= rightsWrite | uint64(ll.AccessFSRefer) | uint64(ll.AccessFSIoctlDev)
	}
	if !g.Dir || !dir {
		rights &= rightsFileOnly
	}
	return rights & handled
}

// openGrant opens a grant's path (O_PATH, close-on-exec) for its rule.
// Outside /dev no symbolic link is followed on the way, at any step: a
// plan's paths are real (resolved, or carved past links), and one that is
// a link now was changed since the plan was made — a session can swap a
// directory of the workspace for a link to the home — so the rule would
// land on whatever it points to. It is then skipped, as a path gone
// since is: the command gets less, never more. /dev is the kernel's
// (the sandbox cannot write there) and has links of its own (/dev/fd,
// /dev/stdin). errSkipGrant says the path is gone or a link.
func openGrant(path string) (int, error) {
	var fd int
	var err error
	if path == "/dev" || within(path, "/dev") {
		fd, err = unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	} else {
		fd, err = unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS})
	}
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) {
		return -1, errSkipGrant
	}
	return fd, err
}

var errSkipGrant = errors.New("sandbox: the path is gone or a symbolic link since the plan was made")

// mkdirNoLinks makes the directory path (mode, less the umask) reaching
// its parent without following a symbolic link: a command cannot have it
// made elsewhere by putting a link on the way. An existing name is left.
func mkdirNoLinks(path string, mode uint32) error {
	parent, err := unix.Openat2(unix.AT_FDCWD, filepath.Dir(path), &unix.OpenHow{
		Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	return unix.Mkdirat(parent, filepath.Base(path), mode)
}
