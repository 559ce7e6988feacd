package runner

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor/proc"
)

// killMarked sends SIGKILL to every process but this one whose initial
// environment lists id in GOVERNOR_RUN_IDS, and returns how many it
// signalled. Each is signalled under its identity (proc.Kill: through a
// pidfd opened between two reads of its start time on Linux, after a
// second read of it on macOS), so a pid reused meanwhile is never hit. A
// dying process may be counted again by the next scan; a zombie has no
// environment and is not.
func killMarked(id string) (int, error) {
	all, err := proc.List()
	if err != nil {
		return 0, err
	}
	self := os.Getpid()
	n := 0
	for _, p := range all {
		if p.PID <= 1 || p.PID == self || p.Zombie() || !marked(p.PID, id) {
			continue
		}
		if proc.Kill(p.PID, p.Start, unix.SIGKILL) == nil {
			n++
		}
	}
	return n, nil
}

// marked reports whether the initial environment of pid lists id in
// GOVERNOR_RUN_IDS.
func marked(pid int, id string) bool { return proc.EnvListHas(pid, EnvRunIDs, id) }
