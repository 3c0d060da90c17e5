package approval

import (
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/unified-exec/unified-exec/policy"
)

// Match reports whether a rule's pattern is a prefix of argv, word for
// word. The first word is compared by base name (/usr/bin/rm matches
// "rm"). This is how allow rules match: only the command as written.
// Forbid and prompt rules match more widely ([Matches]).
func Match(r policy.Rule, argv []string) bool {
	if len(r.Pattern) == 0 || len(argv) < len(r.Pattern) {
		return false
	}
	for i, alts := range r.Pattern {
		w := argv[i]
		if i == 0 {
			w = filepath.Base(w)
		}
		ok := false
		for _, a := range alts {
			if w == a || (i == 0 && filepath.Base(a) == w) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// Matching is how a forbid or prompt rule applies to a command.
type Matching int

// Matchings.
const (
	NoMatch    Matching = iota
	Matches             // the command as written matches
	CouldMatch          // part of the command is known only when it runs, and it could match
)

func (m Matching) String() string {
	return [...]string{"no match", "matches", "could match"}[m]
}

// Matcher matches forbid and prompt rules against what a command
// really does, whatever its spelling:
//
//   - The program by base name, after quoting and escapes are undone
//     (/usr/bin/git, \git, 'git', "g"it, $'\x67it').
//   - git's global options before the subcommand (-C DIR, -c K=V,
//     --no-pager, --git-dir=DIR, ...) are skipped: ["git", "push"] matches
//     `git -C . push`. For git the first word after the program in a
//     pattern is the subcommand.
//   - An element whose words all start with "-" is an option the command
//     has anywhere among its options (getopt permutes them): "-rf" means
//     both -r and -f, given together or apart (-fr, -f -r, -rfv); a long
//     option matches its unique abbreviations (--rec), and for rm, cp,
//     chmod, chown and chgrp -r, -R and --recursive are one option, as are
//     -f and --force.
//   - Any other element is an operand, matched in order but not
//     necessarily next to the previous one: ["rm", "-r", "/"] matches
//     `rm -r build /`.
//   - Operands that are paths are compared as paths: cleaned (//, /., ..,
//     a trailing /), relative ones (and ~+) resolved against the working
//     directory and every directory a cd or env -C of the line may lead
//     to, and ~, ~/, ~USER, $HOME, ${HOME} and the home directory spelled
//     out are all the home directory. A glob in the command
//     matches a path it would name (/ho?e/al* names /home/alice), and
//     "DIR/*" in a pattern matches any glob of DIR's entries (~/.*).
//
// A word computed when the command runs ($x, $(...)), words xargs adds,
// or a command that is unknown altogether (eval of a computed string,
// source FILE, a script piped into sh) can be whatever a pattern asks
// for: the rule [CouldMatch]es.
type Matcher struct {
	// Home is the user's home directory ("" if unknown: then only ~ and
	// $HOME spell it); Cwd the working directory relative paths are
	// resolved against (ignored unless absolute).
	Home, Cwd string
}

// recursiveForce are the programs whose -r, -R and --recursive are one
// option, and -f and --force another.
var recursiveForce = []string{"rm", "cp", "chmod", "chown", "chgrp"}

// singleDash are programs whose options are words, not clusters of
// letters (-name, -delete): their options match only word for word.
var singleDash = []string{"find", "java", "javac", "go", "gcc", "g++", "cc", "clang", "clang++", "ld", "ffmpeg", "ffprobe", "xdotool", "test", "["}

// Matches reports how rule r applies to c.
func (m Matcher) Matches(r *policy.Rule, c Command) Matching {
	if len(r.Pattern) == 0 || len(c.Argv) == 0 {
		return NoMatch
	}
	if c.whole != "" || c.kind(0) != wordLiteral {
		return CouldMatch
	}
	name := filepath.Base(c.Argv[0])
	if !slices.ContainsFunc(r.Pattern[0], func(a string) bool { return filepath.Base(a) == name }) {
		return NoMatch
	}
	s := m.shape(name, c)
	res := Matches
	// spend lets a computed word stand for an element the command lacks:
	// words xargs adds, a word that may split into any number, or one
	// word that could be one of alts.
	spend := func(alts []string) bool {
		ok := c.more != ""
		for i := range s.unknowns {
			u := &s.unknowns[i]
			if ok || u.used {
				continue
			}
			if u.kind != wordOne {
				ok = true
			} else if m.couldBe(u.tail, alts) {
				ok, u.used = true, true
			}
		}
		if ok {
			res = CouldMatch
		}
		return ok
	}
	cursor := 0
	for k, alts := range r.Pattern[1:] {
		if optionElement(alts) {
			if !s.hasOption(alts) && !spend(alts) {
				return NoMatch
			}
			continue
		}
		if s.subcommand && k == 0 {
			// git's subcommand is its first word after the global options.
			switch {
			case s.subUnknown != nil && (s.subUnknown.kind != wordOne || m.couldBe(s.subUnknown.tail, alts)):
				res = CouldMatch
			case len(s.operands) > 0 && slices.Contains(alts, s.operands[0]):
				cursor = 1
			case len(s.operands) == 0 && spend(alts):
			default:
				return NoMatch
			}
			continue
		}
		rest := s.operands[min(cursor, len(s.operands)):]
		if j := slices.IndexFunc(rest, func(w string) bool { return m.operand(w, alts, c.dirs) == Matches }); j >= 0 {
			cursor += j + 1
			continue
		}
		if j := slices.IndexFunc(rest, func(w string) bool { return m.operand(w, alts, c.dirs) == CouldMatch }); j >= 0 {
			cursor += j + 1
			res = CouldMatch
			continue
		}
		if !spend(alts) {
			return NoMatch
		}
	}
	return res
}

// operand reports how the command's word w, run in one of the
// directories dirs ([Command] keeps those a cd may have led to), is one
// of the pattern's words alts.
func (m Matcher) operand(w string, alts, dirs []string) Matching {
	if slices.Contains(alts, w) {
		return Matches
	}
	if rest, ok := strings.CutPrefix(w, "~-"); ok && (rest == "" || rest[0] == '/') {
		if m.couldBe(rest, alts) {
			return CouldMatch // ~- is $OLDPWD
		}
		return NoMatch
	}
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	unknownDir := false
	for _, d := range dirs {
		if d == "" {
			unknownDir = true
			continue
		}
		pw, ok := m.abs(w, d)
		if !ok {
			continue
		}
		for _, a := range alts {
			if pa, ok := m.abs(a, "."); ok && samePath(pw, pa) {
				return Matches
			}
		}
	}
	if unknownDir && relative(w) && m.couldBe("/"+w, alts) {
		return CouldMatch // cd "$dir" && rm -rf *
	}
	return NoMatch
}

func relative(w string) bool {
	_, ok := Matcher{}.abs(w, "")
	return !ok && w != ""
}

// shape is a command taken apart for matching.
type shape struct {
	prog     string
	words    map[string]bool // option words as written
	letters  map[byte]bool   // short options
	longs    []string        // long option names as written (perhaps abbreviated)
	operands []string
	unknowns []unknownWord // the computed words
	// subcommand: the first operand is a subcommand (git); subUnknown:
	// a computed word stands where the subcommand may be.
	subcommand bool
	subUnknown *unknownWord
}

func (m Matcher) shape(prog string, c Command) *shape {
	s := &shape{prog: prog, words: map[string]bool{}, letters: map[byte]bool{}}
	i := 1
	if prog == "git" {
		s.subcommand = true
		for i < len(c.Argv) {
			a := c.Argv[i]
			if k := c.kind(i); k > wordEnv {
				// A global option or the subcommand.
				if s.subUnknown == nil || k != wordOne {
					s.subUnknown = &unknownWord{kind: k, tail: c.tail(i)}
				}
				i++
			} else if slices.Contains(gitValueOptions, a) {
				i += 2
			} else if strings.HasPrefix(a, "-") {
				i++
			} else {
				break
			}
		}
	}
	options := true
	for ; i < len(c.Argv); i++ {
		a := c.Argv[i]
		switch k := c.kind(i); {
		case k > wordEnv:
			s.unknowns = append(s.unknowns, unknownWord{kind: k, tail: c.tail(i)})
		case options && a == "--":
			options = false
		case options && len(a) > 1 && a[0] == '-':
			s.words[a] = true
			switch {
			case strings.HasPrefix(a, "--"):
				name, _, _ := strings.Cut(a[2:], "=")
				s.longs = append(s.longs, name)
				if slices.Contains(recursiveForce, prog) {
					if strings.HasPrefix("recursive", name) {
						s.letters['r'], s.letters['R'] = true, true
					}
					if strings.HasPrefix("force", name) {
						s.letters['f'] = true
					}
				}
			case !slices.Contains(singleDash, prog):
				for j := 1; j < len(a); j++ {
					s.letters[a[j]] = true
				}
			}
		default:
			s.operands = append(s.operands, a)
		}
	}
	if slices.Contains(recursiveForce, prog) && (s.letters['r'] || s.letters['R']) {
		s.letters['r'], s.letters['R'] = true, true
		s.longs = append(s.longs, "recursive")
	}
	if slices.Contains(recursiveForce, prog) && s.letters['f'] {
		s.longs = append(s.longs, "force")
	}
	return s
}

// unknownWord is a word computed when the command runs.
type unknownWord struct {
	kind wordKind
	tail string // its literal end: "$dir/out" is some path ending in /out
	used bool   // it already stands for an element
}

// couldBe reports whether one computed word ending in tail could be one
// of alts: "$d/out" is never / or ~ (unless the home's name is out), nor
// an option; "$d", "$d/" and "$d/.." could be anything.
func (m Matcher) couldBe(tail string, alts []string) bool {
	if strings.ContainsAny(tail, "*?[") || strings.Contains(tail, "..") {
		return true
	}
	for {
		t := strings.TrimSuffix(strings.TrimSuffix(tail, "/."), "/")
		if t == tail {
			break
		}
		tail = t
	}
	if tail == "" {
		return true
	}
	for _, a := range alts {
		if strings.HasPrefix(a, "-") {
			if !strings.Contains(tail, "/") {
				return true // "$x"f could be -rf
			}
			continue
		}
		if p, ok := m.abs(a, "."); ok && !isGlob(p) && strings.HasSuffix(p, tail) || strings.HasSuffix(a, tail) {
			return true
		}
	}
	return false
}

// optionElement reports whether a pattern element names options.
func optionElement(alts []string) bool {
	return len(alts) > 0 && !slices.ContainsFunc(alts, func(a string) bool {
		return len(a) < 2 || a[0] != '-' || a == "--"
	})
}

// hasOption reports whether the command has one of the options alts.
func (s *shape) hasOption(alts []string) bool {
	for _, a := range alts {
		if s.words[a] {
			return true
		}
		if long, ok := strings.CutPrefix(a, "--"); ok {
			long, _, _ = strings.Cut(long, "=")
			if slices.ContainsFunc(s.longs, func(l string) bool { return l != "" && strings.HasPrefix(long, l) }) {
				return true
			}
			continue
		}
		if slices.Contains(singleDash, s.prog) {
			continue
		}
		all := true
		for j := 1; j < len(a); j++ {
			all = all && s.letters[a[j]]
		}
		if all {
			return true
		}
	}
	return false
}

// samePath reports whether the command's path pw names the pattern's
// path pa: the same path, a glob of the command that names it, or any
// glob of the entries of the directory a pattern's "DIR/*" names.
func samePath(pw, pa string) bool {
	if pw == pa {
		return true
	}
	wg, ag := isGlob(pw), isGlob(pa)
	switch {
	case wg && !ag:
		ok, _ := path.Match(pw, pa)
		return ok
	case wg && ag:
		return path.Base(pa) == "*" && path.Dir(pw) == path.Dir(pa) && !isGlob(path.Dir(pw))
	}
	return false
}

func isGlob(p string) bool { return strings.ContainsAny(p, "*?[") }

// abs returns the word w as a clean absolute path, with every spelling
// of the home directory turned into Home (or "~" when Home is unknown),
// a relative one resolved against dir (absolute, under ~, or relative to
// Cwd), and whether the word is a path known before the command runs.
func (m Matcher) abs(w, dir string) (string, bool) {
	for _, h := range []string{"$HOME", "${HOME}"} {
		if w == h || strings.HasPrefix(w, h+"/") {
			w = "~" + w[len(h):]
		}
	}
	if strings.HasPrefix(w, "~") {
		user, rest, _ := strings.Cut(w[1:], "/")
		if user == "+" {
			return m.abs(path.Join(".", rest), dir) // ~+ is $PWD
		}
		home := "~"
		if m.Home != "" {
			home = path.Clean(m.Home)
		}
		if user != "" && (m.Home == "" || user != path.Base(m.Home)) {
			return w, false // another user's home
		}
		return path.Clean(home + "/" + rest), true
	}
	if path.IsAbs(w) {
		return path.Clean(w), true
	}
	if dir == "" || dir == "." {
		if !path.IsAbs(m.Cwd) || dir == "" {
			return "", false
		}
		return path.Join(m.Cwd, w), true
	}
	base, ok := m.abs(dir, ".")
	if !ok {
		return "", false
	}
	return path.Join(base, w), true
}
