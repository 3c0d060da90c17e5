package approval

import (
	"slices"
	"strings"
)

// optSpec describes a program's options, as getopt_long reads them.
type optSpec struct {
	// short are the short options that take a value: the rest of the
	// cluster (-n5) or the next word (-n 5).
	short string
	// long are the long options that take a value: --name=V or --name V.
	long []string
	// flags are the long options that take none. A long option in
	// neither list (or an abbreviation that fits both) is read both ways.
	flags []string
}

// takes says whether the long option name (perhaps abbreviated, as
// getopt_long accepts) takes a value: 1 yes, 0 no, -1 unknown.
func (s optSpec) takes(name string) int {
	if slices.Contains(s.long, name) {
		return 1
	}
	if slices.Contains(s.flags, name) {
		return 0
	}
	value, flag := false, false
	for _, l := range s.long {
		value = value || strings.HasPrefix(l, name)
	}
	for _, l := range s.flags {
		flag = flag || strings.HasPrefix(l, name)
	}
	switch {
	case value && !flag:
		return 1
	case flag && !value:
		return 0
	}
	return -1
}

// scan returns the indices of c.Argv where the operands may begin after
// the options that start at word i: one index, or several when an
// unknown long option may or may not take a value.
func (s optSpec) scan(c Command, i int) []int {
	var out []int
	s.scanFrom(c, i, &out, 0)
	slices.Sort(out)
	return slices.Compact(out)
}

func (s optSpec) scanFrom(c Command, i int, out *[]int, branches int) {
	for i < len(c.Argv) {
		a := c.Argv[i]
		if c.kind(i) != wordLiteral || a == "-" || !strings.HasPrefix(a, "-") {
			break
		}
		i++
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "--") {
			name, _, eq := strings.Cut(a[2:], "=")
			if eq {
				continue
			}
			switch s.takes(name) {
			case 1:
				i++
			case -1:
				if branches < 4 {
					s.scanFrom(c, i+1, out, branches+1)
				}
			}
			continue
		}
		for j := 1; j < len(a); j++ {
			if strings.IndexByte(s.short, a[j]) >= 0 {
				if j == len(a)-1 {
					i++ // the value is the next word
				}
				break
			}
		}
	}
	*out = append(*out, min(i, len(c.Argv)))
}

// value finds an option that takes a value among the options of c at
// words [i, end): the short letter (when not 0) or a long name (perhaps
// abbreviated). It returns the value and the index of the word it is in.
func (s optSpec) value(c Command, i, end int, letter byte, longs ...string) (string, int, bool) {
	for i < end && i < len(c.Argv) {
		a := c.Argv[i]
		if c.kind(i) != wordLiteral || a == "-" || !strings.HasPrefix(a, "-") || a == "--" {
			return "", 0, false
		}
		i++
		if strings.HasPrefix(a, "--") {
			name, v, eq := strings.Cut(a[2:], "=")
			hit := slices.ContainsFunc(longs, func(l string) bool { return strings.HasPrefix(l, name) })
			switch {
			case hit && eq:
				return v, i - 1, true
			case hit && i < len(c.Argv):
				return c.Argv[i], i, true
			case !eq && s.takes(name) == 1:
				i++
			}
			continue
		}
		for j := 1; j < len(a); j++ {
			if letter != 0 && a[j] == letter {
				if j < len(a)-1 {
					return a[j+1:], i - 1, true
				}
				if i < len(c.Argv) {
					return c.Argv[i], i, true
				}
				return "", 0, false
			}
			if strings.IndexByte(s.short, a[j]) >= 0 {
				if j == len(a)-1 {
					i++
				}
				break
			}
		}
	}
	return "", 0, false
}

// anywhere is value for programs that take options after operands too
// (getopt permutes them): su root -c CMD.
func (s optSpec) anywhere(c Command, letter byte, longs ...string) (string, int, bool) {
	for i := 1; i < len(c.Argv); i++ {
		if c.Argv[i] == "--" {
			break
		}
		if v, vi, ok := s.value(c, i, i+1, letter, longs...); ok {
			return v, vi, true
		}
	}
	return "", 0, false
}

// wrapper is a program that runs another command given as its operands.
type wrapper struct {
	opts optSpec
	// operands are the words between the options and the command
	// (timeout's duration, chroot's new root).
	operands int
	// more: the command gets more arguments when it runs (xargs).
	more bool
	// shell: without a command it starts a shell that reads its input.
	shell bool
	// special: unwrap has code of its own for it.
	special bool
	// pid are the short options (and pidLong the long ones) that make it
	// act on a running process, with no command (ionice -p PID).
	pid     string
	pidLong []string
}

// acts reports whether options among c.Argv[1:end] make w act on a
// running process rather than run a command.
func (w wrapper) acts(c Command, end int) bool {
	for _, a := range c.Argv[1:end] {
		if name, ok := strings.CutPrefix(a, "--"); ok {
			name, _, _ = strings.Cut(name, "=")
			if name != "" && slices.ContainsFunc(w.pidLong, func(l string) bool { return strings.HasPrefix(l, name) }) {
				return true
			}
		} else if strings.HasPrefix(a, "-") && strings.ContainsAny(a[1:], w.pid) && w.pid != "" {
			return true
		}
	}
	return false
}

// wrappers are the programs whose operands are a command that rules
// must see. Options are those of GNU coreutils, util-linux, findutils,
// sudo and moreutils; an option missing here that takes a value is read
// both ways when it is long, and as a flag when it is short.
var wrappers = map[string]wrapper{
	"command": {},
	"builtin": {},
	"exec":    {opts: optSpec{short: "a"}},
	"nohup":   {},
	"time": {opts: optSpec{short: "fo", long: []string{"format", "output"},
		flags: []string{"append", "portability", "verbose", "quiet", "help", "version"}}},
	"nice": {opts: optSpec{short: "n", long: []string{"adjustment"}, flags: []string{"help", "version"}}},
	"ionice": {opts: optSpec{short: "cnpPu", long: []string{"class", "classdata", "pid", "pgid", "uid"},
		flags: []string{"ignore", "help", "version"}}, pid: "pPu", pidLong: []string{"pid", "pgid", "uid"}},
	"stdbuf": {opts: optSpec{short: "ioe", long: []string{"input", "output", "error"}, flags: []string{"help", "version"}}},
	"setsid": {opts: optSpec{flags: []string{"ctty", "fork", "wait", "help", "version"}}},
	"chroot": {opts: optSpec{long: []string{"userspec", "groups"}, flags: []string{"skip-chdir", "help", "version"}},
		operands: 1, shell: true},
	"timeout": {opts: optSpec{short: "sk", long: []string{"signal", "kill-after"},
		flags: []string{"foreground", "preserve-status", "verbose", "help", "version"}}, operands: 1},
	"env": {opts: optSpec{short: "uCS", long: []string{"unset", "chdir", "split-string"},
		flags: []string{"ignore-environment", "null", "debug", "list-signal-handling", "block-signal", "default-signal", "ignore-signal", "help", "version"}},
		special: true},
	"xargs": {opts: optSpec{short: "adEILnPs",
		long:  []string{"arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"},
		flags: []string{"null", "eof", "replace", "max-lines", "interactive", "no-run-if-empty", "verbose", "exit", "open-tty", "show-limits", "help", "version"}},
		more: true},
	"parallel": {opts: optSpec{short: "jnNSaIdEPsL", long: []string{"jobs", "arg-file", "sshlogin", "delimiter", "max-args", "max-lines", "max-procs", "joblog", "results", "tmpdir", "workdir", "timeout", "retries", "colsep", "env", "basefile", "return", "transfer-file"}},
		more: true, special: true},
	"sudo": {opts: optSpec{short: "ugChpPrtUTDR",
		long:  []string{"user", "group", "close-from", "host", "prompt", "role", "type", "other-user", "command-timeout", "chdir", "chroot"},
		flags: []string{"askpass", "background", "bell", "edit", "help", "login", "list", "non-interactive", "preserve-env", "preserve-groups", "reset-timestamp", "remove-timestamp", "shell", "stdin", "validate", "version", "set-home"}},
		shell: true},
	"doas":   {opts: optSpec{short: "uC"}, shell: true},
	"pkexec": {opts: optSpec{long: []string{"user"}, flags: []string{"disable-internal-agent", "keep-cwd", "help", "version"}}, shell: true},
	"su": {opts: optSpec{short: "csgGw", long: []string{"command", "session-command", "shell", "group", "supp-group", "whitelist-environment"},
		flags: []string{"login", "preserve-environment", "pty", "fast", "help", "version"}}, special: true},
	"runuser": {opts: optSpec{short: "csgGwu", long: []string{"command", "session-command", "shell", "group", "supp-group", "whitelist-environment", "user"},
		flags: []string{"login", "preserve-environment", "pty", "fast", "help", "version"}}, special: true},
	"setpriv": {opts: optSpec{
		long: []string{"reuid", "regid", "ruid", "euid", "rgid", "egid", "groups", "inh-caps", "ambient-caps", "bounding-set",
			"securebits", "pdeathsig", "selinux-label", "apparmor-profile", "landlock-access", "landlock-rule", "seccomp-filter"},
		flags: []string{"clear-groups", "keep-groups", "init-groups", "no-new-privs", "reset-env", "dump", "list-caps", "help", "version"}}},
	"prlimit": {opts: optSpec{short: "po", long: []string{"pid", "output"},
		flags: []string{"noheadings", "raw", "verbose", "help", "version", "as", "core", "cpu", "data", "fsize", "locks", "memlock",
			"msgqueue", "nice", "nofile", "nproc", "rss", "rtprio", "rttime", "sigpending", "stack"}}, pid: "p", pidLong: []string{"pid"}},
	"script": {opts: optSpec{short: "cEIOBTmo", long: []string{"command", "echo", "log-in", "log-out", "log-io", "log-timing", "logging-format", "output-limit"},
		flags: []string{"append", "return", "flush", "force", "quiet", "timing", "help", "version"}}, special: true},
	"sg":               {special: true},
	"newgrp":           {special: true},
	"chronic":          {},
	"flock":            {opts: optSpec{short: "wE", long: []string{"timeout", "conflict-exit-code"}, flags: []string{"shared", "exclusive", "unlock", "nonblock", "nb", "close", "no-fork", "verbose", "help", "version"}}, special: true},
	"watch":            {opts: optSpec{short: "nq", long: []string{"interval", "equexit"}}, special: true},
	"taskset":          {opts: optSpec{flags: []string{"all-tasks", "pid", "cpu-list", "help", "version"}}, operands: 1, pid: "p", pidLong: []string{"pid"}},
	"chrt":             {opts: optSpec{short: "TPD", long: []string{"sched-runtime", "sched-period", "sched-deadline"}}, operands: 1, pid: "p", pidLong: []string{"pid"}},
	"unshare":          {opts: optSpec{short: "SGRw", long: []string{"setuid", "setgid", "root", "wd", "propagation", "setgroups", "map-user", "map-group", "map-users", "map-groups", "monotonic", "boottime", "load-interp"}}, shell: true},
	"nsenter":          {opts: optSpec{short: "tSG", long: []string{"target", "setuid", "setgid"}}, shell: true},
	"strace":           {opts: optSpec{short: "abeEIoOpPsSuUX", long: []string{"output", "trace", "signal", "status", "attach", "user", "env", "string-limit", "trace-path", "columns"}}},
	"ltrace":           {opts: optSpec{short: "aAeEFlnoOpsuwxX", long: []string{"output", "align", "library"}}},
	"busybox":          {special: true},
	"toybox":           {special: true},
	"fakeroot":         {opts: optSpec{short: "lsi", long: []string{"lib", "faked"}}},
	"dbus-run-session": {opts: optSpec{long: []string{"config-file", "dbus-daemon"}}},
	"ssh-agent":        {opts: optSpec{short: "aEPt"}},
	"unbuffer":         {},
	"torsocks":         {opts: optSpec{short: "upaP"}},
	"proxychains":      {opts: optSpec{short: "f"}},
	"proxychains4":     {opts: optSpec{short: "f"}},
	"catchsegv":        {},
	"caffeinate":       {opts: optSpec{short: "tw"}},
	"systemd-run": {opts: optSpec{short: "pEMHu", long: []string{"property", "setenv", "machine", "host", "unit", "description",
		"slice", "uid", "gid", "nice", "working-directory", "service-type", "on-active", "on-boot", "on-startup",
		"on-unit-active", "on-unit-inactive", "on-calendar", "timer-property", "path-property", "socket-property",
		"slice-inherit", "json", "background", "expand-environment"},
		flags: []string{"user", "system", "scope", "pty", "pipe", "quiet", "wait", "collect", "remain-after-exit",
			"send-sighup", "same-dir", "shell", "no-ask-password", "no-block", "on-clock-change", "on-timezone-change", "help", "version"}},
		shell: true},
	"firejail":      {},
	"valgrind":      {},
	"eatmydata":     {},
	"nocache":       {},
	"vglrun":        {opts: optSpec{short: "cdq"}},
	"prime-run":     {},
	"gamemoderun":   {},
	"torify":        {},
	"faketime":      {opts: optSpec{short: "p"}, operands: 1},
	"flatpak-spawn": {opts: optSpec{long: []string{"env", "unset-env", "forward-fd", "directory", "app-path", "usr-path", "sandbox-expose", "sandbox-expose-ro", "sandbox-flag"}}},
	"dbus-launch":   {opts: optSpec{long: []string{"config-file", "autolaunch"}}},
	"xvfb-run":      {opts: optSpec{short: "efnpsw", long: []string{"error-file", "auth-file", "server-num", "xauth-protocol", "server-args", "wait"}}},
	"kitty":         {opts: optSpec{short: "cotTdw", long: []string{"config", "override", "title", "class", "name", "directory", "session", "listen-on", "instance-group", "start-as", "watcher", "position", "os-window-tag", "logo", "logo-position", "logo-alpha"}}},
	"foot":          {opts: optSpec{short: "cotTafwWDsl", long: []string{"config", "override", "term", "title", "app-id", "font", "window-size-pixels", "window-size-chars", "working-directory", "log-level", "log-colorize"}}},
	"daemonize":     {opts: optSpec{short: "aceoplu"}},
	"runcon":        {opts: optSpec{short: "curtl", long: []string{"user", "role", "type", "range"}}, operands: 1},
	"cgexec":        {opts: optSpec{short: "g", flags: []string{"sticky"}}},
	"numactl":       {opts: optSpec{short: "imNCPpwb", long: []string{"interleave", "membind", "cpunodebind", "physcpubind", "preferred", "weighted-interleave", "cpubind"}}},
	"trickle":       {opts: optSpec{short: "duwtln"}},
	"cpulimit":      {opts: optSpec{short: "lep", long: []string{"limit", "exe", "pid"}}, pid: "pe", pidLong: []string{"pid", "exe"}},
	"chpst":         {opts: optSpec{short: "uUbe/nlLmdopfcC"}},
	"aa-exec":       {opts: optSpec{short: "pnf", long: []string{"profile", "namespace", "file"}}},
	"proot":         {opts: optSpec{short: "rbwqkm", long: []string{"rootfs", "bind", "cwd", "qemu", "kernel-release", "mount"}}},
	"fakechroot":    {opts: optSpec{short: "ecld", long: []string{"environment", "config-dir", "lib", "elfloader"}}},
	"sem":           {opts: optSpec{short: "j", long: []string{"jobs", "id", "semaphorename", "timeout"}}},
}

// unwrap adds the command a wrapper runs.
func (ps *parser) unwrap(name string, w wrapper, c Command, depth int) {
	add := func(inner Command) {
		if w.more {
			inner.more = name + " adds arguments read from its input"
		}
		ps.add(inner, depth+1)
	}
	switch name {
	case "env":
		for _, s := range w.opts.scan(c, 1) {
			if v, vi, ok := w.opts.value(c, 1, s, 'S', "split-string"); ok {
				if c.kind(vi) != wordLiteral {
					ps.unknown(c, "env -S splits a computed string (%s)", c.Argv[vi])
					continue
				}
				ps.script(v+" "+Canonical(c.Argv[s:]), depth+1)
				continue
			}
			if d, di, ok := w.opts.value(c, 1, s, 'C', "chdir"); ok {
				c = c.in(d, c.kind(di) != wordLiteral) // env -C DIR
			}
			i := s
			for i < len(c.Argv) && c.kind(i) <= wordEnv && (c.Argv[i] == "-" || strings.Contains(c.Argv[i], "=")) {
				if n, v, ok := strings.Cut(c.Argv[i], "="); ok && isIdent(n) {
					ps.setVar(n, v, c.kind(i) != wordLiteral)
					ps.setting(n, v, c.kind(i) != wordLiteral, depth)
				}
				i++
			}
			add(c.from(i))
		}
	case "su", "runuser":
		if v, vi, ok := w.opts.anywhere(c, 'c', "command", "session-command"); ok {
			if c.kind(vi) != wordLiteral {
				ps.unknown(c, "%s -c runs a computed script (%s)", name, c.Argv[vi])
				return
			}
			ps.script(v, depth+1)
			return
		}
		if _, _, ok := w.opts.anywhere(c, 'u', "user"); ok && name == "runuser" {
			for _, s := range w.opts.scan(c, 1) {
				add(c.from(s))
			}
			return
		}
		ps.unknown(c, "%s without -c starts a shell that reads its input, which cannot be read in advance", name)
	case "script":
		if v, vi, ok := w.opts.anywhere(c, 'c', "command"); ok {
			if c.kind(vi) != wordLiteral {
				ps.unknown(c, "script -c runs a computed script (%s)", c.Argv[vi])
				return
			}
			ps.script(v, depth+1)
			return
		}
		ps.unknown(c, "script without -c starts a shell that reads its input, which cannot be read in advance")
	case "sg":
		// sg [-] [GROUP [-c] COMMAND]: the command is a script for sh -c.
		i := 1
		if i < len(c.Argv) && c.Argv[i] == "-" {
			i++
		}
		i++ // the group
		if i < len(c.Argv) && c.Argv[i] == "-c" {
			i++
		}
		if i >= len(c.Argv) {
			ps.unknown(c, "sg without a command starts a shell that reads its input, which cannot be read in advance")
			return
		}
		rest := c.from(i)
		if rest.Unknown() != "" {
			ps.unknown(c, "sg runs a computed script (%s)", strings.Join(rest.Argv, " "))
			return
		}
		ps.script(strings.Join(rest.Argv, " "), depth+1)
	case "newgrp":
		ps.unknown(c, "newgrp starts a shell that reads its input, which cannot be read in advance")
	case "flock":
		// flock [options] FILE -c COMMAND | FILE COMMAND [ARGS] | FD
		for _, s := range w.opts.scan(c, 1) {
			if s+2 < len(c.Argv) && (c.Argv[s+1] == "-c" || c.Argv[s+1] == "--command") {
				ps.script(c.Argv[s+2], depth+1)
				continue
			}
			if s+1 < len(c.Argv) {
				add(c.from(s + 1))
			}
		}
	case "watch":
		for _, s := range w.opts.scan(c, 1) {
			if s >= len(c.Argv) {
				continue
			}
			exec := slices.ContainsFunc(c.Argv[1:s], func(a string) bool {
				return a == "--exec" || shortCluster(a, 'x') && !strings.HasPrefix(a, "--")
			})
			rest := c.from(s)
			if exec {
				add(rest)
			} else if rest.Unknown() != "" {
				ps.unknown(c, "watch runs a computed script (%s)", strings.Join(rest.Argv, " "))
			} else {
				ps.script(strings.Join(rest.Argv, " "), depth+1) // watch runs sh -c "ARGS..."
			}
		}
	case "busybox", "toybox":
		if len(c.Argv) > 1 && !strings.HasPrefix(c.Argv[1], "-") {
			add(c.from(1))
		}
	case "parallel":
		for _, s := range w.opts.scan(c, 1) {
			inner := c.from(s)
			for k, a := range inner.Argv {
				if strings.HasPrefix(a, ":::") {
					inner = inner.upTo(k)
					break
				}
			}
			add(replaced(inner, "{"))
		}
	default:
		for _, s := range w.opts.scan(c, 1) {
			if w.acts(c, s) {
				continue
			}
			s += w.operands
			if s >= len(c.Argv) {
				if w.shell {
					ps.unknown(c, "%s without a command starts a shell that reads its input, which cannot be read in advance", name)
				}
				continue
			}
			inner := c.from(s)
			if name == "xargs" {
				inner = replaced(inner, xargsReplace(w, c, s))
			}
			add(inner)
		}
	}
}

// xargsReplace returns the string xargs -I (-i, --replace) replaces with
// what it reads, or "".
func xargsReplace(w wrapper, c Command, end int) string {
	if v, _, ok := w.opts.value(c, 1, end, 'I', "replace"); ok {
		return v
	}
	for _, a := range c.Argv[1:end] {
		if a == "--replace" || shortCluster(a, 'i') {
			if _, r, ok := strings.Cut(a, "i"); ok && r != "" && !strings.HasPrefix(a, "--") {
				return r
			}
			return "{}"
		}
	}
	return ""
}

// replaced marks the words of c that hold r, which a program replaces
// with what it reads (xargs -I {}, parallel's {}), as computed.
func replaced(c Command, r string) Command {
	if r == "" || !slices.ContainsFunc(c.Argv, func(a string) bool { return strings.Contains(a, r) }) {
		return c
	}
	d := c
	d.kinds = make([]wordKind, len(c.Argv))
	d.tails = make([]string, len(c.Argv))
	for i, a := range c.Argv {
		d.kinds[i], d.tails[i] = c.kind(i), c.tail(i)
		if strings.Contains(a, r) {
			d.kinds[i] = max(d.kinds[i], wordOne)
			d.tails[i] = a[strings.LastIndex(a, r)+len(r):]
		}
	}
	return d
}
