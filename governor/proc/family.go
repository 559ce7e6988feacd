package proc

import (
	"errors"
	"os"
	"strconv"
	"strings"
)

// ParentPID returns the parent of pid (the PPid line of
// /proc/PID/status).
func ParentPID(pid int) (int, error) {
	b, err := ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PPid:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, errors.New("proc: no PPid in /proc/" + strconv.Itoa(pid) + "/status")
}

// Children returns the children of pid, of all its threads (a child is
// listed under the thread that forked it), or nil when pid is gone or
// the kernel does not list children.
func Children(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	d, err := os.Open(dir)
	if err != nil {
		return nil
	}
	// Each task's file by name: a glob would list every task's directory.
	tids, _ := d.Readdirnames(-1)
	d.Close()
	var out []int
	for _, tid := range tids {
		b, err := ReadFile(dir + tid + "/children")
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
