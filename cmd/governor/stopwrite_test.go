package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/internal/proctest"
)

// faultsBin is the governor CLI built with -tags governor_faults: it
// stops itself inside a file-backend state write on demand
// (GOVERNOR_FAULT_STOP_IN_WRITE).
var faultsBin struct {
	once sync.Once
	path string
	err  error
}

func governorFaultsBin(t *testing.T) string {
	t.Helper()
	faultsBin.once.Do(func() {
		faultsBin.path, faultsBin.err = proctest.BuildGovernorAs(t.TempDir(), "governor-faults", "GOFLAGS=-tags=governor_faults")
	})
	if faultsBin.err != nil {
		t.Fatal(faultsBin.err)
	}
	return faultsBin.path
}

// Issue 43: a governor stopped inside a file-backend state write holds
// the resource's lock, and with it every other process of the resource.
// Once its lease's deadline has passed, its watchdog kills its command
// and governor itself, so that the next run is granted within about a
// TTL (2 s here) instead of waiting its whole --wait-timeout (30 s). The
// stop is governor's own, under the lock (the faults build).
func TestRunStoppedInStateWriteKilledByWatchdog(t *testing.T) {
	if _, err := proc.Locks(); errors.Is(err, errors.ErrUnsupported) {
		t.Skip("needs /proc/locks: the watchdog cannot tell a lock holder without it")
	}
	tg := fileTarget(t, "lease: {ttl: 2s}\n")
	tg.bin = governorFaultsBin(t)
	marker := proctest.NewMarker(t, "govrun")
	sleep := proctest.MarkedSleep(t, marker)
	t.Cleanup(func() { proctest.KillMarked(marker) })
	pidFile := filepath.Join(t.TempDir(), "pid")
	trigger := filepath.Join(t.TempDir(), "stop")
	c := tg.command("run", "--resource", "heavy", "--", "sh", "-c", writePID+`exec "$0" 600`, sleep, pidFile)
	c.Env = append(c.Env, "GOVERNOR_FAULT_STOP_IN_WRITE="+trigger)
	var errs proctest.SyncBuffer
	c.Stderr = &errs
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	eventually(t, 30*time.Second, "the command did not start", func() bool { _, err := os.Stat(pidFile); return err == nil })

	if err := os.WriteFile(trigger, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	gov := c.Process.Pid
	eventually(t, 30*time.Second, "governor did not stop inside a state write", func() bool {
		s, err := proc.Stat(gov)
		return err == nil && s.Stopped() && holdsExclusiveFlock(gov)
	})

	code, _, nextErrs := tg.run(t, "run", "--resource", "heavy", "--if-busy", "wait", "--wait-timeout", "30s", "--", "true")
	if code != 0 {
		t.Fatalf("the next run beside a governor stopped inside a state write: exit %d, want 0: %s", code, nextErrs)
	}
	err := c.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("governor stopped inside a state write: %v, want killed (SIGKILL) by its watchdog: %s", err, errs.String())
	}
	if !strings.Contains(errs.String(), "inside a state write, holding every other process of its resource: killed it") {
		t.Errorf("the watchdog does not say why it killed governor: %s", errs.String())
	}
	if left := proctest.Marked(marker); len(left) > 0 {
		t.Errorf("processes of the stopped run's command left: %v", left)
	}
}

// holdsExclusiveFlock reports whether /proc/locks shows pid holding an
// exclusive flock: the file backend takes one only for a state write.
func holdsExclusiveFlock(pid int) bool {
	locks, _ := proc.Locks()
	for _, l := range locks {
		if l.Kind == proc.Flock && l.Mode == proc.LockWrite && l.PID == pid {
			return true
		}
	}
	return false
}
