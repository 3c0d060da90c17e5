//go:build linux && cgo

package cli

/*
// The runtime's mmap, and the C code's, through __wrap_mmap
// (hugeheap_linux.c).
#cgo LDFLAGS: -Wl,--wrap=mmap
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

// The relay: the program's own PID and mount namespaces entered before the
// Go runtime starts, in C, so that wrapping a command starts the binary
// once (see relayEntered). Everything here runs in the process's only
// thread, before main.

static int ue_relay_pid;      // in the program: the relay's pid; 0 when not relayed
static int ue_background;     // the relay started in the background of its terminal's session
static int ue_relay_signaled; // in the relay: the signal that ended the program
static int ue_handed_over;    // in the relay: the program handed its command to unified-exec-mcp
static int ue_handover_fd = -1; // in the program: its end of the hand-over pipe
static volatile sig_atomic_t ue_forwarded; // in the relay: the last signal passed on
static struct sigaction ue_started_with[NSIG]; // in the relay, for a hand-over: as it was started
static sigset_t ue_started_mask;
static pid_t ue_child;

// ue_flags_end is the index of the first argument after main's leading
// flags (leadingFlags): "--", a command or a subcommand, or an unknown
// flag; argc when there is none.
static int ue_flags_end(int argc, char **argv) {
	int i = 1;
	while (i < argc) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0 || a[0] != '-')
			break;
		const char *name = a;
		while (*name == '-')
			name++;
		size_t n = strcspn(name, "=");
		int has_value = name[n] == '=';
		int valued = (n == 6 && strncmp(name, "policy", 6) == 0) ||
			     (n == 9 && strncmp(name, "workspace", 9) == 0) ||
			     (n == 7 && strncmp(name, "sandbox", 7) == 0);
		int network = n == 7 && strncmp(name, "network", 7) == 0;
		if (!valued && !network)
			break;
		if (valued && !has_value) {
			if (i + 1 >= argc)
				break;
			i++;
		}
		i++;
	}
	return i;
}

// ue_no_server is 1 in a program that carries no MCP server (unified-exec:
// cmd/unified-exec defines it so, over this weak 0). It serves by starting
// unified-exec-mcp in its stead, before any namespace (execServer): it
// enters one only to wrap a command.
__attribute__((weak)) int ue_no_server = 0;

// ue_should_enter mirrors main's leadingFlags and run: the program enters a
// namespace of its own (ptyrun.EnterNamespace, called by cmdMain) unless a
// subcommand or the helper runs, or it would start unified-exec-mcp to
// serve. When in doubt it says no, and the program enters one the slower
// way, from Go. wraps says whether it wraps one command (for a program
// without an MCP server, the same as entering).
static int ue_should_enter(int argc, char **argv, int *wraps) {
	*wraps = 0;
	if (argc < 1 || argv[0] == NULL || strcmp(argv[0], "unified-exec-helper") == 0)
		return 0;
	// Set and not empty, as Go reads them (an empty one is no mark).
	const char *ns = getenv("UNIFIED_EXEC_NAMESPACE"), *off = getenv("UNIFIED_EXEC_NO_RELAY");
	if ((ns && *ns) || (off && *off))
		return 0;
	int i = ue_flags_end(argc, argv);
	if (i < argc) {
		static const char *subcommands[] = {"version", "--version", "-version", "tools", "policy",
						    "sandbox", "help", "-h", "--help", "-help", NULL};
		for (const char **s = subcommands; *s; s++)
			if (strcmp(argv[i], *s) == 0)
				return 0;
	}
	// cmdMain's wrap: "--" or a command after the flags.
	*wraps = i < argc && (strcmp(argv[i], "--") == 0 || strcmp(argv[i], "-") == 0 || argv[i][0] != '-');
	if (ue_no_server && !*wraps)
		return 0;
	return 1;
}

extern int ue_huge_heap; // hugeheap_linux.c

static void ue_forward(int sig) {
	int saved = errno;
	ue_forwarded = sig;
	if (ue_child > 0)
		kill(ue_child, sig);
	errno = saved;
}

static int ue_write_file(const char *path, const char *data) {
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, data, strlen(data));
	close(fd);
	return n == (ssize_t)strlen(data) ? 0 : -1;
}

// ue_clone starts the program in new PID and mount namespaces: directly as
// root, else in a user namespace of its own where this user is itself (as
// ptyrun's userns.User: no other id mapped). Like fork, without the
// library's bookkeeping: nothing but this thread exists yet, and the
// namespaces are the child's alone, so the relay stays where it was and
// may start the Go runtime afterwards (see ue_relay). One thing of the
// library's stays the relay's in the program: its record of the main
// thread's id (fork would update it). Nothing the program runs reads it —
// Go's runtime signals threads by their kernel ids, raise() asks the
// kernel, psx changes credentials itself — but a call that did (glibc's
// setuid from a cgo thread, pthread_kill of the main thread, an owner-
// checked mutex) would misfire there (red team 36).
static pid_t ue_clone(int *userns) {
	*userns = 0;
	if (geteuid() == 0) {
		pid_t pid = syscall(SYS_clone, CLONE_NEWPID | CLONE_NEWNS | SIGCHLD, 0, 0, 0, 0);
		if (pid >= 0)
			return pid;
	}
	*userns = 1;
	return syscall(SYS_clone, CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | SIGCHLD, 0, 0, 0, 0);
}

// ue_map_self maps, in the child's new user namespace, the user and group
// it was to themselves.
static int ue_map_self(uid_t uid, gid_t gid) {
	char map[64];
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	if (ue_write_file("/proc/self/uid_map", map) != 0)
		return -1;
	if (ue_write_file("/proc/self/setgroups", "deny\n") != 0)
		return -1;
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	return ue_write_file("/proc/self/gid_map", map);
}

// ue_keep_caps keeps, of the capabilities a new user namespace gives, only
// those the program uses there (ptyrun's userns.ambientCaps: mounting,
// making namespaces and going back to one, the loopback of a network
// namespace it makes), as when started into it by exec. With more, its
// own access checks would differ from its commands' (CAP_DAC_OVERRIDE
// reads its user's unreadable files, and a command's own EACCES would be
// taken for a sandbox denial).
static int ue_keep_caps(void) {
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof data);
	const int keep[] = {CAP_SYS_ADMIN, CAP_SETPCAP, CAP_NET_ADMIN, CAP_SYS_CHROOT};
	for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) {
		data[keep[i] / 32].permitted |= 1u << (keep[i] % 32);
		data[keep[i] / 32].effective |= 1u << (keep[i] % 32);
	}
	return syscall(SYS_capset, &hdr, data);
}

// ue_trace prints a timing line as tracepoint.Mark does, when
// UNIFIED_EXEC_TRACE is set: the relay's steps before and after the Go
// runtime's, on one clock with the program's.
static void ue_trace(const char *what) {
	const char *on = getenv("UNIFIED_EXEC_TRACE");
	if (!on || !*on)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	fprintf(stderr, "trace %lld %d %s\n", (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000, (int)getpid(), what);
}

static const int ue_relayed_signals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, 0};

__attribute__((constructor)) static void ue_relay(int argc, char **argv, char **envp) {
	(void)envp;
	int wraps;
	if (!ue_should_enter(argc, argv, &wraps))
		return;
	// One command: its heap in huge pages from the runtime's first
	// mapping (hugeheap_linux.c), whether the relay makes its namespace
	// or Go does.
	ue_huge_heap = wraps;
	ue_trace("relay: start");
	// One malloc arena for the whole program. The C that runs on Go's
	// threads (libseccomp's filter building, cgo's thread starts) made
	// glibc give each thread an arena of its own: a 128 MiB reservation
	// and its first pages touched, ~1 ms of a wrapper's start here in
	// all, for a few small allocations that contend for nothing.
	mallopt(M_ARENA_MAX, 1);
	struct termios saved;
	int tty = tcgetattr(0, &saved) == 0;
	if (tty) {
		// Inside its namespace the program cannot tell: the terminal's
		// process groups are not in it.
		pid_t fg = tcgetpgrp(0);
		ue_background = fg >= 0 && fg != getpgrp();
	}
	// Signals for the program wait, blocked, until the relay passes them
	// on: none is lost between its start and the handlers.
	sigset_t relayed, old;
	sigemptyset(&relayed);
	for (const int *s = ue_relayed_signals; *s; s++)
		sigaddset(&relayed, *s);
	sigprocmask(SIG_BLOCK, &relayed, &old);
	// SIGCHLD ignored by whoever started us (the disposition survives
	// execve) would have the kernel reap the program unseen: the relay
	// could not wait for its status (red team 36). The program gets the
	// default too, as Go's runtime handles it there either way.
	struct sigaction was_chld;
	sigaction(SIGCHLD, &(struct sigaction){.sa_handler = SIG_DFL}, &was_chld);
	// alive has no writer once the relay is gone: the program checks it
	// after asking for its parent-death signal, which a relay dead
	// before then would never send.
	int alive[2];
	if (pipe2(alive, O_CLOEXEC) != 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		return;
	}
	// handover has one writer, the program, which writes 'H' before it
	// exits when its command is unified-exec-mcp's to run (a policy that
	// needs the egress proxy, which this build may not carry: see
	// handOver). Nothing the program starts holds it (O_CLOEXEC).
	int handover[2];
	if (pipe2(handover, O_CLOEXEC | O_NONBLOCK) != 0) {
		close(alive[0]);
		close(alive[1]);
		sigprocmask(SIG_SETMASK, &old, NULL);
		return;
	}
	pid_t relay = getpid();
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int userns;
	pid_t child = ue_clone(&userns);
	if (child < 0) {
		// No namespace here: the program goes on as it is (and says
		// why, trying again from Go).
		close(alive[0]);
		close(alive[1]);
		close(handover[0]);
		close(handover[1]);
		sigprocmask(SIG_SETMASK, &old, NULL);
		return;
	}
	if (child == 0) {
		// The program: PID 1 of the new namespaces; the Go runtime
		// starts when this returns.
		close(alive[1]);
		close(handover[0]);
		ue_handover_fd = handover[1];
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
			_exit(125);
		char b;
		if (fcntl(alive[0], F_SETFL, O_NONBLOCK) != 0 || read(alive[0], &b, 1) == 0)
			_exit(125);
		close(alive[0]);
		if (userns) {
			// Nobody in its user namespace until mapped.
			if (ue_map_self(uid, gid) != 0) {
				fprintf(stderr, "unified-exec: namespace: mapping the user: %s\n", strerror(errno));
				_exit(125);
			}
			if (ue_keep_caps() != 0) {
				fprintf(stderr, "unified-exec: namespace: capabilities: %s\n", strerror(errno));
				_exit(125);
			}
		}
		sigprocmask(SIG_SETMASK, &old, NULL);
		ue_trace("relay: program cloned");
		ue_relay_pid = relay;
		return;
	}
	close(alive[0]);
	close(handover[1]);
	ue_child = child;
	// What the relay changes below, put back for a hand-over, whose
	// unified-exec-mcp must start as this program was started.
	struct sigaction was[sizeof ue_relayed_signals / sizeof ue_relayed_signals[0]];
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = ue_forward;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; ue_relayed_signals[i]; i++)
		sigaction(ue_relayed_signals[i], &sa, &was[i]);
	// Signals it does not pass on whose default would end it (an alarm
	// armed before execve, SIGXCPU, SIGPWR, ...) are ignored, as a Go
	// program ignores them: the relay ending would take the program and
	// the command with it, and skip their cleanup (red team 36).
	static const int ignored[] = {SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ, SIGPWR, SIGSTKFLT, SIGIO, 0};
	struct sigaction was_ignored[sizeof ignored / sizeof ignored[0]];
	for (int i = 0; ignored[i]; i++)
		sigaction(ignored[i], &(struct sigaction){.sa_handler = SIG_IGN}, &was_ignored[i]);
	struct sigaction was_rt[SIGRTMAX - SIGRTMIN + 1];
	for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
		sigaction(s, &(struct sigaction){.sa_handler = SIG_IGN}, &was_rt[s - SIGRTMIN]);
	// The relayed ones are unblocked whatever mask it was started with: a
	// supervisor that left SIGTERM blocked must still reach the command
	// through it (red team 36). The program starts with the mask given.
	sigset_t mask = old;
	for (const int *s = ue_relayed_signals; *s; s++)
		sigdelset(&mask, *s);
	sigprocmask(SIG_SETMASK, &mask, NULL);
	// Waited for first without being reaped: until it is, its pid is
	// nobody else's, so a signal passed on meanwhile cannot reach another
	// process that got the number.
	siginfo_t info;
	for (;;) {
		memset(&info, 0, sizeof info);
		if (waitid(P_PID, child, &info, WEXITED | WNOWAIT) == 0)
			break;
		if (errno != EINTR) {
			fprintf(stderr, "unified-exec: namespace: waiting for the program: %s\n", strerror(errno));
			_exit(125);
		}
	}
	ue_trace("relay: program exited");
	sigprocmask(SIG_BLOCK, &relayed, NULL);
	ue_child = 0;
	int status;
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	if (tty) {
		// The program puts the terminal in raw mode while a command has
		// one of its own; killed or crashed, it could not put it back.
		// Not from the background of the terminal's session: it is then
		// another job's to set (and setting it would stop the relay). A
		// terminal that is not our session's (ENOTTY: we were started
		// in a session of our own with it as stdin) is ours to put back
		// (red team 37).
		pid_t fg = tcgetpgrp(0);
		if (fg == getpgrp() || (fg < 0 && errno == ENOTTY))
			tcsetattr(0, TCSANOW, &saved);
	}
	char mark = 0;
	int handed = read(handover[0], &mark, 1) == 1 && mark == 'H' && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	close(handover[0]);
	if (handed) {
		// The program ran no command: unified-exec-mcp runs it, started
		// from Go (relayEntered) in this process, as it was started. A
		// signal passed on to the program meanwhile was for this
		// process: it acts on it now, as it would have without us.
		for (int i = 0; ue_relayed_signals[i]; i++)
			sigaction(ue_relayed_signals[i], &was[i], NULL);
		for (int i = 0; ignored[i]; i++)
			sigaction(ignored[i], &was_ignored[i], NULL);
		for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
			sigaction(s, &was_rt[s - SIGRTMIN], NULL);
		sigaction(SIGCHLD, &was_chld, NULL);
		// The state to start unified-exec-mcp with, which the Go
		// runtime changes meanwhile (ue_exec_as_started).
		for (int s = 1; s < NSIG; s++)
			sigaction(s, NULL, &ue_started_with[s]);
		ue_started_mask = old;
		int sig = ue_forwarded;
		sigprocmask(SIG_SETMASK, &old, NULL);
		if (sig)
			raise(sig);
		ue_handed_over = 1;
		return;
	}
	if (!WIFSIGNALED(status))
		_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 125);
	// Killed (the OOM killer picks the biggest process): its sessions
	// died with its namespace, their cgroups are left; Go removes them
	// (relayEntered).
	for (const int *s = ue_relayed_signals; *s; s++)
		signal(*s, SIG_DFL);
	sigprocmask(SIG_SETMASK, &old, NULL);
	ue_relay_signaled = WTERMSIG(status);
}

static int ue_relayed_by(void) { return ue_relay_pid; }
static int ue_relayed_background(void) { return ue_background; }
static int ue_program_signaled(void) { return ue_relay_signaled; }
static int ue_program_handed_over(void) { return ue_handed_over; }

// ue_exec_as_started executes path, in the relay after a hand-over, with
// the signal dispositions and mask the relay was started with (saved
// before the Go runtime started: it installs handlers and unblocks
// signals, and a handler becomes the default across execve where an
// ignored signal stays ignored). It returns only on failure, with errno;
// the Go runtime's handlers are then gone, for an exit that follows.
static int ue_exec_as_started(const char *path, char *const argv[], char *const envp[]) {
	for (int s = 1; s < NSIG; s++) {
		if (s == SIGKILL || s == SIGSTOP)
			continue;
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = ue_started_with[s].sa_handler == SIG_IGN ? SIG_IGN : SIG_DFL;
		sigaction(s, &sa, NULL);
	}
	pthread_sigmask(SIG_SETMASK, &ue_started_mask, NULL);
	execve(path, argv, envp);
	return errno;
}

static void ue_close_hand_over(void) {
	if (ue_handover_fd >= 0)
		close(ue_handover_fd);
	ue_handover_fd = -1;
}

// ue_hand_over, in the program, tells the relay that unified-exec-mcp is
// to run its command once it has exited (0: told; -1: not relayed).
static int ue_hand_over(void) {
	if (ue_handover_fd < 0)
		return -1;
	char h = 'H';
	int n = write(ue_handover_fd, &h, 1);
	close(ue_handover_fd);
	ue_handover_fd = -1;
	return n == 1 ? 0 : -1;
}
*/
import "C"

import (
	"os"
	"syscall"
	"unsafe"

	"github.com/unified-exec/unified-exec/ptyrun"
)

// relayEntered hands ptyrun what the relay did before the runtime
// started: in the program, that it is PID 1 of namespaces the relay made
// (EnterNamespace then only makes itself their init); in the relay, after
// the program was killed, the cleaning up left to Go (it exits).
func relayEntered() {
	if sig := int(C.ue_program_signaled()); sig != 0 {
		ptyrun.RelayEnded()
		os.Exit(128 + sig)
	}
	if C.ue_program_handed_over() != 0 {
		// Whatever the program left of its cgroups goes first.
		ptyrun.RelayEnded()
		os.Exit(execServerWith(handOverWhat, execAsStarted))
	}
	if pid := int(C.ue_relayed_by()); pid != 0 {
		ptyrun.Relayed(pid, C.ue_relayed_background() != 0)
	}
}

// execAsStarted executes path with argv and env as syscall.Exec does,
// with the signal state the relay was started with (ue_exec_as_started).
func execAsStarted(path string, argv, env []string) error {
	cstrings := func(ss []string) []*C.char {
		cs := make([]*C.char, 0, len(ss)+1)
		for _, s := range ss {
			cs = append(cs, C.CString(s))
		}
		return append(cs, nil)
	}
	cpath, cargv, cenv := C.CString(path), cstrings(argv), cstrings(env)
	errno := C.ue_exec_as_started(cpath, &cargv[0], &cenv[0])
	// Only on failure: the program exits next.
	return syscall.Errno(errno)
}

// relayed says whether the relay made this program's namespaces.
func relayed() bool { return C.ue_relayed_by() != 0 }

// closeHandOver closes the program's end of the hand-over pipe: it will
// not hand over.
func closeHandOver() { C.ue_close_hand_over() }

// handOverOnExit has the relay start unified-exec-mcp in this program's
// stead once it has exited (see handOver); false when there is no relay.
func handOverOnExit() bool { return C.ue_hand_over() == 0 }

// relayWouldEnter is the relay's decision for os.Args[1:] = args, in a
// program with an MCP server or without (server): whether it makes the
// program's namespaces, and whether it gives the program's heap huge
// pages, as it does for one wrapped command (tests hold both against
// entersNamespace).
func relayWouldEnter(args []string, server bool) (enter, hugeHeap bool) {
	defer func(was C.int) { C.ue_no_server = was }(C.ue_no_server)
	C.ue_no_server = 1
	if server {
		C.ue_no_server = 0
	}
	argv := make([]*C.char, 0, len(args)+1)
	for _, a := range append([]string{"unified-exec"}, args...) {
		c := C.CString(a)
		defer C.free(unsafe.Pointer(c))
		argv = append(argv, c)
	}
	var wraps C.int
	enter = C.ue_should_enter(C.int(len(argv)), &argv[0], &wraps) != 0
	return enter, enter && wraps != 0
}

// setHugeHeap turns the advice of hugeheap_linux.c on or off for the
// runtime's later mappings (as the relay does before the runtime starts),
// and says whether it was on.
func setHugeHeap(on bool) (was bool) {
	was = C.ue_huge_heap != 0
	C.ue_huge_heap = 0
	if on {
		C.ue_huge_heap = 1
	}
	return was
}
