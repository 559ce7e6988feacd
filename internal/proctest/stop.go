package proctest

import (
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
