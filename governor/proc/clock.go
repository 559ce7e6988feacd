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
