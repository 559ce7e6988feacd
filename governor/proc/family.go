package proc

import (
	"bytes"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
)

// ParentPID returns the parent of pid (/proc/PID/stat field 4).
func ParentPID(pid int) (int, error) {
	b, err := ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("proc: malformed stat line")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, errors.New("proc: short stat line")
	}
	return strconv.Atoi(f[1]) // f[0] is field 3 (state)
}

// Children returns the children of pid, of all its threads (a child is
// listed under the thread that forked it), or nil when pid is gone or
// the kernel does not list children.
func Children(pid int) []int {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	var out []int
	for _, t := range tasks {
		b, err := ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}
