package proc

import "golang.org/x/sys/unix"

// MachineClockID is CLOCK_MONOTONIC, the clock of Go's monotonic
// readings on Linux: it stops during suspend (CLOCK_BOOTTIME would not).
const (
	MachineClockID   = unix.CLOCK_MONOTONIC
	MachineClockName = "CLOCK_MONOTONIC"
)

// SleepClockID is CLOCK_BOOTTIME, which runs on while the machine is
// suspended (see SleepClock).
const (
	SleepClockID   = unix.CLOCK_BOOTTIME
	SleepClockName = "CLOCK_BOOTTIME"
)
