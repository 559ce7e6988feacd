package filebackend

import (
	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor/proc"
)

// machineClockID is the clock of expiries (see machineClock):
// CLOCK_MONOTONIC, which Go's monotonic readings also use on Linux.
const (
	machineClockID   = proc.MachineClockID
	machineClockName = proc.MachineClockName
)

// syncData makes the data written to fd reach the disk before anything
// written after it, so that the rename that follows never names a file
// whose content a power loss took away. fdatasync does both on Linux.
func syncData(fd int) error { return unix.Fdatasync(fd) }

// mkfifoat makes the named pipe name in dir (path is dir's path, unused
// here).
func mkfifoat(dir int, path, name string) error { return unix.Mkfifoat(dir, name, 0o600) }
