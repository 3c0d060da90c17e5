// Package proctree reads the process tree from /proc (Linux): the fields
// of a stat file, the children of a process, and the process that serves
// behind unified-exec's relay. The integration tests and the soak use it.
package proctree

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Stat is the fields of a /proc stat file after the command name: [0] is
// field 3 of proc(5) (the state), [1] field 4 (the parent), and so on. It
// is false when the file cannot be read (the task is gone).
func Stat(path string) ([]string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:]), true
}

// Child is a child process and its state letter (Z for a zombie).
type Child struct {
	Pid   int
	State string
}

// Children lists the children of pid.
func Children(pid int) []Child {
	var kids []Child
	want := strconv.Itoa(pid)
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f, ok := Stat("/proc/" + e.Name() + "/stat"); ok && len(f) > 1 && f[1] == want {
			kids = append(kids, Child{Pid: n, State: f[0]})
		}
	}
	return kids
}

// ServingPid is the process that serves: unified-exec starts itself again
// as PID 1 of a namespace of its own, and the process that was started
// only relays. Where namespaces are unavailable the relay serves itself,
// and ServingPid returns it.
func ServingPid(relay int) int {
	kids := Children(relay)
	if len(kids) != 1 {
		return relay
	}
	self, err1 := os.Readlink(fmt.Sprintf("/proc/%d/exe", relay))
	child, err2 := os.Readlink(fmt.Sprintf("/proc/%d/exe", kids[0].Pid))
	if err1 != nil || err2 != nil || self != child {
		return relay
	}
	return kids[0].Pid
}
