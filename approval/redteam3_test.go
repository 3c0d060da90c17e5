package approval

import (
	"testing"

	"github.com/unified-exec/unified-exec/policy"
)

// TestRedTeam3Bypasses: the third red team's ways past the default policy
// under never and on-request: each must be forbidden by a rule (F) or
// asked (Q; refused under never).
func TestRedTeam3Bypasses(t *testing.T) {
	const F, Q = "forbid", "ask"
	cases := []struct{ name, script, want string }{
		// A. A variable the line never sets may be empty.
		{"glued after", "git push$NOPE origin main", Q},
		{"alone before", "git $NOPE push origin main", Q},
		{"braced before", "git ${NOPE}push", Q},
		{"quoted glued", `git "$NOPE"push`, Q},
		{"inside", "git p${NOPE}ush", Q},
		{"after -C", "git -C . $NOPE push", Q},
		{"home", "rm -rf ~/$NOPE", F},
		{"home two", "rm -rf ~/$A$B", F},
		{"root glob", "rm -rf $NOPE/*", F},
		{"in bash -c", `bash -c 'git push$NOPE'`, Q},
		{"through env", "env $NOPE git push", Q},
		{"sudo class", "s${NOPE}udo id", F},
		// Unset, these are / (they were unjudged before).
		{"TMPDIR/../..", `rm -rf "$TMPDIR/../.."`, F},
		{"d/..", `rm -rf "$d/.."`, F},
		// Unset, git ull: not a git command, an alias from configuration.
		{"sub ull", `git "$sub"ull`, Q},
		// B-D. git settings that hold a command.
		{"tar.x.command", "git -c tar.x.command='git push origin main' archive --format=x HEAD", Q},
		{"tar.tgz.command", "git -c tar.tgz.command='git push' archive -o a.tgz HEAD", Q},
		{"TAR.X.COMMAND", "git -c TAR.X.COMMAND='git push' archive --format=x HEAD", Q},
		{"tar rm", "git -c tar.x.command='rm -rf ~' archive --format=x HEAD", F},
		{"imap.tunnel", "git -c imap.tunnel='git push origin main' imap-send", Q},
		{"instaweb.httpd", "git -c instaweb.httpd='git push' instaweb", Q},
		{"instaweb --httpd", "git instaweb --httpd='git push'", Q},
		{"instaweb --httpd apart", "git instaweb --httpd 'git push'", Q},
		{"hook.x.command", "git -c hook.x.command='git push' -c hook.x.event=pre-commit commit -m x", Q},
		{"browser.x.cmd", "git -c browser.x.cmd='git push' web--browse --browser=x http://x", Q},
		{"man.x.cmd", "git -c man.x.cmd='git push' help -m log", Q},
		{"sendemail.sendmailCmd", "git -c sendemail.sendmailCmd='git push' send-email x.patch", Q},
		{"sendemail.smtpServer path", "git -c sendemail.smtpServer=/usr/lib/git-core/git-push send-email x.patch", Q},
		{"sendemail.work.sendmailCmd", "git -c sendemail.work.sendmailCmd='git push' send-email --identity=work x.patch", Q},
		{"difftool.x.path", "git -c difftool.x.path=/usr/bin/sudo difftool -t x", F},
		{"mergetool.x.path", "git -c mergetool.x.path=/usr/bin/sudo mergetool -t x", F},
		{"guitool.x.cmd", "git -c guitool.x.cmd='git push' gui", Q},
		{"gpg.ssh.program", "git -c gpg.ssh.program='git push' commit -S -m x", Q},
		// Other pushes.
		{"receive-pack", "git receive-pack /tmp/r.git", Q},
		{"git-receive-pack", "git-receive-pack /tmp/r.git", Q},
		// Tools that run a command from an argument.
		{"sed 1e", "sed '1e git push' f", Q},
		{"sed -e e", "sed -n -e 'p;e git push' f", Q},
		{"sed s///e", "sed 's/.*/git push/e' f", Q},
		{"tar checkpoint", "tar -cf /dev/null --checkpoint=1 --checkpoint-action=exec='git push' .", Q},
		{"tar -I", "tar -I 'git push' -cf x.tar .", Q},
		{"tar --use-compress-program", "tar --use-compress-program='rm -rf ~' -cf x .", F},
		{"tar --to-command", "tar -xf x.tar --to-command='git push'", Q},
		{"rsync -e", "rsync -e 'git push' a b:c", Q},
		{"ssh ProxyCommand", "ssh -o ProxyCommand='git push' x", Q},
		{"ssh -oProxyCommand", "ssh -oProxyCommand='git push' x", Q},
		{"ssh LocalCommand", "ssh -o 'LocalCommand git push' -o PermitLocalCommand=yes x", Q},
		{"socat EXEC", "socat - EXEC:'git push'", Q},
		{"socat SYSTEM", "socat - SYSTEM:'git push',pty", Q},
		{"man -P", "man -P 'git push' ls", Q},
		{"zip -TT", "zip -T -TT 'git push' a.zip f", Q},
		// Changing user.
		{"gosu", "gosu root id", F},
		{"su-exec", "su-exec root id", F},
		{"chpst -u", "chpst -u root id", F},
		{"setuidgid", "setuidgid root id", F},
		{"run0", "run0 id", F},
		{"sudoedit", "sudoedit /etc/passwd", F},
		{"capsh --user", "capsh --user=root -- -c id", F},
		{"chroot --userspec", "chroot --userspec=0:0 / id", F},
		{"start-stop-daemon --chuid", "start-stop-daemon --start --chuid root --exec /bin/id", F},
	}
	for _, mode := range []string{policy.ApprovalNever, policy.ApprovalOnRequest} {
		for _, c := range cases {
			t.Run(mode+"/"+c.name, func(t *testing.T) {
				d := Decide(Request{Argv: sh(c.script), Cwd: testCwd, Home: testHome}, defaultIn(t, mode))
				switch {
				case c.want == F:
					if d.Outcome != Forbidden || d.Rule == nil || d.Rule.Decision != policy.DecisionForbid {
						t.Fatalf("%q: %v by %s (%s), want forbidden by a rule", c.script, d.Outcome, d.By, d.Reason)
					}
				case mode == policy.ApprovalNever:
					if d.Outcome != Forbidden {
						t.Fatalf("%q: %v by %s (%s), want refused", c.script, d.Outcome, d.By, d.Reason)
					}
				default:
					if d.Outcome != NeedsApproval {
						t.Fatalf("%q: %v by %s (%s), want a question", c.script, d.Outcome, d.By, d.Reason)
					}
				}
			})
		}
	}
}

// TestRedTeam3Ordinary: what the third round's fixes leave alone.
func TestRedTeam3Ordinary(t *testing.T) {
	for _, s := range []string{
		"ls $HOME", "echo $PATH", "cd $HOME && git status", `git commit -m "$MSG"`, "git log $REV", "echo \"$NOPE\"",
		"rm -rf $TMPDIR/build", "rm -rf build/$NOPE", "git -C $DIR status", "npm test $ARGS", "make -j$JOBS",
		"git -c tar.tgz.command='gzip -cn' archive -o a.tgz HEAD", "git -c gpg.program=gpg2 log --show-signature",
		"git -c core.sshCommand='ssh -i k' fetch", "git instaweb --httpd=lighttpd",
		"sed -i 's/a/b/g' f", "sed -e 's/x/y/' -e '/^$/d' f", "sed -n '1,5p' f", "sed '/start/,/end/d' f",
		"sed 's/e/E/g; s/x/y/' f", "tar -czf x.tgz .", "tar -xf x.tar -C out", "rsync -av -e ssh a b:c", "ssh -o BatchMode=yes x ls",
		"man -P cat ls", "zip -r a.zip .", "socat - TCP:localhost:80",
		"git -c sendemail.smtpServer=smtp.example.com send-email x.patch", "git -c imap.tunnel='ssh -q host /usr/bin/imapd' imap-send",
	} {
		for _, mode := range []string{policy.ApprovalNever, policy.ApprovalOnRequest} {
			t.Run(mode+"/"+s, func(t *testing.T) {
				d := Decide(Request{Argv: sh(s), Cwd: testCwd, Home: testHome}, defaultIn(t, mode))
				if d.Outcome != Skip {
					t.Fatalf("%q: %v by %s (%s), want skip", s, d.Outcome, d.By, d.Reason)
				}
			})
		}
	}
}
