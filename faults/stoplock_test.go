package faults_test

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor/proc"
)

// stopOutsideWrite stops pid (SIGSTOP) at a moment it is not inside a
// file-backend write: one that stopped holding a resource's exclusive
// lock (a few milliseconds per renewal, longer on a loaded disk) would
// hold every other process of that resource — its watchdog's record and
// the next run included — until it is resumed (docs/fault-tests.md,
// "A process stopped inside a state write"). That is a documented limit,
// not what these tests are about: they stop governor between its writes,
// and the stop is tried again, after a resume, when it landed inside one.
// Where /proc/locks cannot be read (macOS), the first stop stands.
func stopOutsideWrite(t *testing.T, pid int) {
	t.Helper()
	for try := 1; ; try++ {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "the stopped process to show stopped", func() bool {
			s, err := proc.Stat(pid)
			return err != nil || s.Stopped()
		})
		if !holdsExclusiveFlock(t, pid) {
			return
		}
		if try == 200 {
			t.Fatalf("pid %d held an exclusive lock at each of %d stops", pid, try)
		}
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(try) * time.Millisecond) // not an outcome: a new moment to stop at
	}
}

// holdsExclusiveFlock reports whether pid holds an exclusive flock(2),
// as /proc/locks shows it (false where it cannot be read). The file
// backend takes one only for a write of a resource's state; a holder's
// lease file is locked shared.
func holdsExclusiveFlock(t *testing.T, pid int) bool {
	locks, err := proc.Locks()
	if err != nil && !errors.Is(err, errors.ErrUnsupported) {
		t.Logf("the stop is judged from the lines that could be read: %v", err)
	}
	for _, l := range locks {
		if l.Kind == proc.Flock && l.Mode == proc.LockWrite && l.PID == pid {
			return true
		}
	}
	return false
}
