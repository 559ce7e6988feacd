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
		// By /proc/TID/task/TID, the same file: a lookup under
		// /proc/PID/task/TID of another thread than the leader makes
		// the kernel's flush of PID's /proc entries at its exit cost
		// milliseconds, paid by whoever reaps it (~5 ms of CPU per exit
		// on Linux 6.18, perf record of 100 exits: d_invalidate). A tid
		// reused meanwhile names another thread, whose children are
		// then listed in vain: callers read each listed pid's stat, and
		// a thread that exited has no children left to list.
		b, err := ReadFile("/proc/" + tid + "/task/" + tid + "/children")
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
