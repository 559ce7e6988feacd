//go:build linux

package runner

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor/proc"
)

// killMarked sends SIGKILL to every process but this one whose initial
// environment lists id in GOVERNOR_RUN_IDS, and returns how many it
// signalled. Each is signalled through a pidfd opened between two reads of
// its start time, so a pid reused meanwhile is never hit. A dying process
// may be counted again by the next scan; a zombie has no environment and
// is not.
func killMarked(id string) (int, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return 0, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return 0, err
	}
	self := os.Getpid()
	n := 0
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 1 || pid == self {
			continue
		}
		start, err := proc.StartTime(pid)
		if err != nil || !marked(pid, id) {
			continue
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		if now, err := proc.StartTime(pid); err == nil && now == start {
			if unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil {
				n++
			}
		}
		unix.Close(fd)
	}
	return n, nil
}

// marked reports whether the initial environment of pid lists id in
// GOVERNOR_RUN_IDS.
func marked(pid int, id string) bool { return proc.EnvListHas(pid, EnvRunIDs, id) }
