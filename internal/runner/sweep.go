package runner

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor/proc"
)

// sweep SIGKILLs the processes of the tree (knownTree.live) until two
// scans in a row find none, or sweepBudget has passed, and returns how
// many it signalled. Each is signalled under its identity (proc.Kill:
// through a pidfd opened between two reads of its start time on Linux,
// after a second read of it on macOS), so a pid reused meanwhile is never
// hit. Each process is counted once, however many scans find it dying
// (one reported as "killed 3 processes" under load); a zombie is not
// counted. An error says the tree could not be read, or was not
// gone within sweepBudget.
func (g *guard) sweep() (int, error) {
	deadline := time.Now().Add(sweepBudget)
	killed, quiet := map[[2]uint64]bool{}, 0
	pause := time.NewTimer(0)
	defer pause.Stop()
	<-pause.C
	for quiet < 2 {
		live, err := g.tree.live(g.id)
		if err != nil {
			return len(killed), err
		}
		n := 0
		for _, p := range live {
			if proc.Kill(p.PID, p.Start, unix.SIGKILL) == nil {
				n++
				killed[[2]uint64{uint64(p.PID), p.Start}] = true
			}
		}
		if n == 0 {
			quiet++
		} else {
			quiet = 0
		}
		if time.Now().After(deadline) {
			return len(killed), errors.New("processes of the command were still running after " + sweepBudget.String())
		}
		pause.Reset(10 * time.Millisecond)
		<-pause.C
	}
	return len(killed), nil
}
