package metrics_test

import (
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/histogram"
	"github.com/governor-dev/governor/internal/proctest"
	"github.com/governor-dev/governor/metrics"
)

// fakeSource serves a fixed state. With block set, Resources waits for
// it to close and ignores its context, like a backend that hangs.
type fakeSource struct {
	project   string
	statuses  map[string]governor.Status // by resource; the listing is its keys
	listErr   error
	statusErr map[string]error
	rates     map[string]governor.RateStatus // by rate key; the listing is its keys
	rateErr   map[string]error
	block     chan struct{}
	honorCtx  bool // Resources waits for ctx to end and returns its error
	lists     atomic.Int32
	returned  chan struct{} // closed when the first blocked Resources returns
	once      sync.Once
}

func (f *fakeSource) Project() string { return f.project }

func (f *fakeSource) Resources(ctx context.Context) ([]string, error) {
	f.lists.Add(1)
	if f.block != nil {
		<-f.block
		defer f.once.Do(func() { close(f.returned) })
	}
	if f.honorCtx {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if f.listErr != nil {
		return nil, f.listErr
	}
	return slices.Collect(maps.Keys(f.statuses)), nil
}

func (f *fakeSource) Status(ctx context.Context, resource string) (governor.Status, error) {
	if err := f.statusErr[resource]; err != nil {
		return governor.Status{}, err
	}
	st, ok := f.statuses[resource]
	if !ok {
		return governor.Status{Key: governor.Key{Project: f.project, Resource: resource}}, nil
	}
	return st, nil
}

func (f *fakeSource) Rates(ctx context.Context) ([]string, error) {
	return slices.Collect(maps.Keys(f.rates)), nil
}

func (f *fakeSource) RateStatus(ctx context.Context, name string) (governor.RateStatus, error) {
	if err := f.rateErr[name]; err != nil {
		return governor.RateStatus{}, err
	}
	return f.rates[name], nil
}

var t0 = time.Date(2025, 11, 29, 12, 0, 0, 0, time.UTC)

// fixedState: gpu has two holders, one waiter and a drifting limit;
// issue:7 is idle but has history.
func fixedState() *fakeSource {
	return &fakeSource{project: "prj", statuses: map[string]governor.Status{
		"gpu": {
			Key: governor.Key{Project: "prj", Resource: "gpu"}, Limit: 4, Used: 3, DriftLimit: 5, Now: t0,
			Holders: []governor.Holder{
				{LeaseID: "a", Weight: 1, AcquiredAt: t0.Add(-90 * time.Second)},
				{LeaseID: "b", Weight: 2, AcquiredAt: t0.Add(-30 * time.Second)},
			},
			Waiters:  []governor.Waiter{{ID: "w", Weight: 2, EnqueuedAt: t0.Add(-12500 * time.Millisecond)}},
			Counters: governor.Counters{Acquired: 11, Busy: 3, Waited: 5, Released: 8, Lost: 1, ReclaimedExpiry: 2, ReclaimedDead: 4, Takeovers: 6},
			Histograms: map[string]histogram.Histogram{histogram.Wait: {
				Counts: []int64{6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0}[:16], Sum: 7500 * time.Second}},
		},
		"issue:7": {
			Key: governor.Key{Project: "prj", Resource: "issue:7"}, Limit: 1, Now: t0,
			Counters: governor.Counters{Acquired: 2, Released: 2},
		},
		"provider:anthropic": {
			Key: governor.Key{Project: "prj", Resource: "provider:anthropic"}, Limit: 2, Now: t0,
			Adaptive: &governor.AdaptiveState{Limit: 2, Max: 8, Successes: 5},
			CoolOff:  t0.Add(1500 * time.Millisecond), LastSignal: t0.Add(-10 * time.Second),
		},
	}, rates: map[string]governor.RateStatus{
		"provider:anthropic": {Requests: governor.PerMinute(50), Tokens: governor.PerMinute(40000),
			RemainingRequests: 3, RemainingTokens: 1200, Allowed: 20, Limited: 4, ShadowDenied: 7},
		"embeddings": {Requests: governor.PerMinute(10), RemainingRequests: 9, RemainingTokens: -1, Allowed: 1},
	}}
}

// testdata/fixed.prom is the exposition a scrape of fixedState gives,
// every series collectorNames names.
func fixedExpected(t *testing.T) io.Reader {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "fixed.prom"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// collectorNames are the metrics whose values a scrape of fixedState
// determines: all but governor_scrape_duration_seconds.
var collectorNames = []string{
	"governor_acquire_wait_seconds", "governor_acquires_queued_total", "governor_rate_allowed_total", "governor_rate_remaining",
	"governor_acquires_total", "governor_holders", "governor_leases_lost_total",
	"governor_oldest_lease_age_seconds", "governor_oldest_waiter_age_seconds",
	"governor_rate_limited_total", "governor_reclaims_total", "governor_releases_total",
	"governor_scrape_error", "governor_slots_in_use", "governor_slots_limit",
	"governor_slots_limit_drift", "governor_takeovers_total", "governor_up", "governor_waiters",
}

func newCollector(t *testing.T, src metrics.Source, opts metrics.CollectorOptions) *metrics.Collector {
	t.Helper()
	c, err := metrics.NewCollector(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestMetricsCollectorFixedState(t *testing.T) {
	// "gpu" is configured with 2 but 4 is in force: the backend wins.
	// "run" is configured and never used: reported with its limit.
	c := newCollector(t, fixedState(), metrics.CollectorOptions{Limits: map[string]int{"gpu": 2, "run": 3}})
	if err := testutil.CollectAndCompare(c, fixedExpected(t), collectorNames...); err != nil {
		t.Fatal(err)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %+v", err, problems)
	}
	// The Descs Describe announces are the ones Collect uses: a pedantic
	// registry refuses anything else.
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c, "governor_scrape_duration_seconds"); n != 1 {
		t.Fatalf("scrape duration series: %d, want 1", n)
	}
}

func TestMetricsCollectorOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  metrics.Source
		opts metrics.CollectorOptions
	}{
		{"nil source", nil, metrics.CollectorOptions{}},
		{"negative timeout", fixedState(), metrics.CollectorOptions{Timeout: -time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := metrics.NewCollector(tc.src, tc.opts); !errors.Is(err, governor.ErrInvalid) {
				t.Fatalf("err %v, want ErrInvalid", err)
			}
		})
	}
}

// The limits map is copied: a caller changing it later changes nothing.
func TestMetricsCollectorCopiesLimits(t *testing.T) {
	limits := map[string]int{"run": 3}
	c := newCollector(t, &fakeSource{project: "prj"}, metrics.CollectorOptions{Limits: limits})
	limits["other"] = 1
	if n := testutil.CollectAndCount(c, "governor_slots_limit"); n != 1 {
		t.Fatalf("%d limit series, want 1", n)
	}
}

const downExpected = `
# HELP governor_scrape_error 1 when any backend read of the scrape failed (the backend is down, or some resource could not be read), else 0.
# TYPE governor_scrape_error gauge
governor_scrape_error{project="prj"} 1
# HELP governor_up 1 when the backend answered the scrape within the timeout, 0 when it did not.
# TYPE governor_up gauge
governor_up{project="prj"} 0
`

func TestMetricsBackendDown(t *testing.T) {
	src := fixedState()
	src.listErr = errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
	c := newCollector(t, src, metrics.CollectorOptions{Limits: map[string]int{"run": 3}})
	if err := testutil.CollectAndCompare(c, strings.NewReader(downExpected), "governor_up", "governor_scrape_error", "governor_slots_limit"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c, "governor_scrape_duration_seconds", "governor_build_info"); n != 2 {
		t.Fatalf("%d series of duration and build info, want 2 (always reported)", n)
	}
	if n := testutil.CollectAndCount(c, "governor_rate_limited_total", "governor_acquires_total"); n != 0 {
		t.Fatalf("%d counter series while the backend is down, want 0 (never a lower value)", n)
	}
	if err := c.Healthy(context.Background()); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("Healthy: %v, want the listing error", err)
	}
}

// A backend that hangs, even one that ignores its context, holds a
// scrape no longer than the timeout; scrapes meanwhile share the one
// read in flight instead of piling up goroutines.
func TestMetricsBackendHangs(t *testing.T) {
	const timeout = 100 * time.Millisecond
	src := fixedState()
	src.block, src.returned = make(chan struct{}), make(chan struct{})
	c := newCollector(t, src, metrics.CollectorOptions{Timeout: timeout})

	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			start := time.Now()
			err := testutil.CollectAndCompare(c, strings.NewReader(downExpected), "governor_up", "governor_scrape_error", "governor_slots_in_use")
			if err != nil {
				t.Error(err)
			}
			if d := time.Since(start); d > timeout+time.Second {
				t.Errorf("scrape took %v with a %v timeout", d, timeout)
			}
		})
	}
	wg.Wait()
	if n := src.lists.Load(); n != 1 {
		t.Errorf("%d backend reads started for concurrent scrapes of a hung backend, want 1", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Healthy(ctx); err == nil {
		t.Error("Healthy on a hung backend: nil")
	}

	close(src.block)
	<-src.returned // the hung read ends and its goroutine with it
	if got := upValue(t, c); got != 1 {
		t.Fatalf("governor_up %v after the backend recovered, want 1", got)
	}
}

// A backend that honours its context gets the timeout as a deadline.
func TestMetricsBackendSlow(t *testing.T) {
	const timeout = 50 * time.Millisecond
	src := fixedState()
	src.honorCtx = true
	c := newCollector(t, src, metrics.CollectorOptions{Timeout: timeout})
	start := time.Now()
	if got := upValue(t, c); got != 0 {
		t.Fatalf("governor_up %v, want 0", got)
	}
	if d := time.Since(start); d > timeout+time.Second {
		t.Fatalf("scrape took %v with a %v timeout", d, timeout)
	}
}

// One resource that cannot be read is left out and flagged; the backend
// still answered, so governor_up stays 1.
func TestMetricsPartialFailure(t *testing.T) {
	src := fixedState()
	src.statusErr = map[string]error{"gpu": errors.New("WRONGTYPE")}
	c := newCollector(t, src, metrics.CollectorOptions{})
	want := `
# HELP governor_scrape_error 1 when any backend read of the scrape failed (the backend is down, or some resource could not be read), else 0.
# TYPE governor_scrape_error gauge
governor_scrape_error{project="prj"} 1
# HELP governor_slots_limit Slots of the resource: the limit in force, or the configured one before first use.
# TYPE governor_slots_limit gauge
governor_slots_limit{project="prj",resource="issue:7"} 1
governor_slots_limit{project="prj",resource="provider:anthropic"} 2
# HELP governor_up 1 when the backend answered the scrape within the timeout, 0 when it did not.
# TYPE governor_up gauge
governor_up{project="prj"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "governor_up", "governor_scrape_error", "governor_slots_limit"); err != nil {
		t.Fatal(err)
	}
	if err := c.Healthy(context.Background()); err == nil || !strings.Contains(err.Error(), "status of gpu") {
		t.Fatalf("Healthy: %v, want the status error of gpu", err)
	}
}

func TestMetricsHandler(t *testing.T) {
	for _, tc := range []struct {
		name     string
		src      *fakeSource
		health   int
		healthIs string
		up       string
	}{
		{"up", fixedState(), http.StatusOK, "ok\n", `governor_up{project="prj"} 1`},
		{"down", &fakeSource{project: "prj", listErr: errors.New("connection refused")}, http.StatusServiceUnavailable,
			"connection refused", `governor_up{project="prj"} 0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCollector(t, tc.src, metrics.CollectorOptions{})
			reg := prometheus.NewRegistry()
			reg.MustRegister(c)
			srv := httptest.NewServer(metrics.Handler(reg, c))
			defer srv.Close()

			code, body := proctest.Get(t, srv.URL+"/healthz")
			if code != tc.health || !strings.Contains(body, tc.healthIs) {
				t.Errorf("/healthz: %d %q, want %d %q", code, body, tc.health, tc.healthIs)
			}
			code, body = proctest.Get(t, srv.URL+"/metrics")
			if code != http.StatusOK || !strings.Contains(body, tc.up+"\n") {
				t.Errorf("/metrics: %d, want 200 with %q in\n%s", code, tc.up, body)
			}
			if code, _ := proctest.Get(t, srv.URL+"/"); code != http.StatusOK {
				t.Errorf("/: %d", code)
			}
			if code, _ := proctest.Get(t, srv.URL+"/nothing"); code != http.StatusNotFound {
				t.Errorf("/nothing: %d, want 404", code)
			}
		})
	}
}

// upValue scrapes c once and returns governor_up.
func upValue(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	return gatherValue(t, reg, "governor_up", nil)
}

// gatherValue returns the value of the one series of name whose labels
// include want; it fails the test if there is not exactly one.
func gatherValue(t *testing.T, g prometheus.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var vals []float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue series
				}
			}
			switch {
			case m.Gauge != nil:
				vals = append(vals, m.GetGauge().GetValue())
			case m.Counter != nil:
				vals = append(vals, m.GetCounter().GetValue())
			case m.Histogram != nil:
				vals = append(vals, float64(m.GetHistogram().GetSampleCount()))
			}
		}
	}
	if len(vals) != 1 {
		t.Fatalf("%s%v: %d series, want 1", name, want, len(vals))
	}
	return vals[0]
}

// TestMetricsSignals: the adaptive limit against its configured maximum,
// the cool-off left and the last signal are exported for the resources
// that have them; every resource has a cool-off gauge (0: none).
func TestMetricsSignals(t *testing.T) {
	c := newCollector(t, fixedState(), metrics.CollectorOptions{})
	want := `
# HELP governor_adaptive_limit The limit adaptive concurrency (AIMD) holds a provider at, fleet-wide: halved on each rate-limit signal, one more after a run of successes; absent when not adaptive.
# TYPE governor_adaptive_limit gauge
governor_adaptive_limit{project="prj",resource="provider:anthropic"} 2
# HELP governor_adaptive_limit_max The configured maximum (max_concurrency) the adaptive limit runs under; absent when not adaptive.
# TYPE governor_adaptive_limit_max gauge
governor_adaptive_limit_max{project="prj",resource="provider:anthropic"} 8
# HELP governor_cooloff_seconds Seconds left of the resource's cool-off after a rate-limit signal (governor backoff, Provider.Do); 0 when none.
# TYPE governor_cooloff_seconds gauge
governor_cooloff_seconds{project="prj",resource="gpu"} 0
governor_cooloff_seconds{project="prj",resource="issue:7"} 0
governor_cooloff_seconds{project="prj",resource="provider:anthropic"} 1.5
# HELP governor_last_signal_timestamp_seconds When the last rate-limit signal for the resource came (Unix seconds); absent when none came.
# TYPE governor_last_signal_timestamp_seconds gauge
governor_last_signal_timestamp_seconds{project="prj",resource="provider:anthropic"} ` + strconv.FormatInt(t0.Add(-10*time.Second).Unix(), 10) + `
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "governor_adaptive_limit", "governor_adaptive_limit_max",
		"governor_cooloff_seconds", "governor_last_signal_timestamp_seconds"); err != nil {
		t.Fatal(err)
	}
	shadow := `
# HELP governor_shadow_denied_total Reservations a shadow rate limit (providers.NAME.shadow) would have held or refused; none was (kept by the backend: every process counts).
# TYPE governor_shadow_denied_total counter
governor_shadow_denied_total{project="prj",provider="anthropic"} 7
governor_shadow_denied_total{project="prj",provider="embeddings"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(shadow), "governor_shadow_denied_total"); err != nil {
		t.Fatal(err)
	}
}

// The hold-time histogram, the paused gauge and the expected wait of a
// newcomer are exported per resource; the expected wait is absent when
// unknown.
func TestCollectorHoldPausedExpectedWait(t *testing.T) {
	src := &fakeSource{project: "prj", statuses: map[string]governor.Status{
		"gpu": {Key: governor.Key{Project: "prj", Resource: "gpu"}, Limit: 1, Used: 1, Now: t0,
			Holders: []governor.Holder{{LeaseID: "a", Weight: 1, AcquiredAt: t0}},
			Holds:   []time.Duration{10 * time.Second, 30 * time.Second},
			Histograms: map[string]histogram.Histogram{histogram.Hold: {
				Counts: []int64{0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, Sum: 40 * time.Second}}},
		"deploy": {Key: governor.Key{Project: "prj", Resource: "deploy"}, Limit: 1, Now: t0,
			Paused: &governor.Paused{Since: t0, By: "alice"}},
	}}
	c := newCollector(t, src, metrics.CollectorOptions{})
	want := `
# HELP governor_expected_wait_seconds Expected wait of a newcomer (weight 1, at the tail), from the last holds the backend measured and the weight queued ahead; absent when unknown (no hold history, or paused).
# TYPE governor_expected_wait_seconds gauge
governor_expected_wait_seconds{project="prj",resource="gpu"} 20
# HELP governor_hold_seconds Time from an acquire call to the release of its lease, in every process (kept by the backend; sent by each process at most a second late; leases that expired, were reclaimed or taken over are not in it).
# TYPE governor_hold_seconds histogram
governor_hold_seconds_bucket{project="prj",resource="gpu",le="0.01"} 0
governor_hold_seconds_bucket{project="prj",resource="gpu",le="0.1"} 0
governor_hold_seconds_bucket{project="prj",resource="gpu",le="0.5"} 0
governor_hold_seconds_bucket{project="prj",resource="gpu",le="1"} 0
governor_hold_seconds_bucket{project="prj",resource="gpu",le="5"} 0
governor_hold_seconds_bucket{project="prj",resource="gpu",le="10"} 1
governor_hold_seconds_bucket{project="prj",resource="gpu",le="30"} 2
governor_hold_seconds_bucket{project="prj",resource="gpu",le="60"} 2
governor_hold_seconds_bucket{project="prj",resource="gpu",le="120"} 2
governor_hold_seconds_bucket{project="prj",resource="gpu",le="300"} 2
governor_hold_seconds_bucket{project="prj",resource="gpu",le="600"} 2
governor_hold_seconds_bucket{project="prj",resource="gpu",le="1800"} 2
governor_hold_seconds_bucket{project="prj",resource="gpu",le="3600"} 2
governor_hold_seconds_bucket{project="prj",resource="gpu",le="7200"} 2
governor_hold_seconds_bucket{project="prj",resource="gpu",le="21600"} 2
governor_hold_seconds_bucket{project="prj",resource="gpu",le="86400"} 2
governor_hold_seconds_bucket{project="prj",resource="gpu",le="+Inf"} 2
governor_hold_seconds_sum{project="prj",resource="gpu"} 40
governor_hold_seconds_count{project="prj",resource="gpu"} 2
# HELP governor_paused 1 while the resource is paused ('governor pause'): nothing new is granted.
# TYPE governor_paused gauge
governor_paused{project="prj",resource="deploy"} 1
governor_paused{project="prj",resource="gpu"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "governor_hold_seconds", "governor_paused", "governor_expected_wait_seconds"); err != nil {
		t.Fatal(err)
	}
}
