package proc

import (
	"time"

	"golang.org/x/sys/unix"
)

// MachineClock reads the machine's monotonic clock, MachineClockID: every
// process of the machine reads the same instant, so two processes can
// agree on a deadline by sending it as a reading of this clock (and never
// as wall time, which can be set). It stops while the machine sleeps, as
// Go's monotonic readings do.
func MachineClock() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(MachineClockID, &ts) // a clock id every supported kernel has
	return time.Duration(ts.Nano())
}

// SleepClock reads the machine's clock that runs on while the machine is
// suspended, SleepClockID (CLOCK_BOOTTIME on Linux, CLOCK_MONOTONIC on
// macOS), shared by every process of the machine like MachineClock. A
// deadline that must hold against a clock outside the machine (Redis
// expires a lease on its own clock, which a laptop's suspend does not
// stop) is kept on it: read on MachineClock it would come late by the
// length of the suspend. The file backend, whose expiries stop with the
// machine as its holders' clocks do, keeps MachineClock.
func SleepClock() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(SleepClockID, &ts) // a clock id every supported kernel has
	return time.Duration(ts.Nano())
}
