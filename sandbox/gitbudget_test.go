package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// harmlessEntries is a configuration file of n entries git knows and the
// survey does not (each noteworthy, none running anything).
func harmlessEntries(n int) string {
	return "[x]\n" + strings.Repeat("\ta = bcdef\n", n)
}

// TestConfigBudgetHardLinks: what a survey parses of git's configuration
// is bounded whatever the files' names (fresh-eyes review: an 8 MiB file
// included through 32 hard links cost 152 s and 9 GB every command), and
// the files left unread are told after every command, each by name: a
// core.fsmonitor in one past the bound is not lost.
func TestConfigBudgetHardLinks(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	g.write(t, ".git/big", harmlessEntries(maxSurveyConfigEntries), 0o644)
	// Written, not set through git: git reads every include each time.
	cfg := "[include]\n\tpath = big\n"
	for i := range 32 {
		if err := os.Link(g.ws+"/.git/big", fmt.Sprintf("%s/.git/big%d", g.ws, i)); err != nil {
			t.Fatal(err)
		}
		cfg += fmt.Sprintf("[include]\n\tpath = big%d\n", i)
	}
	g.write(t, ".git/late", "[core]\n\tfsmonitor = ./evil.sh\n", 0o644)
	g.write(t, ".git/config", cfg+"[include]\n\tpath = late\n", 0o644)
	plan := g.plan(t, nil)
	if !slices.Contains(plan.Protected, g.ws+"/.git/late") {
		t.Errorf("the include past the bound is not kept read-only: %v", plan.Protected)
	}
	st := g.watch(t)
	// The listed entries, and one item for each file left unread.
	if n := st.Len(); n > maxConfigItems+64+33 {
		t.Errorf("the state holds %d items: the survey's bound (%d listed) does not hold", n, maxConfigItems)
	}
	u := st.Unchecked(GitState{})
	for _, f := range []string{"/.git/late: ", "/.git/big31: "} {
		if !slices.ContainsFunc(u, func(l string) bool { return strings.Contains(l, f) && strings.Contains(l, "not read whole") }) {
			t.Errorf("%s, past the bound, is not told as unread after every command: %q", f, u)
		}
	}
	// Within the budget, the file is read and what it sets is told.
	g.write(t, ".git/config", "[include]\n\tpath = late\n", 0o644)
	news := g.watch(t).Since(GitState{})
	if !slices.ContainsFunc(news, func(l string) bool { return strings.Contains(l, "/.git/late: core.fsmonitor = ./evil.sh") }) {
		t.Errorf("the file within the budget is not read: %q", news)
	}
}

// TestConfigBudgetOneLargeFile: one file of harmless entries fills the
// budget; a repository beside it is told: its own small config is read
// from the reserve (folded past the entries listed one by one), or left
// unread, and told so, by name.
func TestConfigBudgetOneLargeFile(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	g.write(t, ".git/big", harmlessEntries(maxSurveyConfigEntries+10), 0o644)
	g.git(t, "", "config", "include.path", "big")
	g.repo(t, "other")
	g.git(t, "other", "config", "core.pager", "./pager.sh")
	st := g.watch(t)
	u := st.Unchecked(GitState{})
	if !slices.ContainsFunc(u, func(l string) bool {
		return strings.Contains(l, "/.git/big: ") && strings.Contains(l, "not read whole")
	}) {
		t.Errorf("the file read in part is not told: %q", u)
	}
	news := st.Since(GitState{})
	if !slices.ContainsFunc(news, func(l string) bool { return strings.Contains(l, "other/.git/config: core.pager = ./pager.sh") }) &&
		!slices.ContainsFunc(u, func(l string) bool {
			return strings.Contains(l, "other/.git/config: ") && (strings.Contains(l, "not read whole") || strings.Contains(l, "more entries that are not known to be harmless"))
		}) {
		t.Errorf("the other repository's core.pager is neither told, nor its file told unread or folded: %q", u)
	}
}

// TestConfigFoldedEntries: past maxConfigItems a file's entries are
// folded into one item whose digest changes with any of them: a command
// that rewrites one is told.
func TestConfigFoldedEntries(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	var cfg strings.Builder
	cfg.WriteString("[alias]\n")
	for i := range maxConfigItems + 100 {
		fmt.Fprintf(&cfg, "\ta%d = !true\n", i)
	}
	g.write(t, ".git/many", cfg.String(), 0o644)
	g.git(t, "", "config", "include.path", "many")
	before := g.watch(t)
	if n := before.Len(); n > maxConfigItems+64 {
		t.Errorf("the state holds %d items", n)
	}
	if u := before.Unchecked(GitState{}); !slices.ContainsFunc(u, func(l string) bool {
		return strings.Contains(l, "/.git/many: ") && strings.Contains(l, " more entries")
	}) {
		t.Errorf("the folded entries are not told after every command: %q", u)
	}
	g.write(t, ".git/many", strings.Replace(cfg.String(), fmt.Sprintf("a%d = !true", maxConfigItems+99), fmt.Sprintf("a%d = !./evil.sh", maxConfigItems+99), 1), 0o644)
	after := g.watch(t)
	if news := after.Since(before); !slices.ContainsFunc(news, func(l string) bool {
		return strings.Contains(l, "/.git/many: ") && strings.Contains(l, " more entries")
	}) {
		t.Errorf("an entry rewritten past the listed ones is not told: %q", news)
	}
	if news := g.watch(t).Since(after); len(news) != 0 {
		t.Errorf("nothing changed, yet %q", news)
	}
}

// TestConfigRereadsCharged: a file read again is charged by its entries
// (fresh-eyes review: one of 100 000 entries included 1025 times took
// 49 s); past the budget the file is not walked again, and is told as
// unread after every command.
func TestConfigRereadsCharged(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	g.write(t, ".git/big", harmlessEntries(maxSurveyConfigEntries/3), 0o644)
	g.write(t, ".git/inc", strings.Repeat("[include]\n\tpath = big\n", 1025), 0o644)
	g.git(t, "", "config", "include.path", "inc")
	u := g.watch(t).Unchecked(GitState{})
	if !slices.ContainsFunc(u, func(l string) bool {
		return strings.Contains(l, "/.git/big: ") && strings.Contains(l, "not read whole")
	}) {
		t.Errorf("the rereads past the budget are not told: %q", u)
	}
}

// TestConfigProgramsBounded: the paths the configuration names as programs
// are looked at, kept and hashed up to maxProgramWords a survey (fresh-eyes
// review: one alias naming 20 000 files made 20 000 mounts); past it, that
// is told after every command.
func TestConfigProgramsBounded(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	mkdir(t, g.ws+"/f")
	var b strings.Builder
	b.WriteString("[alias]\n\tx = !")
	for i := range 2 * maxProgramWords {
		g.write(t, fmt.Sprintf("f/%d", i), "", 0o644)
		fmt.Fprintf(&b, "f/%d ", i)
	}
	g.write(t, ".git/config.d", b.String()+"\n", 0o644)
	g.git(t, "", "config", "include.path", "config.d")
	if n := len(g.plan(t, nil).Protected); n > maxProgramWords+64 {
		t.Errorf("the plan keeps %d paths", n)
	}
	st := g.watch(t)
	if n := st.Len(); n > maxProgramWords+64 {
		t.Errorf("the state holds %d items", n)
	}
	if u := st.Unchecked(GitState{}); !slices.ContainsFunc(u, func(l string) bool { return strings.Contains(l, "more than 1024 paths") }) {
		t.Errorf("the bound is not told after every command: %q", u)
	}
}

// TestCommondirPastTheBound: git reads a commondir whole, however long,
// its trailing line ends dropped, up to its first NUL: one of 2 MiB with
// "PATH\0" first is PATH to git, whose core.fsmonitor git status runs
// (red team 6: the survey read none past 1 MiB and took the gitdir for
// its own common directory, untold). The survey reads at most 1 MiB of it
// and follows PATH; where the path is past that bound (no NUL in it: git
// still takes "PATH" followed by two million "/" for PATH), the file is
// kept read-only and told after every command; and so a worktree's
// commondir and gitdir file.
func TestCommondirPastTheBound(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	g.git(t, "", "worktree", "add", "-q", "wt")
	before := g.watch(t)
	c := g.ws + "/node_modules/.cache/c"
	mkdir(t, c)
	if out, err := exec.Command("cp", "-r", g.ws+"/.git/.", c).CombinedOutput(); err != nil {
		t.Fatal(err, string(out))
	}
	g.write(t, "node_modules/.cache/c/config", "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = ./evil.sh\n", 0o644)
	g.write(t, ".git/commondir", "../node_modules/.cache/c\x00"+strings.Repeat("x", 2<<20)+"\n", 0o644)
	if out := g.git(t, "", "rev-parse", "--path-format=absolute", "--git-common-dir"); strings.TrimSpace(out) != c {
		t.Logf("git takes %q for the common directory, not %s", out, c)
	}
	news := g.watch(t).Since(before)
	for _, want := range []string{g.ws + "/.git/commondir points to " + c, c + "/config: core.fsmonitor = ./evil.sh"} {
		if !slices.ContainsFunc(news, func(l string) bool { return strings.Contains(l, want) }) {
			t.Errorf("%q is not told: %q", want, news)
		}
	}

	// Past the bound: told after every command, each file by name.
	long := strings.Repeat("/", 2<<20) + "\n"
	g.write(t, ".git/commondir", "../node_modules/.cache/c"+long, 0o644)
	admin := g.ws + "/.git/worktrees/wt"
	g.write(t, ".git/worktrees/wt/commondir", "../../../node_modules/.cache/c"+long, 0o644)
	g.write(t, ".git/worktrees/wt/gitdir", g.ws+"/wt/.git"+long, 0o644)
	if out := g.git(t, "", "rev-parse", "--path-format=absolute", "--git-common-dir"); strings.TrimSpace(out) != c {
		t.Logf("git takes %q for the common directory, not %s", out, c)
	}
	st := g.watch(t)
	u := st.Unchecked(before)
	for _, f := range []string{g.ws + "/.git/commondir", admin + "/commondir", admin + "/gitdir"} {
		if !slices.ContainsFunc(u, func(l string) bool { return strings.Contains(l, f+": ") && strings.Contains(l, "past the") }) {
			t.Errorf("%s, its path past the bound, is not told after every command: %q", f, u)
		}
	}
	plan := g.plan(t, nil)
	for _, f := range []string{g.ws + "/.git/commondir", admin + "/commondir", admin + "/gitdir"} {
		if !slices.Contains(plan.Protected, f) {
			t.Errorf("%s is not kept read-only: %v", f, plan.Protected)
		}
	}
}

// TestPausedPastTheBound: git reads a paused rebase's to-do list and its
// strategy file whole, however long (red team 6: a to-do list of 9 MiB,
// an exec line first, and a strategy file of 2 MiB, "x/evil\0" first,
// which git rebase --continue runs as git-merge-x/evil, were not read,
// and nothing was told). The to-do list is read line by line, its first
// 8 MiB, the strategy up to its NUL as git reads it; past that, the file
// is told after every command. The exec lines are listed up to a bound,
// the others counted and hashed in: a change among them is told.
func TestPausedPastTheBound(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "")
	before := g.watch(t)
	pad := strings.Repeat("#"+strings.Repeat("p", 99)+"\n", (9<<20)/100)
	g.write(t, ".git/rebase-merge/interactive", "", 0o644)
	g.write(t, ".git/rebase-merge/git-rebase-todo", "exec ./evil.sh\n"+pad, 0o644)
	g.write(t, ".git/rebase-merge/strategy", "x/evil\x00"+strings.Repeat("y", 2<<20)+"\n", 0o644)
	news := g.watch(t).Since(before)
	for _, want := range []string{"exec ./evil.sh", "merge strategy x/evil (runs git-merge-x/evil)"} {
		if !slices.ContainsFunc(news, func(l string) bool { return strings.Contains(l, want) }) {
			t.Errorf("%q is not told: %q", want, news)
		}
	}

	// Past the bound: told after every command, each file by name.
	g.write(t, ".git/rebase-merge/git-rebase-todo", pad+"exec ./evil.sh\n", 0o644)
	g.write(t, ".git/rebase-merge/strategy", strings.Repeat("y", 2<<20)+"\n", 0o644)
	g.write(t, ".git/sequencer/todo", pad+"exec ./evil.sh\n", 0o644)
	u := g.watch(t).Unchecked(before)
	for _, f := range []string{"rebase-merge/git-rebase-todo", "rebase-merge/strategy", "sequencer/todo"} {
		if !slices.ContainsFunc(u, func(l string) bool {
			return strings.Contains(l, g.ws+"/.git/"+f+": ") && strings.Contains(l, "past the")
		}) {
			t.Errorf("%s, past the bound, is not told after every command: %q", f, u)
		}
	}

	// Ten thousand exec lines: a bounded item, a change past those listed
	// told.
	os.Remove(g.ws + "/.git/sequencer/todo")
	os.Remove(g.ws + "/.git/rebase-merge/strategy")
	var b strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&b, "exec ./e%d.sh\n", i)
	}
	g.write(t, ".git/rebase-merge/git-rebase-todo", b.String(), 0o644)
	st := g.watch(t)
	if news := st.Since(before); len(strings.Join(news, "\n")) > 1<<16 {
		t.Errorf("the to-do list's exec lines make %d bytes of items", len(strings.Join(news, "\n")))
	}
	g.write(t, ".git/rebase-merge/git-rebase-todo", strings.Replace(b.String(), "exec ./e9999.sh", "exec ./evil.sh", 1), 0o644)
	if news := g.watch(t).Since(st); len(news) == 0 {
		t.Errorf("an exec line past those listed, rewritten, is not told")
	}
}

// TestConfigReserve: a repository's own small config is read whole
// whatever is left of the budget, for the first maxReservedConfigs of
// them; a larger one, or a file of another name, is the budget's.
func TestConfigReserve(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) *os.File {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	b := &configBudget{bytes: maxSurveyConfigBytes, entries: maxSurveyConfigEntries}
	small := write("config", "[core]\n\tfsmonitor = ./evil.sh\n")
	if _, ok := b.reserved(small, small.Name()); ok {
		t.Errorf("a file named config, not named a repository's own, was read from the reserve")
	}
	b.own(small.Name())
	if out, ok := b.reserved(small, small.Name()); !ok || lastValue(out, "core.fsmonitor") != "./evil.sh" {
		t.Errorf("a small config is not read from the reserve: %v %v", ok, out)
	}
	other := write("inc", "[core]\n\tfsmonitor = ./evil.sh\n")
	if _, ok := b.reserved(other, other.Name()); ok {
		t.Errorf("an included file was read from the reserve")
	}
	os.Mkdir(filepath.Join(dir, "big"), 0o755)
	large := write("big/config", harmlessEntries(2000))
	b.own(large.Name())
	if _, ok := b.reserved(large, large.Name()); ok {
		t.Errorf("a config past %d bytes was read from the reserve", maxReservedConfig)
	}
	b.reservedFiles = maxReservedConfigs
	if _, ok := b.reserved(small, small.Name()); ok {
		t.Errorf("more than %d configs were read from the reserve", maxReservedConfigs)
	}
}

// TestProgramWordsReserve: a repository's own small config has its first
// programs kept whatever the survey's bound on program paths has left: a
// repository surveyed first (here the older: the host changed projA's
// config since) that names 1100 paths as programs leaves projA's
// core.fsmonitor script read-only (red team 9's order, with the bound on
// program paths in the budget's stead).
func TestProgramWordsReserve(t *testing.T) {
	g := newGitTree(t)
	g.repo(t, "zz")
	var b strings.Builder
	b.WriteString("[core]\n\trepositoryformatversion = 0\n[x]\n")
	for i := range maxProgramWords + 100 {
		fmt.Fprintf(&b, "\ta%d = ./p%d/x\n", i, i)
	}
	g.write(t, "zz/.git/config", b.String(), 0o644)
	g.repo(t, "projA")
	g.git(t, "projA", "config", "core.fsmonitor", "tools/fsmon.sh")
	g.write(t, "projA/tools/fsmon.sh", "#!/bin/sh\n", 0o755)
	plan := g.plan(t, nil)
	if !slices.Contains(plan.Protected, g.ws+"/projA/tools/fsmon.sh") {
		t.Errorf("projA's fsmonitor script is not kept once another repository spent the bound on program paths: %q", plan.Protected)
	}
}
