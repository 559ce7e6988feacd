package filebackend_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor/histogram"
)

// TestObserveLeavesStateAlone: statistics go to their own file, so an
// observation neither rewrites the state file (its holders and token
// floor, synced at each grant and release) nor costs a sync of it; the
// state file is the same file, byte for byte, after two observations,
// and Status reads their sum back.
func TestObserveLeavesStateAlone(t *testing.T) {
	dir, b, key := heldOnce(t)
	state := filepath.Join(dir, "p", "r", "state")
	before, inode := fileOf(t, state)
	n := len(histogram.Bounds(histogram.Wait)) + 1
	one := make([]int64, n)
	one[0] = 1
	for range 2 {
		if err := b.Observe(ctxT(t), key, histogram.Wait, one, time.Second); err != nil {
			t.Fatalf("Observe: %v", err)
		}
	}
	if after, again := fileOf(t, state); after != before || again != inode {
		t.Fatalf("Observe rewrote the state file:\nbefore %s\nafter  %s", before, after)
	}
	if h := mustStatus(t, b, key).Histograms[histogram.Wait]; h.Count() != 2 || h.Sum != 2*time.Second {
		t.Fatalf("wait histogram %+v, want 2 observations summing to 2s", h)
	}
}

// fileOf returns the content and inode of path.
func fileOf(t *testing.T, path string) (string, uint64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data), fi.Sys().(*syscall.Stat_t).Ino
}

// TestTornStats: a stats file a power loss left empty or torn (it is
// written without a sync) costs the statistics only: Status still reads
// the resource, and the next observation starts the file anew.
func TestTornStats(t *testing.T) {
	for name, content := range map[string]string{"empty": "", "torn": `{"version":1,"histograms":{"wa`} {
		t.Run(name, func(t *testing.T) {
			dir, b, key := heldOnce(t)
			stats := filepath.Join(dir, "p", "r", "stats")
			if err := os.WriteFile(stats, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			st := mustStatus(t, b, key)
			if st.Used != 1 || len(st.Histograms) != 0 {
				t.Fatalf("status with a %s stats file: used %d, histograms %+v; want the holder and no histograms", name, st.Used, st.Histograms)
			}
			if err := b.Observe(ctxT(t), key, histogram.Wait, []int64{1}, time.Second); err != nil {
				t.Fatalf("Observe over a %s stats file: %v", name, err)
			}
			if h := mustStatus(t, b, key).Histograms[histogram.Wait]; h.Count() != 1 {
				t.Fatalf("wait histogram %+v, want the one observation", h)
			}
		})
	}
}

// TestStatsOfAnOlderState: the histograms a state file written before
// the stats file still holds are read, and new observations add to them.
func TestStatsOfAnOlderState(t *testing.T) {
	dir, b, key := heldOnce(t)
	state := filepath.Join(dir, "p", "r", "state")
	st := readStateMap(t, state)
	st["histograms"] = map[string]any{"wait": map[string]any{"counts": []int64{3}, "sum": int64(time.Second)}}
	writeStateMap(t, state, st)
	if err := b.Observe(ctxT(t), key, histogram.Wait, []int64{1}, time.Second); err != nil {
		t.Fatal(err)
	}
	if h := mustStatus(t, b, key).Histograms[histogram.Wait]; h.Count() != 4 || h.Sum != 2*time.Second {
		t.Fatalf("wait histogram %+v, want the older 3 and the new 1, summing to 2s", h)
	}
}
