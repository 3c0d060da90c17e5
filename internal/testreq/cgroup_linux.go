package testreq

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

func delegatedCgroup() bool {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			var st syscall.Stat_t
			dir := filepath.Join("/sys/fs/cgroup", rest)
			if syscall.Stat(filepath.Join(dir, "cgroup.procs"), &st) == nil && int(st.Uid) == os.Getuid() {
				return true
			}
		}
	}
	return false
}
