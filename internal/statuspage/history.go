package statuspage

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/histogram"
	"github.com/governor-dev/governor/internal/view"
)

// History is what serve's own polls of the backend (every PollEvery)
// saw of each resource over the last Window, in Step buckets: the most
// weight in use, the most waiters, whether a cool-off was in force; and
// the latest wait-time distribution the backend keeps. Its memory is
// bounded: at most MaxTracked resources, Window/Step buckets each.
type History struct {
	limits map[string]int

	mu  sync.Mutex
	res map[string]*track
}

const (
	// PollEvery is how often serve reads the backend for the history.
	PollEvery = time.Second
	// Step is the width of one bucket of the history.
	Step = 10 * time.Second
	// Window is how far back the history goes.
	Window = time.Hour
	// MaxTracked bounds the resources a History keeps; more are left out
	// (their cards show no chart) until some leave.
	MaxTracked = 500
)

// track is one resource's history.
type track struct {
	points []Point // oldest first, at most Window/Step
	wait   *WaitDistribution
	seen   time.Time // the last poll that read it
}

// Point is one bucket of a resource's history.
type Point struct {
	At      time.Time `json:"at"` // the bucket's start
	Used    int       `json:"used"`
	Limit   int       `json:"limit"`
	Waiters int       `json:"waiters"`
	CoolOff bool      `json:"cool_off"`
}

// WaitDistribution is the backend's histogram of how long acquires
// waited (governor_acquire_wait_seconds): Counts per bucket of
// BoundsSeconds, then one beyond the last bound.
type WaitDistribution struct {
	BoundsSeconds []float64 `json:"bounds_seconds"`
	Counts        []int64   `json:"counts"`
	Count         int64     `json:"count"`
	SumSeconds    float64   `json:"sum_seconds"`
}

// HistoryJSON is what GET /api/v1/history serves.
type HistoryJSON struct {
	StepSeconds   float64           `json:"step_seconds"`
	WindowSeconds float64           `json:"window_seconds"`
	Resources     []ResourceHistory `json:"resources"`
}

// ResourceHistory is one resource in HistoryJSON.
type ResourceHistory struct {
	Resource string            `json:"resource"`
	Points   []Point           `json:"points"`
	Wait     *WaitDistribution `json:"wait,omitempty"`
}

// NewHistory returns an empty History; limits are the configured ones
// (view.Statuses).
func NewHistory(limits map[string]int) *History {
	return &History{limits: limits, res: map[string]*track{}}
}

// Run polls src every PollEvery until ctx ends, each read bounded by
// timeout; a poll that fails records nothing.
func (h *History) Run(ctx context.Context, src view.StatusSource, timeout time.Duration) {
	t := time.NewTicker(PollEvery)
	defer t.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, timeout)
		sts, _ := view.Statuses(pctx, src, nil, h.limits) // an unreadable resource is left out
		cancel()
		h.record(time.Now(), sts)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// record adds one poll's statuses, read at now.
func (h *History) record(now time.Time, sts []governor.Status) {
	h.mu.Lock()
	defer h.mu.Unlock()
	at := now.Truncate(Step)
	for _, st := range sts {
		name := st.Key.Resource
		tr := h.res[name]
		if tr == nil {
			if len(h.res) >= MaxTracked {
				continue
			}
			tr = &track{}
			h.res[name] = tr
		}
		tr.seen = now
		p := Point{At: at, Used: st.Used, Limit: st.Limit, Waiters: len(st.Waiters), CoolOff: st.CoolingOff() != ""}
		if n := len(tr.points); n > 0 && tr.points[n-1].At.Equal(at) {
			last := &tr.points[n-1]
			last.Used, last.Limit, last.Waiters = max(last.Used, p.Used), p.Limit, max(last.Waiters, p.Waiters)
			last.CoolOff = last.CoolOff || p.CoolOff
		} else {
			tr.points = append(tr.points, p)
		}
		tr.points = trim(tr.points, at.Add(-Window))
		tr.wait = waitDistribution(st)
	}
	for name, tr := range h.res {
		if now.Sub(tr.seen) > Window {
			delete(h.res, name) // forgotten, or gone from the backend
		}
	}
}

// trim drops the points before from, keeping the slice's memory bounded.
func trim(ps []Point, from time.Time) []Point {
	i := 0
	for i < len(ps) && ps[i].At.Before(from) {
		i++
	}
	if i == 0 {
		return ps
	}
	return append(ps[:0], ps[i:]...)
}

func waitDistribution(st governor.Status) *WaitDistribution {
	hg, ok := st.Histograms[histogram.Wait]
	if !ok {
		return nil
	}
	w := &WaitDistribution{Counts: slices.Clone(hg.Counts), Count: hg.Count(), SumSeconds: hg.Sum.Seconds()}
	for _, b := range histogram.Bounds(histogram.Wait) {
		w.BoundsSeconds = append(w.BoundsSeconds, b.Seconds())
	}
	return w
}

// read is the history of the resources named (all kept when none is).
func (h *History) read(names []string) HistoryJSON {
	out := HistoryJSON{StepSeconds: Step.Seconds(), WindowSeconds: Window.Seconds(), Resources: []ResourceHistory{}}
	if h == nil {
		return out
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(names) == 0 {
		for n := range h.res {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range slices.Compact(names) {
		if tr := h.res[n]; tr != nil {
			out.Resources = append(out.Resources, ResourceHistory{Resource: n, Points: slices.Clone(tr.points), Wait: tr.wait})
		}
	}
	return out
}

// history serves GET /api/v1/history[?resource=R...].
func (p *Page) history(w http.ResponseWriter, r *http.Request) {
	writeAPI(w, http.StatusOK, p.hist.read(r.URL.Query()["resource"]))
}
