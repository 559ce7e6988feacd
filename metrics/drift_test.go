package metrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/metrics"
)

// An acquire that asks for another limit than the one in force is
// counted in governor_drift_events_total, which only increases; one that
// agrees is not.
func TestDriftEventsCounted(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	worker, exporter := openGovernor(t, dir), openGovernor(t, dir)
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(t, exporter, metrics.CollectorOptions{}))
	drifts := func() float64 {
		return gatherValue(t, reg, "governor_drift_events_total", map[string]string{"project": "prj", "resource": "gpu"})
	}
	acquire := func(limit int) {
		t.Helper()
		l, err := worker.Acquire(ctx, "gpu", governor.AcquireOptions{Limit: limit, TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
	}
	hold, err := worker.Acquire(ctx, "gpu", governor.AcquireOptions{Limit: 1000, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Release()
	if got := drifts(); got != 0 {
		t.Fatalf("before any drift: %v; want 0", got)
	}
	acquire(1000)
	if got := drifts(); got != 0 {
		t.Fatalf("after an acquire that agrees: %v; want 0", got)
	}
	acquire(1)
	if got := drifts(); got != 1 {
		t.Fatalf("after an acquire asking limit 1 beside 1000 in force: %v; want 1", got)
	}
	acquire(2)
	if got := drifts(); got != 2 {
		t.Fatalf("after one asking limit 2: %v; want 2", got)
	}
	if got := drifts(); got != 2 {
		t.Fatalf("a scrape later, nothing new: %v; want 2 still", got)
	}
}
