package proctest

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor/proc"
)

// Stop sends SIGSTOP to pid, which started at start, and returns once
// every thread of it is stopped. kill(2) returns long before that: the
// kernel wakes one thread to take a stop signal off the queue, and the
// other threads run on until that one has been scheduled — on a loaded
// machine for many milliseconds, in which a governor "stopped" by a test
// still sees its command die, removes its cgroup and ends its watchdog.
func Stop(t testing.TB, pid int, start uint64) {
	t.Helper()
	if err := proc.Kill(pid, start, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP of pid %d: %v", pid, err)
	}
	for deadline := time.Now().Add(time.Minute); !threadsStopped(pid); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d not stopped a minute after SIGSTOP", pid)
		}
	}
}

// StopOutsideWrite is Stop at a moment pid is not inside a file-backend
// state write. A process stopped holding a resource's exclusive lock (a
// few milliseconds per renewal, longer on a loaded disk) holds every
// other process of that resource, the next run and its own watchdog's
// record included, until it is resumed or killed
// (docs/fault-tests.md, "A process stopped inside a state write"). That
// is a limit of its own, with its own test; a test about something else
// stops governor between its writes: a stop that landed inside one
// (/proc/locks shows pid holding an exclusive flock) is undone and tried
// again. Where /proc/locks cannot be read (macOS), the first stop stands.
func StopOutsideWrite(t testing.TB, pid int, start uint64) {
	t.Helper()
	for try := 1; ; try++ {
		Stop(t, pid, start)
		held, err := proc.HoldsExclusiveFlock(pid)
		if err != nil && !errors.Is(err, errors.ErrUnsupported) {
			t.Logf("the stop is judged from the lines of /proc/locks that could be read: %v", err)
		}
		if !held {
			return
		}
		if try == 200 {
			t.Fatalf("pid %d held an exclusive lock at each of %d stops", pid, try)
		}
		if err := proc.Kill(pid, start, syscall.SIGCONT); err != nil {
			t.Fatalf("SIGCONT of pid %d: %v", pid, err)
		}
		time.Sleep(time.Duration(try) * time.Millisecond) // not an outcome: a new moment to stop at
	}
}
