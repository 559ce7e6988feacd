package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
)

// Info is what one look at a process tells: enough to follow a process
// tree and to tell a process from a later one that reuses its PID.
type Info struct {
	PID, PPID, PGID int
	// Start is the process's start time, in the system's own unit: clock
	// ticks after boot on Linux (/proc/PID/stat field 22), microseconds
	// after the epoch on macOS (kinfo_proc p_starttime). Only equality and
	// order between values of one host mean anything.
	Start uint64
	// State is the one-letter state of ps(1): 'R' running, 'S' sleeping,
	// 'T' stopped, 't' traced, 'Z' zombie, 'X' dead, and on macOS 'I' for
	// a process still being created.
	State byte
}

// Zombie reports whether the process has exited and waits to be reaped.
func (i Info) Zombie() bool { return i.State == 'Z' || i.State == 'X' || i.State == 'x' }

// Stopped reports whether the process can no longer fork: it is stopped,
// traced, dead or a zombie.
func (i Info) Stopped() bool {
	return i.State == 'T' || i.State == 't' || i.Zombie()
}

// ErrNoProcess is returned by Stat for a PID that names no process. It is
// an fs.ErrNotExist.
var ErrNoProcess = errNoProcess{}

type errNoProcess struct{}

func (errNoProcess) Error() string        { return "proc: no such process" }
func (errNoProcess) Is(target error) bool { return target == fs.ErrNotExist }

// PortableEnv, set to "1" in governor's environment on Linux, makes the
// packages that follow processes (this one, supervise, runner) use only
// what they use on macOS: no pidfds, no cgroup, no child subreaper, no
// parent-death signal; processes listed, identified and signalled through
// the same calls as there. The test suite runs the tree, timeout, nesting
// and dead-owner tests a second time so, so that the macOS path is code
// the suite has run. It has no effect elsewhere: macOS is always
// portable.
const PortableEnv = "GOVERNOR_PORTABLE"

// Portable reports whether only the portable facilities are used: on any
// system but Linux, and on Linux when PortableEnv is "1".
func Portable() bool {
	return runtime.GOOS != "linux" || os.Getenv(PortableEnv) == "1"
}

// CheckPortableEnv returns an error naming the value of PortableEnv when it
// is set to anything but "1", "0" or "": such a value would otherwise be
// taken silently for "0".
func CheckPortableEnv() error {
	switch v := os.Getenv(PortableEnv); v {
	case "", "0", "1":
		return nil
	default:
		return fmt.Errorf("%s=%q; allowed: 1 (follow processes as on macOS), 0 or unset", PortableEnv, v)
	}
}

// gone reports whether err says the process does not exist.
func gone(err error) bool { return errors.Is(err, fs.ErrNotExist) }
