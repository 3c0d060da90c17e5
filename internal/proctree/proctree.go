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
// and ServingPid returns it. The program is told by its status (its name,
// the relay's, and PID 1 of its namespace), which anyone may read: the
// program is not dumpable, so its exe link is out of an ordinary user's
// reach.
func ServingPid(relay int) int {
	kids := Children(relay)
	if len(kids) != 1 {
		return relay
	}
	name, _ := statusField(relay, "Name")
	childName, _ := statusField(kids[0].Pid, "Name")
	nspid, _ := statusField(kids[0].Pid, "NSpid")
	ns := strings.Fields(nspid)
	if name == "" || childName != name || len(ns) < 2 || ns[len(ns)-1] != "1" {
		return relay
	}
	return kids[0].Pid
}

// statusField is the value of field in /proc/<pid>/status.
func statusField(pid int, field string) (string, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}
