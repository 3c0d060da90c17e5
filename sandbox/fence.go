package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// The git survey runs outside the sandbox, with the server's rights, and
// what it finds is told to the model (the "Git:" lines, the audit log).
// A command can point what the survey reads anywhere: a gitdir's
// rebase-merge/strategy, commondir or config linked to ~/.ssh/id_ed25519,
// a .git linked to ~/.aws/credentials, remotes/ linked to ~/.ssh, a
// modules/ entry linked to the home (red team 44 read keys back so, and
// listed folders a command cannot list). A fence keeps the survey from
// reading, or listing, for a command what the command cannot read or
// list itself: the unreadable paths (deny_read) and what lies in them,
// and, outside the writable roots, the folders on the way to one (which
// the sandbox lets no command list). Each path so refused is told as
// refused, the same whether it exists or not: the survey says neither
// what it holds nor whether it is there.
type fence struct {
	targets func() []string // the unreadable paths (see unreadableTargets)
	roots   []string        // the writable roots, set before the survey reads
	// refused are the paths git reads that the survey did not, and why.
	refused map[string]string
	sets    func() fenceSets
	// homes are the users' homes looked up for ~name/ words (see
	// homeMemo).
	homes homeMemo
	// config is what the survey has parsed of git's configuration (see
	// configBudget).
	config configBudget
	// configs are the configuration files parsed, each once a survey
	// (see readGitConfig).
	configs map[string][]gitEntry
	// walked are the files each walker walked (see walkAgain).
	walked map[string]bool
}

// fenceSets are the unreadable paths and the folders on the way to them,
// for the search's lookups of one name each.
type fenceSets struct {
	targets, above map[string]bool
}

// errFenced: a path git reads lies in (or is reached through) a path
// commands cannot read.
var errFenced = errors.New("in a path commands cannot read (deny_read), or reached through one: not read, and nothing about it is told (nor whether it is there); what git takes from it is not checked")

// errFencedFolder: a folder git lists lies in, or on the way to, a path
// commands cannot read.
var errFencedFolder = errors.New("in, or on the way to, a path commands cannot read (deny_read): not listed, and nothing about it is told; what git takes from it is not checked")

func newFence(targets func() []string) *fence {
	f := &fence{targets: targets, refused: map[string]string{}}
	f.sets = sync.OnceValue(func() fenceSets {
		s := fenceSets{targets: map[string]bool{}, above: map[string]bool{}}
		for _, t := range f.targets() {
			s.targets[t] = true
			for d := filepath.Dir(t); d != t && d != "/"; t, d = d, filepath.Dir(d) {
				s.above[d] = true
			}
			s.above["/"] = true
		}
		return s
	})
	return f
}

// hides: real (a path without links) is an unreadable path or lies in one.
func (f *fence) hides(real string) bool {
	if f == nil {
		return false
	}
	t := f.sets().targets
	for d := real; ; d = filepath.Dir(d) {
		if t[d] {
			return true
		}
		if d == "/" || d == "." || d == "" {
			return false
		}
	}
}

// unlistable: commands cannot list the folder real: it is hidden, or,
// outside the writable roots, on the way to an unreadable path.
func (f *fence) unlistable(real string) bool {
	if f == nil {
		return false
	}
	return f.hides(real) || !f.inRoots(real) && f.sets().above[real]
}

// childBlocked is unlistable for a folder whose parent is listable: one
// lookup of its name.
func (f *fence) childBlocked(real string) bool {
	if f == nil {
		return false
	}
	s := f.sets()
	// "/": every path is one (the mount table was unreadable).
	return s.targets[real] || s.targets["/"] || s.above[real] && !f.inRoots(real)
}

func (f *fence) inRoots(p string) bool {
	return slices.ContainsFunc(f.roots, func(r string) bool { return p == r || within(p, r) })
}

// refuse records that git reads path, which the survey did not.
func (f *fence) refuse(path string, why error) error {
	if f != nil {
		f.refused[path] = why.Error()
	}
	return &os.PathError{Op: "read", Path: path, Err: why}
}

// maxLinks is how many links a lookup follows (the kernel's bound).
const maxLinks = 40

// walk looks path up as the kernel does, one name at a time, following
// links: real is where it leads (as far as it exists, the rest as
// written), exists whether all of it does, and hidden whether the way
// entered an unreadable path — in which case it stops there, before it
// looks at anything inside.
func (f *fence) walk(path string) (real string, exists, hidden bool, err error) {
	if !filepath.IsAbs(path) {
		if path, err = filepath.Abs(path); err != nil {
			return "", false, false, err
		}
	}
	if f.hides("/") {
		// Every path is unreadable (the mount table was not read): "/.."
		// never names a folder below it.
		return filepath.Clean(path), false, true, nil
	}
	rest := strings.Split(path, "/")
	resolved := "/"
	links := 0
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := joinName(resolved, name)
		if f.hides(next) {
			// The rest as written: nothing in there is looked at.
			return strings.Join(append([]string{next}, rest...), "/"), false, true, nil
		}
		fi, err := os.Lstat(next)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				return next, false, false, err
			}
			// Absent: what follows is made nowhere else.
			real = filepath.Join(append([]string{next}, rest...)...)
			return real, false, f.hides(real), nil
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			if len(rest) > 0 && !fi.IsDir() && slices.ContainsFunc(rest, func(n string) bool { return n != "" && n != "." }) {
				return next, false, false, &os.PathError{Op: "lstat", Path: path, Err: errNotDir}
			}
			resolved = next
			continue
		}
		if links++; links > maxLinks {
			return next, false, false, &os.PathError{Op: "lstat", Path: path, Err: errTooManyLinks}
		}
		target, err := os.Readlink(next)
		if err != nil {
			return next, false, false, err
		}
		if filepath.IsAbs(target) {
			resolved = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return resolved, true, false, nil
}

var (
	errNotDir       = errors.New("not a directory")
	errTooManyLinks = errors.New("too many levels of symbolic links")
)

// where is walk, in one lookup where no link is on the way (the usual
// case): the kernel, refusing every link, finds the path or finds that a
// name on it is absent; either way the path is where it leads.
func (f *fence) where(path string) (real string, exists, hidden bool, err error) {
	// A ".." is walked: cleaned away, it hides the folder it climbs out
	// of (red team 45 went through ~/.ssh/NAME/.. so).
	if filepath.IsAbs(path) && !hasDotDot(path) {
		file, err := openNoLinks(path, oPath)
		if err == nil {
			file.Close()
			real = filepath.Clean(path)
			return real, true, f.hides(real), nil
		}
		if !linkOnWay(err) {
			real = filepath.Clean(path)
			return real, false, f.hides(real), nil
		}
	}
	return f.walk(path)
}

// resolve is filepath.EvalSymlinks(path) for an absolute path, but one
// whose way enters an unreadable path is refused (errFenced, recorded):
// where it leads is not told.
func (f *fence) resolve(path string) (string, error) {
	real, err := f.locate(path)
	if errors.Is(err, errFenced) {
		return "", f.refuse(path, errFenced)
	}
	return real, err
}

// locate is resolve for a caller that tells the refusal itself (not
// recorded).
func (f *fence) locate(path string) (string, error) {
	if f == nil {
		return filepath.EvalSymlinks(path)
	}
	real, exists, hidden, err := f.where(path)
	switch {
	case hidden:
		return "", &os.PathError{Op: "lstat", Path: path, Err: errFenced}
	case err != nil:
		return "", err
	case !exists:
		return "", &os.PathError{Op: "lstat", Path: path, Err: fs.ErrNotExist}
	}
	return real, nil
}

// blocked reports whether the way to path, found or not, enters an
// unreadable path; a lookup that fails otherwise is not blocked.
func (f *fence) blocked(path string) bool {
	if f == nil {
		return false
	}
	_, _, hidden, _ := f.where(path)
	return hidden
}

// budget is what is left of the survey's configBudget; without a fence,
// a whole one for each file.
func (f *fence) budget() *configBudget {
	if f == nil {
		return &configBudget{}
	}
	return &f.config
}

// open is openRegular(path), for a file the survey reads to tell what it
// holds: refused (errFenced, recorded) where the way to it enters an
// unreadable path, whether it is there or not, and where what was opened
// lies in one (a link changed between the look and the open).
func (f *fence) open(path string) (*os.File, error) {
	file, err := openRegular(path)
	if f == nil {
		return file, err
	}
	if err != nil {
		if f.blocked(path) {
			return nil, f.refuse(path, errFenced)
		}
		return nil, err
	}
	real, rerr := fdPath(file)
	// No link on the way (the usual case): the path is where it leads.
	if rerr != nil || f.hides(real) || (real != path || filepath.Clean(path) != path) && f.blocked(path) {
		file.Close()
		return nil, f.refuse(path, errFenced)
	}
	return file, nil
}

// readDir is os.ReadDir(dir) (sorted by name), for a folder whose
// entries the survey tells: refused (errFencedFolder, recorded) where
// commands cannot list it.
func (f *fence) readDir(dir string) ([]os.DirEntry, error) {
	if f == nil {
		return os.ReadDir(dir)
	}
	real, exists, hidden, err := f.where(dir)
	switch {
	case hidden || exists && f.unlistable(real):
		return nil, f.refuse(dir, errFencedFolder)
	case err != nil:
		return nil, err
	case !exists:
		return nil, &os.PathError{Op: "open", Path: dir, Err: fs.ErrNotExist}
	}
	// Opened where it was looked at, through no link: one swapped in
	// since leads nowhere.
	d, err := openNoLinks(real, os.O_RDONLY|oDirectory)
	if errors.Is(err, syscall.ELOOP) {
		return nil, f.refuse(dir, errFencedFolder)
	}
	if err != nil {
		return nil, err
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	slices.SortFunc(entries, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}

// listable: the survey may list the folder dir for a command (its way
// enters no unreadable path, and it is not on the way to one outside the
// writable roots); where not, it is recorded.
func (f *fence) listable(dir string) bool {
	if f == nil {
		return true
	}
	real, exists, hidden, _ := f.where(dir)
	if hidden || exists && f.unlistable(real) {
		f.refuse(dir, errFencedFolder)
		return false
	}
	return true
}
