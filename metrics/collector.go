package metrics

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/governor-dev/governor/governor"
)

// DefaultTimeout bounds the backend reads of one scrape when
// CollectorOptions.Timeout is zero.
const DefaultTimeout = 5 * time.Second

// Source is the state a Collector reads at scrape time. *governor.Governor
// implements it; the Collector only reads.
type Source interface {
	// Project names the project whose resources are read; it becomes the
	// const label project.
	Project() string
	// Resources lists the resources that have state in the backend.
	Resources(ctx context.Context) ([]string, error)
	// Status reads one resource, its backend-kept counters included.
	Status(ctx context.Context, resource string) (governor.Status, error)
}

var _ Source = (*governor.Governor)(nil)

// CollectorOptions configure a Collector. The zero value of each field
// means the documented default.
type CollectorOptions struct {
	// Timeout bounds the backend reads of one scrape (default
	// DefaultTimeout). A scrape returns after at most about this long
	// even when the backend hangs, reporting governor_up 0.
	Timeout time.Duration
	// Limits are the configured limits by resource name (what
	// config.Config.Limits returns). Each is reported even before any
	// process used it, with this limit while the backend has none.
	Limits map[string]int
}

// Collector is a prometheus.Collector that reads one project's state from
// the backend at scrape time. Concurrent scrapes share one backend read,
// so a backend that hangs ties up at most one goroutine, whatever the
// scrape rate.
type Collector struct {
	src     Source
	timeout time.Duration
	limits  map[string]int

	up, scrapeError, scrapeDuration, rateLimited  *prometheus.Desc
	limit, inUse, drift, holders, waiters         *prometheus.Desc
	oldestLease, oldestWaiter                     *prometheus.Desc
	acquires, releases, lost, reclaims, takeovers *prometheus.Desc

	mu       sync.Mutex
	inflight *flight // the backend read in progress, if any
}

// flight is one backend read; done closes when snap is set.
type flight struct {
	done chan struct{}
	snap snapshot
}

// snapshot is what one backend read found.
type snapshot struct {
	answered    bool              // the backend listed the resources
	statuses    []governor.Status // the resources read, by name
	rateLimited int64             // rate-limit denials over all resources
	err         error             // the first read that failed, if any
}

// RateSource is a Source whose backend counts rate-limit denials
// (*governor.Governor on either backend).
type RateSource interface {
	RateLimited(ctx context.Context, resource string) (int64, error)
}

// NewCollector returns a Collector of src's project. It fails with a
// wrapped governor.ErrInvalid on a negative timeout and reads nothing
// until the first scrape.
func NewCollector(src Source, opts CollectorOptions) (*Collector, error) {
	if src == nil {
		return nil, fmt.Errorf("%w: metrics: nil source", governor.ErrInvalid)
	}
	if opts.Timeout < 0 {
		return nil, fmt.Errorf("%w: metrics: scrape timeout %v; it must be positive (0: %v)", governor.ErrInvalid, opts.Timeout, DefaultTimeout)
	}
	c := &Collector{src: src, timeout: opts.Timeout, limits: maps.Clone(opts.Limits)}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	cl := prometheus.Labels{"project": src.Project()}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, cl)
	}
	c.up = desc("governor_up", "1 when the backend answered the scrape within the timeout, 0 when it did not.")
	c.scrapeError = desc("governor_scrape_error", "1 when any backend read of the scrape failed (the backend is down, or some resource could not be read), else 0.")
	c.scrapeDuration = desc("governor_scrape_duration_seconds", "Time the scrape took to read the backend.")
	c.rateLimited = desc("governor_rate_limited_total", "Rate-limit reservations denied (kept by the backend: every process counts), over all resources.")
	c.limit = desc("governor_slots_limit", "Slots of the resource: the limit in force, or the configured one before first use.", "resource")
	c.inUse = desc("governor_slots_in_use", "Weight held by unexpired leases.", "resource")
	c.drift = desc("governor_slots_limit_drift", "A limit some process asked for that differs from the one in force (processes disagree on their configuration); 0 if none.", "resource")
	c.holders = desc("governor_holders", "Leases held.", "resource")
	c.waiters = desc("governor_waiters", "Acquires queued, waiting for slots.", "resource")
	c.oldestLease = desc("governor_oldest_lease_age_seconds", "Age of the oldest held lease; 0 if none.", "resource")
	c.oldestWaiter = desc("governor_oldest_waiter_age_seconds", "How long the longest-queued acquire has waited so far; 0 if none.", "resource")
	c.acquires = desc("governor_acquires_total", "Acquires by outcome: acquired (granted, at once or after waiting), busy (refused in fail mode), waited (had to queue; counted again as acquired when granted).", "resource", "outcome")
	c.releases = desc("governor_releases_total", "Leases released.", "resource")
	c.lost = desc("governor_leases_lost_total", "Leases their holders declared lost (renewal failed before expiry).", "resource")
	c.reclaims = desc("governor_reclaims_total", "Holders removed by someone else: reason expired (lease not renewed in time) or owner_dead (owner process proven dead).", "resource", "reason")
	c.takeovers = desc("governor_takeovers_total", "Holders replaced by a takeover.", "resource")
	return c, nil
}

// Describe sends every Desc the Collector emits.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.scrapeError, c.scrapeDuration, c.rateLimited,
		c.limit, c.inUse, c.drift, c.holders, c.waiters, c.oldestLease, c.oldestWaiter,
		c.acquires, c.releases, c.lost, c.reclaims, c.takeovers} {
		ch <- d
	}
}

// Collect reads the backend, waiting at most the timeout, and sends what
// it read. governor_up, governor_scrape_error and
// governor_scrape_duration_seconds are sent whatever happened; a resource
// that could not be read is left out.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	s := c.read(ctx)
	c.gauge(ch, c.up, b2f(s.answered))
	c.gauge(ch, c.scrapeError, b2f(s.err != nil))
	c.gauge(ch, c.scrapeDuration, time.Since(start).Seconds())
	c.counter(ch, c.rateLimited, float64(s.rateLimited))
	for _, st := range s.statuses {
		c.emit(ch, st)
	}
}

// Healthy reports whether the backend answers every read of a scrape
// within the timeout: nil, or the first failure.
func (c *Collector) Healthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return c.read(ctx).err
}

// read returns the result of the backend read in flight, starting one if
// none is, or gives up when ctx ends. The read runs on its own bounded
// context in a goroutine, so a Source that ignores its context cannot
// hold a scrape beyond ctx.
func (c *Collector) read(ctx context.Context) snapshot {
	c.mu.Lock()
	f := c.inflight
	if f == nil {
		f = &flight{done: make(chan struct{})}
		c.inflight = f
		go c.fly(f)
	}
	c.mu.Unlock()
	select {
	case <-f.done:
		return f.snap
	case <-ctx.Done():
		return snapshot{err: fmt.Errorf("metrics: backend did not answer within the scrape timeout: %w", ctx.Err())}
	}
}

func (c *Collector) fly(f *flight) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	f.snap = c.readBackend(ctx)
	c.mu.Lock()
	c.inflight = nil
	c.mu.Unlock()
	close(f.done)
}

// readBackend lists the resources with state, adds the configured ones,
// and reads each. A resource that fails is left out and recorded.
func (c *Collector) readBackend(ctx context.Context) snapshot {
	have, err := c.src.Resources(ctx)
	if err != nil {
		return snapshot{err: fmt.Errorf("metrics: list resources: %w", err)}
	}
	names := maps.Clone(c.limits)
	if names == nil {
		names = map[string]int{}
	}
	for _, n := range have {
		if _, ok := names[n]; !ok {
			names[n] = 0
		}
	}
	s := snapshot{answered: true}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		st, err := c.src.Status(ctx, n)
		if err != nil {
			if s.err == nil {
				s.err = fmt.Errorf("metrics: status of %s: %w", n, err)
			}
			if ctx.Err() != nil {
				break
			}
			continue
		}
		st.Key.Resource = n
		if st.Limit == 0 {
			st.Limit = names[n] // never used yet: report the configured limit
		}
		s.statuses = append(s.statuses, st)
		if rs, ok := c.src.(RateSource); ok {
			if n, err := rs.RateLimited(ctx, n); err == nil {
				s.rateLimited += n
			}
		}
	}
	return s
}

func (c *Collector) emit(ch chan<- prometheus.Metric, st governor.Status) {
	r := st.Key.Resource
	c.gauge(ch, c.limit, float64(st.Limit), r)
	c.gauge(ch, c.inUse, float64(st.Used), r)
	c.gauge(ch, c.drift, float64(st.DriftLimit), r)
	c.gauge(ch, c.holders, float64(len(st.Holders)), r)
	c.gauge(ch, c.waiters, float64(len(st.Waiters)), r)
	var oldestLease, oldestWaiter time.Duration
	for _, h := range st.Holders {
		oldestLease = max(oldestLease, st.Now.Sub(h.AcquiredAt))
	}
	for _, w := range st.Waiters {
		oldestWaiter = max(oldestWaiter, st.Now.Sub(w.EnqueuedAt))
	}
	c.gauge(ch, c.oldestLease, oldestLease.Seconds(), r)
	c.gauge(ch, c.oldestWaiter, oldestWaiter.Seconds(), r)
	k := st.Counters
	c.counter(ch, c.acquires, float64(k.Acquired), r, "acquired")
	c.counter(ch, c.acquires, float64(k.Busy), r, "busy")
	c.counter(ch, c.acquires, float64(k.Waited), r, "waited")
	c.counter(ch, c.releases, float64(k.Released), r)
	c.counter(ch, c.lost, float64(k.Lost), r)
	c.counter(ch, c.reclaims, float64(k.ReclaimedExpiry), r, "expired")
	c.counter(ch, c.reclaims, float64(k.ReclaimedDead), r, "owner_dead")
	c.counter(ch, c.takeovers, float64(k.Takeovers), r)
}

func (c *Collector) gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	send(ch, d, prometheus.GaugeValue, v, labels)
}

func (c *Collector) counter(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	send(ch, d, prometheus.CounterValue, v, labels)
}

// send reports a label value that Prometheus refuses (not UTF-8) as an
// invalid metric instead of panicking; the handler then skips it.
func send(ch chan<- prometheus.Metric, d *prometheus.Desc, t prometheus.ValueType, v float64, labels []string) {
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err != nil {
		m = prometheus.NewInvalidMetric(d, err)
	}
	ch <- m
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
