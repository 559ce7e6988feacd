package proc

import "golang.org/x/sys/unix"

// MachineClockID is CLOCK_UPTIME_RAW, mach_absolute_time, which Go's
// monotonic readings also use on macOS. Like them it stops while the
// machine sleeps; macOS's CLOCK_MONOTONIC runs on through sleep, as
// Linux's CLOCK_BOOTTIME does.
const (
	MachineClockID   = unix.CLOCK_UPTIME_RAW
	MachineClockName = "CLOCK_UPTIME_RAW"
)

// SleepClockID is macOS's CLOCK_MONOTONIC (mach_continuous_time), which
// runs on while the machine sleeps (see SleepClock).
const (
	SleepClockID   = unix.CLOCK_MONOTONIC
	SleepClockName = "CLOCK_MONOTONIC"
)
