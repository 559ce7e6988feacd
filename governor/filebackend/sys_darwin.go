package filebackend

import (
	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor/proc"
)

// machineClockID is the clock of expiries (see machineClock):
// CLOCK_UPTIME_RAW, mach_absolute_time, which Go's monotonic readings
// also use on macOS. Like them it stops while the machine sleeps; macOS's
// CLOCK_MONOTONIC runs on through sleep, as Linux's CLOCK_BOOTTIME does,
// and so would expire a lease before its holder knew.
const (
	machineClockID   = proc.MachineClockID
	machineClockName = proc.MachineClockName
)

// syncData makes the data written to fd reach the disk before anything
// written after it, so that the rename that follows never names a file
// whose content a power loss took away. On macOS fsync(2) only hands the
// data to the drive, whose cache may write the rename first; F_FULLFSYNC
// would also empty that cache, at a cost of milliseconds per state write.
// The state file promises to be the old or the new state after a crash,
// not the latest one (see the package documentation: what a power loss
// rolls back belonged to holders that died with the machine, and fencing
// tokens have a wall-time floor), so the order is all that is needed:
// F_BARRIERFSYNC, an fsync plus a barrier that keeps every later write
// behind this data. A file system without barriers refuses it; then
// F_FULLFSYNC, and where that is refused too (some network and FUSE file
// systems), plain fsync.
func syncData(fd int) error {
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_BARRIERFSYNC, 0); err == nil {
		return nil
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_FULLFSYNC, 0); err == nil {
		return nil
	}
	return unix.Fsync(fd)
}

// mkfifoat makes the named pipe name in dir, whose path is path: macOS
// has mkfifoat(2) only from macOS 13 and x/sys/unix does not offer it, so
// the pipe is made by path. The caller opens it relative to dir with
// O_NOFOLLOW and checks it is a pipe, as everywhere; the state dir is
// refused unless only its owner can write in it.
func mkfifoat(dir int, path, name string) error { return unix.Mkfifo(path+"/"+name, 0o600) }
