package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/internal/exitcode"
)

// holdLock takes the file backend's lock of resource heavy as a foreign
// process would (flock on its own open file description) until the test
// ends.
func holdLock(t *testing.T, tg *target) string {
	t.Helper()
	if code, out, errs := tg.run(t, "run", "--resource", "heavy", "--", "true"); code != 0 {
		t.Fatalf("first run: exit %d %s %s", code, out, errs)
	}
	path := filepath.Join(tg.dir, runProject, "heavy", "lock")
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	return path
}

// Issue 18 point 9: a foreign process holding the lock file does not
// keep governor past the caller's deadline. --wait-timeout 1s answers
// "not acquired" (73) about then, not after withdrawing the waiter for
// another 5 s; without any deadline (--if-busy fail) the wait for the
// lock is bounded and reported, naming the file (125), instead of
// hanging. The bounds checked are generous: they tell a deadline kept
// from one overrun by seconds, or a hang.
func TestForeignLockHolderHonoursDeadline(t *testing.T) {
	tg := fileTarget(t, "")
	path := holdLock(t, tg)

	start := time.Now()
	code, _, errs := tg.run(t, "run", "--resource", "heavy", "--wait-timeout", "1s", "--", "true")
	if took := time.Since(start); code != exitcode.Busy || !strings.Contains(errs, "--wait-timeout 1s") || took > 4*time.Second {
		t.Fatalf("--wait-timeout 1s with the lock held: exit %d after %v, %s; want %d within the deadline", code, took, errs, exitcode.Busy)
	}

	start = time.Now()
	done := make(chan struct{})
	var out string
	go func() {
		defer close(done)
		code, _, out = tg.run(t, "run", "--resource", "heavy", "--if-busy", "fail", "--", "true")
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("--if-busy fail with the lock held: still waiting after 60s")
	}
	if code != exitcode.Failure || !strings.Contains(out, path) || !strings.Contains(out, "held by another process") {
		t.Fatalf("--if-busy fail with the lock held: exit %d after %v, %s; want %d naming %s", code, time.Since(start), out, exitcode.Failure, path)
	}
}
