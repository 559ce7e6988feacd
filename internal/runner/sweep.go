package runner

import (
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
	marked, err := proc.Marked(EnvRunIDs, id)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range marked {
		if proc.Kill(p.PID, p.Start, unix.SIGKILL) == nil {
			n++
		}
	}
	return n, nil
}
