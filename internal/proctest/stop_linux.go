package proctest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"

	"github.com/governor-dev/governor/governor/proc"
)

// threadsStopped reports whether every thread of pid is stopped (or the
// process gone): each /proc/PID/task/TID/stat in state T or t.
func threadsStopped(pid int) bool {
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return true // gone
	}
	for _, task := range tasks {
		b, err := proc.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "task", task.Name(), "stat"))
		if err != nil {
			continue // a thread that exited
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) || (b[i+2] != 'T' && b[i+2] != 't' && b[i+2] != 'Z' && b[i+2] != 'X') {
			return false
		}
	}
	return true
}
