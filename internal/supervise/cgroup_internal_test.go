//go:build linux

package supervise

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor/proc"
)

// A run's group left empty for staleAge is removed by the next start; a
// younger one is kept (its run may be starting). The sweep runs in a
// parent group of this test's own: with staleAge 0 it removes every empty
// run group it finds, and in the shared parent that took the groups of
// other packages' runs at the moment they were empty
// (TestRunCgroupRemovedByReclaim: "the run's cgroup went although nobody
// was left to remove it", in a whole-suite run).
func TestStaleRunGroups(t *testing.T) {
	parent, ok := proc.ChildCgroup("stale-test-" + uniqueSuffix())
	if !ok || os.Mkdir(parent, 0o755) != nil {
		t.Skip("no cgroup v2 group can be made here")
	}
	t.Cleanup(func() { _ = os.Remove(parent) })
	dir := filepath.Join(parent, proc.RunCgroupName("stale"))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("no cgroup v2 group can be made inside another here: %v", err)
	}
	t.Cleanup(func() { _ = os.Remove(dir) })
	removeStale(parent)
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("a fresh run group was removed: %v", err)
	}
	old := staleAge
	staleAge = 0
	defer func() { staleAge = old }()
	time.Sleep(10 * time.Millisecond)
	removeStale(parent)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a run group empty for longer than staleAge is left: %v", err)
	}
}

func uniqueSuffix() string {
	return filepath.Base(os.Args[0]) + "-" + time.Now().Format("150405.000000")
}
