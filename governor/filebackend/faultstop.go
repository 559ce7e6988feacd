//go:build governor_faults

package filebackend

import (
	"os"
)

// A governor built with -tags governor_faults (the fault tests' build,
// never a release) stops itself (SIGSTOP) inside a state write, holding
// the resource's lock, once the file that GOVERNOR_FAULT_STOP_IN_WRITE
// names appears; it removes the file, so one process stops, once.
func init() {
	path := os.Getenv("GOVERNOR_FAULT_STOP_IN_WRITE")
	if path == "" {
		return
	}
	underLock = func() {
		if os.Remove(path) == nil {
			stopSelf()
		}
	}
}
