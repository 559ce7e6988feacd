//go:build linux

package supervise

import (
	"syscall"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/internal/proctest"
)

// On the portable path a job-stop report comes from wait4(WUNTRACED),
// which reaps a leader that has exited meanwhile: its status still
// reaches Wait, with no error, and the rest of the tree, no longer
// reachable through the group, is stopped process by process.
func TestPortableJobStopKeepsReapedLeadersStatus(t *testing.T) {
	t.Setenv(proc.PortableEnv, "1")
	marker := proctest.NewMarker(t, "govjob")
	t.Cleanup(func() { proctest.KillMarked(marker) })
	tr, err := Start(Options{
		Args:      []string{"/bin/sh", "-c", `"$0" 1000 & kill -STOP $$; exit 3`, proctest.MarkedSleep(t, marker)},
		KillGrace: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Stop(nil)
	seen := func(cond func(proc.Info) bool) {
		t.Helper()
		for i := 0; i < 2000; i++ {
			if s, err := proc.Stat(tr.Members()[0].PID); err == nil && cond(s) {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatal("the leader never reached the awaited state")
	}
	seen(func(s proc.Info) bool { return s.Stopped() && !s.Zombie() })
	tr.mu.Lock()
	sig, ok := tr.waitJobStopLocked()
	tr.mu.Unlock()
	if !ok || sig != syscall.SIGSTOP {
		t.Fatalf("job stop = %v, %v; want SIGSTOP, true", sig, ok)
	}
	if err := syscall.Kill(tr.Members()[0].PID, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	seen(proc.Info.Zombie)
	tr.mu.Lock()
	_, ok = tr.waitJobStopLocked()
	reaped, pinned := tr.leaderReaped, tr.groupPinnedLocked()
	tr.mu.Unlock()
	if ok || !reaped || pinned {
		t.Fatalf("after the exit: report %v, reaped %v, group pinned %v; want no report, reaped, not pinned", ok, reaped, pinned)
	}
	tr.Stop(nil) // the sleep lingers: Stop ends it
	if left := proctest.Marked(marker); len(left) != 0 {
		t.Fatalf("processes left after Stop: %v", left)
	}
	e, err := tr.Wait()
	if err != nil || e.Code != 3 || e.Signal != 0 || e.Stopped != nil {
		t.Fatalf("Wait = %+v, %v; want code 3, not stopped, no error", e, err)
	}
}
