package metrics_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/metrics"
)

// series returns every counter series of a gather, by name and labels.
func counterSeries(t *testing.T, g prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetType() != dto.MetricType_COUNTER {
			continue
		}
		for _, m := range mf.GetMetric() {
			id := mf.GetName()
			for _, lp := range m.GetLabel() {
				id += "," + lp.GetName() + "=" + lp.GetValue()
			}
			out[id] = m.GetCounter().GetValue()
		}
	}
	return out
}

// A read that fails in one scrape never makes a counter lower than in
// the scrape before (Prometheus would take it for a reset): the series
// it could not read are left out, and rate-limit denials are counted by
// provider.
func TestMetricsCountersNeverGoBack(t *testing.T) {
	src := fixedState()
	c := newCollector(t, src, metrics.CollectorOptions{})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	before := counterSeries(t, reg)
	if before["governor_rate_limited_total,project=prj,provider=anthropic"] != 4 {
		t.Fatalf("rate-limited denials by provider: %v", before)
	}
	src.rateErr = map[string]error{"provider:anthropic": errors.New("i/o timeout")}
	src.statusErr = map[string]error{"gpu": errors.New("i/o timeout")}
	after := counterSeries(t, reg)
	for id, v := range after {
		if w, ok := before[id]; ok && v < w {
			t.Errorf("%s went from %v to %v when one read failed", id, w, v)
		}
	}
	if _, ok := after["governor_rate_limited_total,project=prj,provider=anthropic"]; ok {
		t.Errorf("the series of a rate key that could not be read was sent")
	}
	if after["governor_rate_limited_total,project=prj,provider=embeddings"] != 0 {
		t.Errorf("the other provider's series is missing: %v", after)
	}
}

// A provider with rate limits and no concurrency slots has no resource,
// only a rate key: its denials and remaining budget are exported all
// the same.
func TestMetricsRateOnlyProvider(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	worker, exporter := openGovernor(t, dir), openGovernor(t, dir)
	p := worker.Provider("openai", governor.ProviderLimits{Requests: governor.RateLimit{Rate: 2, Period: time.Hour}})
	call := func(context.Context) (int64, error) { return 0, nil }
	for range 2 {
		if err := p.Do(ctx, 0, call); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := p.Do(short, 0, call); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("third call within the hour: %v, want the deadline (denied)", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(t, exporter, metrics.CollectorOptions{}))
	openai := map[string]string{"provider": "openai"}
	if got := gatherValue(t, reg, "governor_rate_limited_total", openai); got < 1 {
		t.Errorf("governor_rate_limited_total{provider=openai} = %v, want at least 1", got)
	}
	if got := gatherValue(t, reg, "governor_rate_allowed_total", openai); got != 2 {
		t.Errorf("governor_rate_allowed_total{provider=openai} = %v, want 2", got)
	}
	if got := gatherValue(t, reg, "governor_rate_remaining", map[string]string{"provider": "openai", "limit": "requests"}); got != 0 {
		t.Errorf("governor_rate_remaining{provider=openai,limit=requests} = %v, want 0", got)
	}
}

// Each acquire that ended is counted under exactly one outcome: the sum
// over outcomes is the number of calls.
func TestMetricsOutcomesDisjoint(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	worker, exporter := openGovernor(t, dir), openGovernor(t, dir)
	held, err := worker.Acquire(ctx, "gpu", governor.AcquireOptions{Limit: 1}) // acquired at once
	if err != nil {
		t.Fatal(err)
	}
	if _, err := worker.Acquire(ctx, "gpu", governor.AcquireOptions{Limit: 1}); !errors.Is(err, governor.ErrBusy) { // busy
		t.Fatal(err)
	}
	granted := make(chan error, 1)
	go func() { // queued, then acquired
		l, err := worker.Acquire(ctx, "gpu", governor.AcquireOptions{Limit: 1, Mode: governor.Wait})
		if err == nil {
			err = l.Release()
		}
		granted <- err
	}()
	for {
		st, err := exporter.Status(ctx, "gpu")
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Waiters) == 1 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	if err := <-granted; err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(t, exporter, metrics.CollectorOptions{}))
	sum := 0.0
	for id, v := range counterSeries(t, reg) {
		if len(id) > len("governor_acquires_total,") && id[:len("governor_acquires_total,")] == "governor_acquires_total," {
			sum += v
		}
	}
	if sum != 3 {
		t.Errorf("governor_acquires_total summed over outcomes = %v after 3 acquires, want 3", sum)
	}
	if got := gatherValue(t, reg, "governor_acquires_queued_total", map[string]string{"resource": "gpu"}); got != 1 {
		t.Errorf("governor_acquires_queued_total = %v, want 1", got)
	}
}

func TestMetricsBuildInfo(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(t, &fakeSource{project: "prj", listErr: errors.New("down")}, metrics.CollectorOptions{}))
	if got := gatherValue(t, reg, "governor_build_info", map[string]string{"goversion": runtime.Version()}); got != 1 {
		t.Fatalf("governor_build_info = %v, want 1", got)
	}
}

// The wait histogram is kept by the backend: what a process that has
// since exited waited (a CLI run) is exported by another.
func TestMetricsWaitHistogramEveryProcess(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	worker, exporter := openGovernor(t, dir), openGovernor(t, dir)
	for range 3 {
		l, err := worker.Acquire(ctx, "gpu", governor.AcquireOptions{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
	}
	if err := worker.Close(); err != nil { // a CLI run ends
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(t, exporter, metrics.CollectorOptions{}))
	if got := gatherValue(t, reg, "governor_acquire_wait_seconds", map[string]string{"resource": "gpu"}); got != 3 {
		t.Fatalf("governor_acquire_wait_seconds{resource=gpu} count = %v, want 3", got)
	}
}
