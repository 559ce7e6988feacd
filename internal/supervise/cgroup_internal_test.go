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
// younger one is kept (its run may be starting).
func TestStaleRunGroups(t *testing.T) {
	dir, ok := proc.ChildCgroup(proc.RunCgroupName("stale-" + uniqueSuffix()))
	if !ok || os.Mkdir(dir, 0o755) != nil {
		t.Skip("no cgroup v2 group can be made here")
	}
	t.Cleanup(func() { _ = os.Remove(dir) })
	removeStale(filepath.Dir(dir))
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("a fresh run group was removed: %v", err)
	}
	old := staleAge
	staleAge = 0
	defer func() { staleAge = old }()
	time.Sleep(10 * time.Millisecond)
	removeStale(filepath.Dir(dir))
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a run group empty for longer than staleAge is left: %v", err)
	}
}

func uniqueSuffix() string {
	return filepath.Base(os.Args[0]) + "-" + time.Now().Format("150405.000000")
}
