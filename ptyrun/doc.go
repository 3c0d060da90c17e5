// Package ptyrun starts one command in a pseudo-terminal or with pipes
// and owns everything about it: the child, its terminal or pipes, the
// goroutine that pumps its output, its process limit (a pids cgroup) and
// the kill of its whole tree.
//
// Restrictions are opaque here: a [Helper] carries a payload that a
// re-executed copy of the binary ([MaybeRunHelper], first thing in main)
// hands to an apply function before it executes the command, or that a
// thread applies to itself before it forks the command (a thread
// sandbox). [EnterNamespace] runs the whole program inside a PID and mount
// namespace of its own — as an ordinary user, through an unprivileged user
// namespace that maps only the user's own uid and gid — so that nothing a
// command starts outlives the program.
package ptyrun
