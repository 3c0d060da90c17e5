package approval

import "strings"

// The programs here run a command given in an option or an argument
// (tar --to-command, rsync -e, ssh -o ProxyCommand=, sed's e command,
// socat EXEC:, man -P, zip -TT): a literal one is judged as a script, a
// computed one is unknown.

// optionCode returns the values of c's options that hold a command: a
// long option (--name=V or --name V) among longs, or a short one (-xV or
// -x V) among shorts; prefix, when not "", must start the value and is
// taken off (exec= of tar's --checkpoint-action).
func optionCode(c Command, shorts string, longs ...string) []word {
	var out []word
	for i := 1; i < len(c.Argv); i++ {
		a := c.Argv[i]
		if a == "--" {
			break
		}
		next := func() {
			if i+1 < len(c.Argv) {
				out = append(out, word{text: c.Argv[i+1], kind: c.kind(i + 1)})
				i++
			}
		}
		switch {
		case strings.HasPrefix(a, "--"):
			name, v, eq := strings.Cut(a[2:], "=")
			for _, l := range longs {
				if name != "" && strings.HasPrefix(l, name) && len(name) >= 3 || name == l {
					if eq {
						out = append(out, word{text: v, kind: c.kind(i)})
					} else {
						next()
					}
					break
				}
			}
		case len(a) > 1 && a[0] == '-' && shorts != "":
			for j := 1; j < len(a); j++ {
				if strings.IndexByte(shorts, a[j]) >= 0 {
					if j+1 < len(a) {
						out = append(out, word{text: a[j+1:], kind: c.kind(i)})
					} else {
						next()
					}
					break
				}
			}
		}
	}
	return out
}

// judgeCode judges each word as a script program runs.
func (ps *parser) judgeCode(name string, c Command, ws []word, depth int) {
	for _, w := range ws {
		if w.kind > wordEnv {
			ps.unknown(c, "%s runs a computed command (%s)", name, w.text)
		} else if strings.TrimSpace(w.text) != "" {
			ps.code(w.text, name, depth)
		}
	}
}

// argCode judges the commands the options and arguments of the programs
// above hold.
func (ps *parser) argCode(name string, c Command, depth int) {
	switch name {
	case "tar", "gtar", "bsdtar":
		ps.judgeCode(name, c, optionCode(c, "IF", "use-compress-program", "to-command", "info-script",
			"new-volume-script", "rsh-command"), depth)
		for _, w := range optionCode(c, "", "checkpoint-action") {
			if v, ok := strings.CutPrefix(w.text, "exec="); ok {
				w.text = v
				ps.judgeCode(name, c, []word{w}, depth)
			}
		}
	case "rsync":
		ps.judgeCode(name, c, optionCode(c, "e", "rsh"), depth)
	case "ssh", "scp", "sftp":
		for _, w := range optionCode(c, "o", "\x00") {
			k, v, _ := strings.Cut(strings.TrimLeft(w.text, " \t"), "=")
			if i := strings.IndexAny(k, " \t"); i >= 0 && !strings.Contains(w.text[:len(k)], "=") {
				k, v = k[:i], k[i+1:]
			}
			switch strings.ToLower(strings.TrimSpace(k)) {
			case "proxycommand", "localcommand", "knownhostscommand":
				w.text = v
				ps.judgeCode(name, c, []word{w}, depth)
			}
		}
		if name != "ssh" {
			ps.judgeCode(name, c, optionCode(c, "S", "\x00"), depth)
		}
	case "man":
		ps.judgeCode(name, c, optionCode(c, "PH", "pager", "html"), depth)
	case "zip":
		ps.judgeCode(name, c, optionCode(c, "", "unzip-command"), depth)
		for i := 1; i+1 < len(c.Argv); i++ {
			if c.Argv[i] == "-TT" {
				ps.judgeCode(name, c, []word{{text: c.Argv[i+1], kind: c.kind(i + 1)}}, depth)
			}
		}
	case "socat":
		for i := 1; i < len(c.Argv); i++ {
			a := c.Argv[i]
			head, rest, ok := strings.Cut(a, ":")
			if h := strings.ToUpper(head); ok && (h == "EXEC" || h == "SYSTEM") {
				if c.kind(i) > wordEnv {
					ps.unknown(c, "socat runs a computed command (%s)", a)
					continue
				}
				cmd, _, _ := strings.Cut(rest, ",")
				ps.code(cmd, name, depth)
			}
		}
	case "sed", "gsed":
		ps.sed(name, c, depth)
	}
}

// sed judges GNU sed's e command (e COMMAND runs it; e alone, and the e
// flag of s, run the pattern space: unknown).
func (ps *parser) sed(name string, c Command, depth int) {
	var scripts []word
	explicit := false
	for i := 1; i < len(c.Argv); i++ {
		a := c.Argv[i]
		switch {
		case a == "-e" || a == "--expression":
			explicit = true
			if i+1 < len(c.Argv) {
				scripts = append(scripts, word{text: c.Argv[i+1], kind: c.kind(i + 1)})
				i++
			}
		case strings.HasPrefix(a, "--expression="):
			explicit = true
			scripts = append(scripts, word{text: a[len("--expression="):], kind: c.kind(i)})
		case len(a) > 2 && a[0] == '-' && a[1] != '-' && strings.Contains(a, "e") && !strings.Contains(a[:strings.IndexByte(a, 'e')], "l"):
			explicit = true
			if j := strings.IndexByte(a, 'e'); j+1 < len(a) {
				scripts = append(scripts, word{text: a[j+1:], kind: c.kind(i)})
			} else if i+1 < len(c.Argv) {
				scripts = append(scripts, word{text: c.Argv[i+1], kind: c.kind(i + 1)})
				i++
			}
		case a == "-f" || strings.HasPrefix(a, "--file"):
			explicit = true
			i++
		case a == "-l" || a == "--line-length":
			i++
		case strings.HasPrefix(a, "-") && a != "-":
		default:
			if !explicit {
				scripts = append(scripts, word{text: a, kind: c.kind(i)})
				explicit = true
			}
		}
	}
	for _, s := range scripts {
		if s.kind > wordEnv {
			if strings.Contains(s.text, "e") {
				ps.unknown(c, "%s runs a computed script (%s), whose e command runs commands", name, s.text)
			}
			continue
		}
		for _, cmd := range sedExec(s.text) {
			if cmd == "" {
				ps.unknown(c, "%s's e runs the pattern space as a command, known only when it runs", name)
			} else {
				ps.code(cmd, name, depth)
			}
		}
	}
}

// sedExec returns the commands a sed script's e commands run, "" for the
// pattern space (e alone, or s///e).
func sedExec(script string) []string {
	var out []string
	i := 0
	skipAddr := func() {
		for i < len(script) {
			ch := script[i]
			switch {
			case ch == '/' || ch == '\\':
				d := ch
				if ch == '\\' && i+1 < len(script) {
					i++
					d = script[i]
				}
				for i++; i < len(script) && script[i] != d; i++ {
					if script[i] == '\\' {
						i++
					}
				}
				i++
			case strings.IndexByte("0123456789$,~!+ \t", ch) >= 0:
				i++
			default:
				return
			}
		}
	}
	for i < len(script) {
		for i < len(script) && strings.IndexByte(" \t\n;{}", script[i]) >= 0 {
			i++
		}
		skipAddr()
		if i >= len(script) {
			break
		}
		cmd := script[i]
		i++
		switch cmd {
		case 'e':
			end := strings.IndexByte(script[i:], '\n')
			if end < 0 {
				end = len(script) - i
			}
			out = append(out, strings.TrimSpace(script[i:i+end]))
			i += end
		case 'a', 'i', 'c', 'r', 'R', 'w', 'W', 'b', 't', 'T', ':', '#', 'q', 'Q', 'l', 'L', 'v', 'F', 'z':
			// text, file name or label to the end of the line
			if cmd == 'b' || cmd == 't' || cmd == 'T' || cmd == 'q' || cmd == 'Q' || cmd == 'l' || cmd == 'L' {
				for i < len(script) && script[i] != '\n' && script[i] != ';' && script[i] != '}' {
					i++
				}
				continue
			}
			for i < len(script) && script[i] != '\n' {
				i++
			}
		case 's', 'y':
			if i >= len(script) {
				break
			}
			d := script[i]
			i++
			for n := 0; n < 2 && i < len(script); i++ {
				if script[i] == '\\' {
					i++
				} else if script[i] == d {
					n++
				}
			}
			flags := i
			for i < len(script) && strings.IndexByte("gpiImMe0123456789", script[i]) >= 0 {
				i++
			}
			if cmd == 's' && strings.Contains(script[flags:i], "e") {
				out = append(out, "")
			}
			if cmd == 's' && i < len(script) && script[i] == 'w' {
				for i < len(script) && script[i] != '\n' {
					i++
				}
			}
		}
	}
	return out
}
