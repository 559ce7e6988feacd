package faults_test

import (
	"syscall"
	"testing"
	"time"
)

// Issue 24.5: the watchdog is stopped (SIGSTOP) past the TTL while
// governor renews throughout, then resumed. Its pipe holds the newer
// plans beside the stale deadline; it reads them first and leaves the
// healthy run alone (before, its stale timer usually won: exit 137, no
// message).
func TestStoppedWatchdogResumedKillsNothing(t *testing.T) {
	t.Parallel()
	// A TTL of 4 s: governor itself must renew throughout, and on a
	// loaded machine (load 25 on 2 cores) a 2 s TTL's renewal came late
	// and governor rightly stopped its own command (exit 122).
	const ttl = 4 * time.Second
	forEachWorldInParallel(t, "lease:\n  ttl: 4s\n  heartbeat: 1s\n", func(t *testing.T, w *runWorld) {
		first, out, errb := w.run("first", nil, nil, worker("WORK=12s")...)
		expectLine(t, out, "working", time.Minute)
		h := w.watchdogHolder(first)
		if err := syscall.Kill(h.PID, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		// Stopped well past the deadline of the last plan it read; the
		// wait sets up the case, it decides nothing.
		<-time.After(2 * ttl)
		if err := syscall.Kill(h.PID, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		if code := waitExit(t, first, errb); code != 0 {
			t.Fatalf("run whose watchdog was stopped and resumed: exit %d, want 0\n%s", code, errb)
		}
		if kills := w.watchdogKills(); len(kills) != 0 {
			t.Fatalf("the resumed watchdog recorded %+v, though it killed nothing", kills)
		}
	})
}
