package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/internal/exitcode"
	"github.com/governor-dev/governor/internal/proctest"
)

// heavyLock makes resource heavy's state in tg (a first run) and
// returns the path of its lock file.
func heavyLock(t *testing.T, tg *target) string {
	t.Helper()
	if code, out, errs := tg.run(t, "run", "--resource", "heavy", "--", "true"); code != 0 {
		t.Fatalf("first run: exit %d %s %s", code, out, errs)
	}
	return filepath.Join(tg.dir, runProject, "heavy", "lock")
}

// holdLock takes the file backend's lock of resource heavy as a foreign
// process would (flock on its own open file description) until the test
// ends.
func holdLock(t *testing.T, tg *target) string {
	t.Helper()
	path := heavyLock(t, tg)
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
// keep governor past the caller's deadline. --wait-timeout 3s answers
// "not acquired" (73) about then, not after withdrawing the waiter for
// another 5 s (8 s: past the 7 s the test allows); without any deadline (--if-busy fail) the wait for the
// lock is bounded and reported, naming the file (125), instead of
// hanging. The bounds checked are generous: they tell a deadline kept
// from one overrun by seconds, or a hang. The deadline is 3 s so that
// the wait spent on the lock passes the backend's lockSlow (1 s), the
// least it lays on a running holder, even when the machine is so loaded
// that reaching the lock takes most of a second (with 1 s it did not,
// under load 9, and the message named no holder).
func TestForeignLockHolderHonoursDeadline(t *testing.T) {
	t.Parallel()
	tg := fileTarget(t, "")
	path := holdLock(t, tg)

	start := time.Now()
	code, _, errs := tg.run(t, "run", "--resource", "heavy", "--wait-timeout", "3s", "--", "true")
	if took := time.Since(start); code != exitcode.Busy || !strings.Contains(errs, "--wait-timeout 3s") || took > 7*time.Second {
		t.Fatalf("--wait-timeout 3s with the lock held: exit %d after %v, %s; want %d within the deadline", code, took, errs, exitcode.Busy)
	}
	// The wait spent on the lock is laid on it, naming the file (and, on
	// Linux, this process as its holder).
	if !strings.Contains(errs, "--wait-timeout 3s: the state of heavy ("+path+") is locked by ") ||
		runtime.GOOS == "linux" && !strings.Contains(errs, fmt.Sprintf("locked by pid %d (", os.Getpid())) {
		t.Errorf("--wait-timeout 3s with the lock held does not name the lock and its holder: %s", errs)
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

// A process stopped holding the lock of a resource's state (as one
// SIGSTOPped inside a state write) is named to a waiting run whose
// --wait-timeout passes: its pid, its command and that it is stopped,
// rather than "not acquired" alone, which reads as a busy slot.
func TestStoppedLockHolderNamedToRun(t *testing.T) {
	tg := fileTarget(t, "")
	path := heavyLock(t, tg)
	pid := proctest.StoppedLockHolder(t, path)
	code, _, errs := tg.run(t, "run", "--resource", "heavy", "--if-busy", "wait", "--wait-timeout", "300ms", "--", "true")
	want := fmt.Sprintf("not acquired within --wait-timeout 300ms: the state of heavy (%s) is locked by pid %d (flock, stopped): "+
		"a process stopped inside a state write holds every other process of the resource until it is resumed (kill -CONT %d) or killed", path, pid, pid)
	if code != exitcode.Busy || !strings.Contains(errs, want) {
		t.Fatalf("run with the lock held by a stopped process: exit %d, %s; want %d and %q", code, errs, exitcode.Busy, want)
	}
}
