//go:build linux

package supervise_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/internal/proctest"
	"github.com/governor-dev/governor/internal/supervise"
)

// cgroupOrSkip returns the group a tree named name will get, or skips
// when this machine lets the test make none (no cgroup v2, not root).
func cgroupOrSkip(t *testing.T, name string) string {
	t.Helper()
	dir, ok := proc.ChildCgroup(name)
	if !ok {
		t.Skip("no cgroup v2 hierarchy")
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a cgroup here: %v", err)
	}
	_, kerr := os.Stat(dir + "/cgroup.kill")
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if kerr != nil {
		t.Skip("no cgroup.kill (Linux < 5.14)")
	}
	return dir
}

// TestTreeInItsOwnCgroup: the leader and its descendants are born in the
// tree's group, which is gone once the tree is.
func TestTreeInItsOwnCgroup(t *testing.T) {
	marker := proctest.NewMarker(t, "govcg")
	name := "governor-test-" + marker
	dir := cgroupOrSkip(t, name)
	o := sh(t, marker, `"$SLEEP" 1000 & "$SLEEP" 1000`)
	o.Cgroup = name
	tr := start(t, o)
	waitFor(t, "two sleeps", func() bool { return len(proctest.Marked("sleep-"+marker)) == 2 })
	procs, err := os.ReadFile(dir + "/cgroup.procs")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Fields(string(procs))); n != 3 {
		t.Errorf("the group holds %d processes, want the leader and its two sleeps:\n%s", n, procs)
	}
	stop(t, tr, nil)
	wait(t, tr)
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the tree's group is left after the tree: %v", err)
	}
}

// TestCgroupHoldsEscapedProcesses: a descendant that clears its
// environment and leaves the session cannot be attributed by /proc scans;
// its group still holds it, so the tree is not finished while it runs,
// Stop's TERM reaches it, and nothing of the tree is left.
func TestCgroupHoldsEscapedProcesses(t *testing.T) {
	marker := proctest.NewMarker(t, "govcg")
	cgroupOrSkip(t, "governor-test-"+marker)
	dir := t.TempDir()
	o := sh(t, marker, `env -i setsid "$SLEEP" 1000 & exit 0`)
	o.Cgroup = "governor-test-" + marker
	o.Dir = dir
	tr := start(t, o)
	<-tr.Done()
	waitFor(t, "the escaped sleep", func() bool { return len(proctest.Marked("sleep-"+marker)) == 1 })
	finished := make(chan struct{})
	go func() {
		_, _ = tr.Wait()
		close(finished)
	}()
	// Without the group the tree finishes within a scan or two of the
	// leader's exit (milliseconds); give it far longer.
	select {
	case <-finished:
		t.Fatal("the tree finished while a process of its group ran")
	case <-time.After(time.Second):
	}
	stop(t, tr, nil)
	if left := proctest.Marked(marker); len(left) != 0 {
		t.Fatalf("processes left after Stop: %v", left)
	}
}

// TestStaleCgroupsRemoved: the empty group of a supervisor that died is
// removed when the next tree starts; a live supervisor's is kept.
func TestStaleCgroupsRemoved(t *testing.T) {
	marker := proctest.NewMarker(t, "govcg")
	probe := cgroupOrSkip(t, "governor-test-"+marker)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	parent := filepath.Dir(probe)
	stale := filepath.Join(parent, fmt.Sprintf("governor-%d-%s", dead.Process.Pid, marker))
	live := filepath.Join(parent, fmt.Sprintf("governor-%d-%s", os.Getpid(), marker))
	for _, d := range []string{stale, live} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = os.Remove(stale); _ = os.Remove(live) })
	tr := start(t, sh(t, marker, `exit 0`))
	wait(t, tr)
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the group of a dead supervisor is left: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the group of a live supervisor was removed: %v", err)
	}
}

// TestEmptyGroupReapsOrphanZombie: a child the leader never reaped is
// re-parented to the supervisor when the leader exits, a zombie that
// leaves the tree's group empty; the tree's last sweep, which reads only
// the supervisor's children then, reaps it.
func TestEmptyGroupReapsOrphanZombie(t *testing.T) {
	perl, err := exec.LookPath("perl")
	if err != nil {
		t.Skip("no perl: no command here forks a child it never reaps")
	}
	marker := proctest.NewMarker(t, "govcg")
	name := "governor-test-" + marker
	cgroupOrSkip(t, name)
	var out strings.Builder
	tr := start(t, supervise.Options{
		Args:   []string{perl, "-e", `$p = fork; exit 0 unless $p; print "$p\n"; select(undef, undef, undef, 0.2)`},
		Stdout: &out, Cgroup: name, KillGrace: testGrace,
	})
	if e := wait(t, tr); e.Code != 0 {
		t.Fatalf("exit %+v", e)
	}
	pid := strings.TrimSpace(out.String())
	if pid == "" {
		t.Fatal("the leader printed no child pid")
	}
	if b, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil {
		t.Errorf("the leader's orphan %s is left: %s", pid, b)
	}
}
