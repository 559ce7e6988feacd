package metrics

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/capacity"
	"github.com/governor-dev/governor/governor/histogram"
	"github.com/governor-dev/governor/internal/buildinfo"
	"github.com/governor-dev/governor/internal/mkdirslot"
	"github.com/governor-dev/governor/internal/view"
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
	// MkdirLocks binds resources to the with-heavy-lock slot (what
	// config.Config.MkdirLocks returns): a hold of the slot outside
	// governor counts in governor_slots_in_use, and
	// governor_mkdir_slot_held_outside says it.
	MkdirLocks map[string]string
}

// Collector is a prometheus.Collector that reads one project's state from
// the backend at scrape time. Concurrent scrapes share one backend read,
// so a backend that hangs ties up at most one goroutine, whatever the
// scrape rate.
type Collector struct {
	src     Source
	timeout time.Duration
	limits  map[string]int
	mkdir   map[string]string

	up, scrapeError, scrapeDuration, buildInfo *prometheus.Desc
	limit, inUse, drift, holders, waiters      *prometheus.Desc
	mkdirOutside                               *prometheus.Desc
	oldestLease, oldestWaiter                  *prometheus.Desc
	acquires, queued, wait                     *prometheus.Desc
	hold, paused, expectedWait                 *prometheus.Desc
	releases, lost, reclaims, takeovers        *prometheus.Desc
	rateAllowed, rateLimited, rateRemaining    *prometheus.Desc
	build                                      buildinfo.Info
	// Rate-limit signals: the adaptive limit and its configured
	// maximum, the cool-off left, the last signal; shadow limits.
	adaptiveLimit, adaptiveMax, coolOff, lastSignal, shadowDenied *prometheus.Desc

	drifted *prometheus.Desc
	// Capacity leases (docs/capacity.md), absent without any.
	capLeases, capSlots, capGrants *prometheus.Desc
	// Rate shares (docs/capacity.md), absent without any.
	rateShares, rateShareRate, rateGrants    *prometheus.Desc
	tokenShares, tokenShareRate, tokenGrants *prometheus.Desc
	drifts                                   driftCount

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
	answered bool                  // the backend listed the resources
	statuses []governor.Status     // the resources read, by name
	outside  map[string]bool       // bound to a mkdir slot: held outside governor
	rates    []governor.RateStatus // the rate keys read, by name
	drifts   map[string]int        // drift events by resource (EventSource)
	err      error                 // the first read that failed, if any
}

// failed records err if it is the first failed read, and reports whether
// reading must stop: ctx ended.
func (s *snapshot) failed(ctx context.Context, err error) bool {
	if s.err == nil {
		s.err = err
	}
	return ctx.Err() != nil
}

// RateSource is a Source whose backend keeps rate limits
// (*governor.Governor on either backend).
type RateSource interface {
	// Rates lists the rate keys that have state.
	Rates(ctx context.Context) ([]string, error)
	// RateStatus reads one rate key.
	RateStatus(ctx context.Context, name string) (governor.RateStatus, error)
}

var _ RateSource = (*governor.Governor)(nil)

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
	c := &Collector{src: src, timeout: opts.Timeout, limits: maps.Clone(opts.Limits), mkdir: maps.Clone(opts.MkdirLocks)}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	cl := prometheus.Labels{"project": src.Project()}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, cl)
	}
	c.build = buildinfo.Read()
	c.up = desc("governor_up", "1 when the backend answered the scrape within the timeout, 0 when it did not.")
	c.scrapeError = desc("governor_scrape_error", "1 when any backend read of the scrape failed (the backend is down, or some resource could not be read), else 0.")
	c.scrapeDuration = desc("governor_scrape_duration_seconds", "Time the scrape took to read the backend.")
	c.buildInfo = desc("governor_build_info", "1, labelled with the version, VCS revision and Go version of the governor that serves the metrics.",
		"version", "revision", "goversion")
	c.rateAllowed = desc("governor_rate_allowed_total", "Rate-limit reservations granted (kept by the backend: every process counts).", "provider")
	c.rateLimited = desc("governor_rate_limited_total", "Rate-limit reservations denied (kept by the backend: every process counts).", "provider")
	c.shadowDenied = desc("governor_shadow_denied_total", "Reservations a shadow rate limit (providers.NAME.shadow) would have held or refused; none was (kept by the backend: every process counts).", "provider")
	c.rateRemaining = desc("governor_rate_remaining", "Budget left now under the limits of the last reservation: limit requests or tokens; absent where unlimited.", "provider", "limit")
	c.limit = desc("governor_slots_limit", "Slots of the resource: the limit in force, or the configured one before first use.", "resource")
	c.inUse = desc("governor_slots_in_use", "Weight held by unexpired leases, and the with-heavy-lock slot's hold outside governor for a resource bound to it.", "resource")
	c.mkdirOutside = desc("governor_mkdir_slot_held_outside", "1 while the with-heavy-lock slot bound to the resource (mkdir_lock) is held outside governor (the wrapper), else 0; absent for other resources.", "resource")
	c.drift = desc("governor_slots_limit_drift", "A limit some process asked for that differs from the one in force (processes disagree on their configuration); 0 if none.", "resource")
	c.holders = desc("governor_holders", "Leases held.", "resource")
	c.adaptiveLimit = desc("governor_adaptive_limit", "The limit adaptive concurrency (AIMD) holds a provider at, fleet-wide: halved on each rate-limit signal, one more after a run of successes; absent when not adaptive.", "resource")
	c.adaptiveMax = desc("governor_adaptive_limit_max", "The configured maximum (max_concurrency) the adaptive limit runs under; absent when not adaptive.", "resource")
	c.coolOff = desc("governor_cooloff_seconds", "Seconds left of the resource's cool-off after a rate-limit signal (governor backoff, Provider.Do); 0 when none.", "resource")
	c.lastSignal = desc("governor_last_signal_timestamp_seconds", "When the last rate-limit signal for the resource came (Unix seconds); absent when none came.", "resource")
	c.waiters = desc("governor_waiters", "Acquires queued, waiting for slots.", "resource")
	c.oldestLease = desc("governor_oldest_lease_age_seconds", "Age of the oldest held lease; 0 if none.", "resource")
	c.oldestWaiter = desc("governor_oldest_waiter_age_seconds", "How long the longest-queued acquire has waited so far; 0 if none.", "resource")
	c.acquires = desc("governor_acquires_total", "Acquires by outcome, disjoint: acquired (granted, at once, after waiting, or by a takeover), busy (refused in fail mode). Those that had to queue are governor_acquires_queued_total.", "resource", "outcome")
	c.queued = desc("governor_acquires_queued_total", "Acquires that had to queue (each also counted once in governor_acquires_total when granted, and not at all when it gave up).", "resource")
	c.wait = desc("governor_acquire_wait_seconds", "Time from an acquire call to its grant, in every process (kept by the backend; sent by each process at most a second late).", "resource")
	c.hold = desc("governor_hold_seconds", "Time from an acquire call to the release of its lease, in every process (kept by the backend; sent by each process at most a second late; leases that expired, were reclaimed or taken over are not in it).", "resource")
	c.paused = desc("governor_paused", "1 while the resource is paused ('governor pause'): nothing new is granted.", "resource")
	c.expectedWait = desc("governor_expected_wait_seconds", "Expected wait of a newcomer (weight 1, at the tail), from the last holds the backend measured and the weight queued ahead; absent when unknown (no hold history, or paused).", "resource")
	c.releases = desc("governor_releases_total", "Leases released.", "resource")
	c.lost = desc("governor_leases_lost_total", "Leases their holders declared lost (renewal failed before expiry).", "resource")
	c.reclaims = desc("governor_reclaims_total", "Holders removed by someone else: reason expired (lease not renewed in time) or owner_dead (owner process proven dead).", "resource", "reason")
	c.takeovers = desc("governor_takeovers_total", "Holders replaced by a takeover.", "resource")
	c.drifted = desc("governor_drift_events_total", "Acquires that asked for another limit or queue policy than the one in force (the first stored wins), counted as the backend records them: one drift event per new disagreement, seen by this serve from the events the backend keeps.", "resource")
	c.capLeases = desc("governor_capacity_leases", "Live capacity leases of the resource (processes granting locally from a share); absent when none.", "resource")
	c.capSlots = desc("governor_capacity_slots", "Slots of the resource's capacity leases, summed: wanted (in use plus queued) and in_use as their processes reported at their last refresh, held as the backend counts them (the shares, and calls above a share that shrank); absent when none.", "resource", "of")
	c.capGrants = desc("governor_capacity_local_grants_total", "Slots granted locally from the resource's capacity shares, with no acquire of the backend's (not in governor_acquires_total), as each process's refreshes report them; absent when none were and no capacity lease is live.", "resource")
	c.rateShares = desc("governor_rate_shares", "Live rate shares of the provider's requests limit (processes granting requests locally from a share); absent when none.", "provider")
	c.rateShareRate = desc("governor_rate_share_requests", "Requests per the limit's period of the provider's rate shares, summed: wanted as their processes reported at their last refresh, held as the backend granted them; absent when none.", "provider", "of")
	c.rateGrants = desc("governor_rate_local_grants_total", "Requests granted locally from the provider's rate shares, with no reservation of the backend's (not in governor_rate_allowed_total), as each process's refreshes report them; absent when none were and no rate share is live.", "provider")
	c.tokenShares = desc("governor_rate_token_shares", "Live rate shares of the provider's tokens limit (processes taking tokens locally from a share); absent when none.", "provider")
	c.tokenShareRate = desc("governor_rate_share_tokens", "Tokens per the limit's period of the provider's tokens' shares, summed: wanted as their processes reported at their last refresh, held as the backend granted them; absent when none.", "provider", "of")
	c.tokenGrants = desc("governor_rate_local_tokens_total", "Tokens taken locally from the provider's tokens' shares (estimates, and settles above them), as each process's refreshes report them; absent when none were and no tokens' share is live.", "provider")
	return c, nil
}

// Describe sends every Desc the Collector emits.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.scrapeError, c.scrapeDuration, c.buildInfo,
		c.limit, c.inUse, c.mkdirOutside, c.drift, c.holders, c.waiters, c.oldestLease, c.oldestWaiter,
		c.acquires, c.queued, c.wait, c.hold, c.paused, c.expectedWait, c.releases, c.lost, c.reclaims, c.takeovers,
		c.rateAllowed, c.rateLimited, c.rateRemaining, c.adaptiveLimit, c.adaptiveMax, c.coolOff, c.lastSignal, c.shadowDenied, c.drifted,
		c.capLeases, c.capSlots, c.capGrants, c.rateShares, c.rateShareRate, c.rateGrants,
		c.tokenShares, c.tokenShareRate, c.tokenGrants} {
		ch <- d
	}
}

// Collect reads the backend, waiting at most the timeout, and sends what
// it read. governor_up, governor_scrape_error,
// governor_scrape_duration_seconds and governor_build_info are sent
// whatever happened; a resource or rate key that could not be read is
// left out (its counters are never sent lower than they are: Prometheus
// would take that for a reset).
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	s := c.read(ctx)
	c.gauge(ch, c.up, b2f(s.answered))
	c.gauge(ch, c.scrapeError, b2f(s.err != nil))
	c.gauge(ch, c.scrapeDuration, time.Since(start).Seconds())
	c.gauge(ch, c.buildInfo, 1, c.build.Version, c.build.Revision, c.build.GoVersion)
	for _, st := range s.statuses {
		c.emit(ch, st)
		if o, ok := s.outside[st.Key.Resource]; ok {
			c.gauge(ch, c.mkdirOutside, b2f(o), st.Key.Resource)
		}
	}
	for _, rs := range s.rates {
		c.emitRate(ch, rs)
	}
	for r, n := range s.drifts {
		c.counter(ch, c.drifted, float64(n), r)
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
			if s.failed(ctx, fmt.Errorf("metrics: status of %s: %w", n, err)) {
				break
			}
			continue
		}
		st.Key.Resource = n
		if st.Limit == 0 {
			st.Limit = names[n] // never used yet: report the configured limit
		}
		if dir := c.mkdir[n]; dir != "" {
			_, outside, err := mkdirslot.AddHold(&st, dir)
			if err != nil {
				s.failed(ctx, fmt.Errorf("metrics: mkdir slot of %s: %w", n, err))
			} else {
				if s.outside == nil {
					s.outside = map[string]bool{}
				}
				s.outside[n] = outside
			}
		}
		s.statuses = append(s.statuses, st)
	}
	if rs, ok := c.src.(RateSource); ok && ctx.Err() == nil {
		c.readRates(ctx, rs, &s)
	}
	if es, ok := c.src.(EventSource); ok && ctx.Err() == nil {
		read := make([]string, 0, len(s.statuses))
		for _, st := range s.statuses {
			read = append(read, st.Key.Resource)
		}
		s.drifts = c.drifts.read(ctx, es, read, &s)
	}
	return s
}

// readRates reads every rate key into s. A key that fails is left out
// and recorded.
func (c *Collector) readRates(ctx context.Context, src RateSource, s *snapshot) {
	names, err := src.Rates(ctx)
	if err != nil {
		s.failed(ctx, fmt.Errorf("metrics: list rate limits: %w", err))
		return
	}
	for _, n := range slices.Sorted(slices.Values(names)) {
		rs, err := src.RateStatus(ctx, n)
		if err != nil {
			if s.failed(ctx, fmt.Errorf("metrics: rate limit of %s: %w", n, err)) {
				return
			}
			continue
		}
		rs.Key.Resource = n
		s.rates = append(s.rates, rs)
	}
}

// emitRate sends the series of one rate key, labelled by provider: the
// name after "provider:" (the key a Provider gate uses), or the whole
// key for one a caller named otherwise.
func (c *Collector) emitRate(ch chan<- prometheus.Metric, rs governor.RateStatus) {
	p := strings.TrimPrefix(rs.Key.Resource, "provider:")
	c.counter(ch, c.rateAllowed, float64(rs.Allowed), p)
	c.counter(ch, c.rateLimited, float64(rs.Limited), p)
	c.counter(ch, c.shadowDenied, float64(rs.ShadowDenied), p)
	if rs.Requests.Rate > 0 && rs.RemainingRequests >= 0 {
		c.gauge(ch, c.rateRemaining, float64(rs.RemainingRequests), p, "requests")
	}
	if rs.Tokens.Rate > 0 && rs.RemainingTokens >= 0 {
		c.gauge(ch, c.rateRemaining, float64(rs.RemainingTokens), p, "tokens")
	}
	c.emitRateShares(ch, p, rs.Shares, rs.LocalGrants, c.rateShares, c.rateShareRate, c.rateGrants)
	c.emitRateShares(ch, p, rs.TokenShares, rs.TokenLocalGrants, c.tokenShares, c.tokenShareRate, c.tokenGrants)
}

// emitRateShares sends the series of provider p's rate shares of one limit
// (its requests', or its tokens'): their count, wants and rates summed,
// and what was granted locally from them.
func (c *Collector) emitRateShares(ch chan<- prometheus.Metric, p string, hs []capacity.RateHolder, granted int64, count, rate, grants *prometheus.Desc) {
	if len(hs) > 0 || granted > 0 {
		c.counter(ch, grants, float64(granted), p)
	}
	if len(hs) == 0 {
		return
	}
	var want, held int64
	for _, s := range hs {
		want, held = want+s.Want, held+s.Rate
	}
	c.gauge(ch, count, float64(len(hs)), p)
	c.gauge(ch, rate, float64(want), p, "wanted")
	c.gauge(ch, rate, float64(held), p, "held")
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
	c.counter(ch, c.queued, float64(k.Waited), r)
	if h, ok := st.Histograms[histogram.Wait]; ok {
		c.histogram(ch, c.wait, h, histogram.Bounds(histogram.Wait), r)
	}
	if h, ok := st.Histograms[histogram.Hold]; ok {
		c.histogram(ch, c.hold, h, histogram.Bounds(histogram.Hold), r)
	}
	paused := 0.0
	if st.Paused != nil {
		paused = 1
	}
	c.gauge(ch, c.paused, paused, r)
	if e := view.ExpectedWait(st, 0); e.Known {
		c.gauge(ch, c.expectedWait, e.Wait.Seconds(), r)
	}
	c.counter(ch, c.releases, float64(k.Released), r)
	c.counter(ch, c.lost, float64(k.Lost), r)
	c.counter(ch, c.reclaims, float64(k.ReclaimedExpiry), r, "expired")
	c.counter(ch, c.reclaims, float64(k.ReclaimedDead), r, "owner_dead")
	c.counter(ch, c.takeovers, float64(k.Takeovers), r)
	c.emitSignals(ch, st)
	c.emitShares(ch, st)
}

// emitShares sends the sums of st's capacity leases, if it has any, and
// their local grants, if it has any or had some.
func (c *Collector) emitShares(ch chan<- prometheus.Metric, st governor.Status) {
	if len(st.Shares) > 0 || st.Counters.LocalGrants > 0 {
		c.counter(ch, c.capGrants, float64(st.Counters.LocalGrants), st.Key.Resource)
	}
	if len(st.Shares) == 0 {
		return
	}
	var want, held, inUse int
	for _, l := range st.Shares {
		want, held, inUse = want+l.Want, held+l.Held, inUse+l.InUse
	}
	r := st.Key.Resource
	c.gauge(ch, c.capLeases, float64(len(st.Shares)), r)
	c.gauge(ch, c.capSlots, float64(want), r, "wanted")
	c.gauge(ch, c.capSlots, float64(held), r, "held")
	c.gauge(ch, c.capSlots, float64(inUse), r, "in_use")
}

// emitSignals sends what rate-limit signals did to st's resource.
func (c *Collector) emitSignals(ch chan<- prometheus.Metric, st governor.Status) {
	r := st.Key.Resource
	if a := st.Adaptive; a != nil {
		c.gauge(ch, c.adaptiveLimit, float64(a.Limit), r)
		c.gauge(ch, c.adaptiveMax, float64(a.Max), r)
	}
	left := 0.0
	if st.CoolingOff() != "" {
		left = st.CoolOff.Sub(st.Now).Seconds()
	}
	c.gauge(ch, c.coolOff, left, r)
	if !st.LastSignal.IsZero() {
		c.gauge(ch, c.lastSignal, float64(st.LastSignal.UnixMilli())/1000, r)
	}
}

func (c *Collector) gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	send(ch, d, prometheus.GaugeValue, v, labels)
}

func (c *Collector) counter(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	send(ch, d, prometheus.CounterValue, v, labels)
}

// histogram sends a backend-kept histogram as a const histogram with
// cumulative buckets (a resource without observations sends none, which
// keeps a page of many idle resources small).
func (c *Collector) histogram(ch chan<- prometheus.Metric, d *prometheus.Desc, h histogram.Histogram, bounds []time.Duration, labels ...string) {
	buckets := make(map[float64]uint64, len(bounds))
	var cum uint64
	for i, b := range bounds {
		if i < len(h.Counts) {
			cum += uint64(max(h.Counts[i], 0))
		}
		buckets[b.Seconds()] = cum
	}
	count := cum
	if len(h.Counts) > len(bounds) {
		count += uint64(max(h.Counts[len(bounds)], 0))
	}
	m, err := prometheus.NewConstHistogram(d, count, h.Sum.Seconds(), buckets, labels...)
	if err != nil {
		m = prometheus.NewInvalidMetric(d, err)
	}
	ch <- m
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
