package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/filebackend"
	"github.com/governor-dev/governor/internal/leasetest"
	"github.com/governor-dev/governor/metrics"
)

func openGovernor(t testing.TB, dir string) *governor.Governor {
	return leasetest.FileGovernor(t, dir, governor.Options{Project: "prj"})
}

// A Governor that never acquired anything sees, through the backend, what
// another one (another process, in production) holds, and the counters
// of its acquires after it released.
func TestMetricsFileBackend(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	worker, exporter := openGovernor(t, dir), openGovernor(t, dir)
	c := newCollector(t, exporter, metrics.CollectorOptions{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	gpu := func(name string, extra ...string) float64 {
		want := map[string]string{"project": "prj", "resource": "gpu"}
		for i := 0; i+1 < len(extra); i += 2 {
			want[extra[i]] = extra[i+1]
		}
		return gatherValue(t, reg, name, want)
	}
	// expect checks the gpu series named, after the stage said.
	type series struct {
		name   string
		labels []string
		want   float64
	}
	expect := func(stage string, all ...series) {
		t.Helper()
		for _, tc := range all {
			if got := gpu(tc.name, tc.labels...); got != tc.want {
				t.Errorf("%s: %s%v = %v, want %v", stage, tc.name, tc.labels, got, tc.want)
			}
		}
	}

	l, err := worker.Acquire(ctx, "gpu", governor.AcquireOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	_, err = worker.Acquire(ctx, "gpu", governor.AcquireOptions{Limit: 2, Weight: 2})
	if !errors.Is(err, governor.ErrBusy) {
		t.Fatalf("second acquire: %v, want busy", err)
	}
	expect("held",
		series{"governor_slots_limit", nil, 2},
		series{"governor_slots_in_use", nil, 1},
		series{"governor_holders", nil, 1},
		series{"governor_acquires_total", []string{"outcome", "acquired"}, 1},
		series{"governor_acquires_total", []string{"outcome", "busy"}, 1},
		series{"governor_releases_total", nil, 0})
	if got := gatherValue(t, reg, "governor_up", nil); got != 1 {
		t.Errorf("governor_up %v, want 1", got)
	}

	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	expect("released",
		series{"governor_slots_in_use", nil, 0},
		series{"governor_holders", nil, 0},
		series{"governor_acquires_total", []string{"outcome", "acquired"}, 1},
		series{"governor_acquires_total", []string{"outcome", "busy"}, 1},
		series{"governor_releases_total", nil, 1})

	// The counters outlive every Governor that made them.
	if err := worker.Close(); err != nil {
		t.Fatal(err)
	}
	fresh := openGovernor(t, dir)
	reg2 := prometheus.NewRegistry()
	reg2.MustRegister(newCollector(t, fresh, metrics.CollectorOptions{}))
	if got := gatherValue(t, reg2, "governor_acquires_total", map[string]string{"resource": "gpu", "outcome": "acquired"}); got != 1 {
		t.Errorf("acquired after every user closed: %v, want 1", got)
	}
}

func TestMetricsInstruments(t *testing.T) {
	ctx := context.Background()
	g := openGovernor(t, t.TempDir())
	reg := prometheus.NewPedanticRegistry()
	in, err := metrics.NewInstruments(reg)
	if err != nil {
		t.Fatal(err)
	}
	again, err := metrics.NewInstruments(reg)
	if err != nil {
		t.Fatalf("second NewInstruments on one registry: %v", err)
	}

	l, err := in.Acquire(ctx, g, "gpu", governor.AcquireOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.Acquire(ctx, g, "gpu", governor.AcquireOptions{Limit: 1}); !errors.Is(err, governor.ErrBusy) {
		t.Fatalf("busy acquire: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	again.ObserveWait("gpu", 0)
	var none *metrics.Instruments
	none.ObserveWait("gpu", 0) // a nil Instruments does nothing
	if _, err := none.Acquire(ctx, g, "cpu", governor.AcquireOptions{Limit: 1}); err != nil {
		t.Fatal(err)
	}

	// One grant through Acquire, one ObserveWait through the second
	// Instruments, which share the histogram; the refusal is not a wait.
	if got := gatherValue(t, reg, "governor_wait_seconds", map[string]string{"resource": "gpu"}); got != 2 {
		t.Fatalf("governor_wait_seconds{resource=gpu} count %v, want 2", got)
	}
}

// An exporter process reads what a worker process holds.
func ExampleNewCollector() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "governor-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	open := func() *governor.Governor {
		b, err := filebackend.New(dir, filebackend.Options{})
		if err != nil {
			panic(err)
		}
		g, err := governor.New(b, governor.Options{Project: "example"})
		if err != nil {
			panic(err)
		}
		return g
	}
	worker, exporter := open(), open()
	defer worker.Close()
	defer exporter.Close()

	if _, err := worker.Acquire(ctx, "gpu", governor.AcquireOptions{Limit: 2}); err != nil {
		panic(err)
	}
	c, err := metrics.NewCollector(exporter, metrics.CollectorOptions{Limits: map[string]int{"run": 4}})
	if err != nil {
		panic(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "governor_up", "governor_slots_in_use", "governor_slots_limit":
			for _, m := range mf.GetMetric() {
				var resource string
				for _, lp := range m.GetLabel() {
					if lp.GetName() == "resource" {
						resource = " " + lp.GetValue()
					}
				}
				fmt.Printf("%s%s %v\n", mf.GetName(), resource, m.GetGauge().GetValue())
			}
		}
	}
	// Output:
	// governor_slots_in_use gpu 1
	// governor_slots_in_use run 0
	// governor_slots_limit gpu 2
	// governor_slots_limit run 4
	// governor_up 1
}

// Rate-limit denials of any process are counted by the backend and
// exported.
func TestMetricsRateLimited(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	worker, exporter := openGovernor(t, dir), openGovernor(t, dir)
	l, err := worker.Acquire(ctx, "provider:anthropic", governor.AcquireOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	req := governor.RateRequest{Key: governor.Key{Resource: "provider:anthropic"},
		Requests: governor.RateLimit{Rate: 1, Period: 1e12, Burst: 1}, NRequests: 1}
	for i, want := range []bool{true, false, false} {
		_, err := worker.Hold(ctx, governor.Ask{Rates: []governor.RateRequest{req}})
		var denied *governor.RateBusyError
		if allowed := err == nil; allowed != want || err != nil && !errors.As(err, &denied) {
			t.Fatalf("reservation %d: %v; want allowed %v", i, err, want)
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(t, exporter, metrics.CollectorOptions{}))
	if got := gatherValue(t, reg, "governor_rate_limited_total", nil); got != 2 {
		t.Fatalf("governor_rate_limited_total = %v, want 2", got)
	}
}
