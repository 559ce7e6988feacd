package metrics_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/metrics"
)

// The with-heavy-lock slot held by the wrapper (issue 25.3): a resource
// bound to it is in use, not free, and says it is held outside governor;
// free again once slot.d is gone.
func TestMetricsMkdirSlotHeldOutside(t *testing.T) {
	lock := t.TempDir()
	src := &fakeSource{project: "prj", statuses: map[string]governor.Status{}}
	c := newCollector(t, src, metrics.CollectorOptions{Limits: map[string]int{"heavy": 1}, MkdirLocks: map[string]string{"heavy": lock}})
	want := func(inUse, outside int) string {
		return `
# HELP governor_mkdir_slot_held_outside 1 while the with-heavy-lock slot bound to the resource (mkdir_lock) is held outside governor (the wrapper), else 0; absent for other resources.
# TYPE governor_mkdir_slot_held_outside gauge
governor_mkdir_slot_held_outside{project="prj",resource="heavy"} ` + strconv.Itoa(outside) + `
# HELP governor_slots_in_use Weight held by unexpired leases, and the with-heavy-lock slot's hold outside governor for a resource bound to it.
# TYPE governor_slots_in_use gauge
governor_slots_in_use{project="prj",resource="heavy"} ` + strconv.Itoa(inUse) + `
`
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want(0, 0)), "governor_slots_in_use", "governor_mkdir_slot_held_outside"); err != nil {
		t.Errorf("free slot: %v", err)
	}
	slot := filepath.Join(lock, "slot.d")
	if err := os.Mkdir(slot, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(slot, "pid"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want(1, 1)), "governor_slots_in_use", "governor_mkdir_slot_held_outside"); err != nil {
		t.Errorf("held by the wrapper: %v", err)
	}
}
