package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/histogram"
)

// DefaultWaitBuckets are the governor_wait_seconds buckets, in seconds:
// those of the backend-kept wait histogram (histogram.Bounds),
// from an uncontended grant (milliseconds) to a queue of long jobs (an
// hour).
var DefaultWaitBuckets = seconds(histogram.Bounds(histogram.Wait))

func seconds(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}

// Instruments measure, inside one library process, how long its acquires
// took to be granted, for the registry that process exposes. Every
// Governor also sends the same measure to the backend, which the
// Collector exports for all processes as governor_acquire_wait_seconds.
// A nil *Instruments does nothing, so callers need no checks.
//
// The series carry the label resource only; to tell projects apart,
// register through prometheus.WrapRegistererWith(prometheus.Labels{
// "project": g.Project()}, reg).
type Instruments struct {
	wait     *prometheus.HistogramVec
	degraded *prometheus.GaugeVec
}

// NewInstruments registers governor_wait_seconds{resource} in reg and
// returns the Instruments that observe it. If reg already holds the same
// histogram (a second call), the registered one is reused. Any other
// registration failure is returned and nothing is registered.
func NewInstruments(reg prometheus.Registerer) (*Instruments, error) {
	wait := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "governor_wait_seconds",
		Help:    "Time from an acquire call to its grant, in the process that waited.",
		Buckets: DefaultWaitBuckets,
	}, []string{"resource"})
	reused := false
	if err := reg.Register(wait); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return nil, err
		}
		existing, ok := are.ExistingCollector.(*prometheus.HistogramVec)
		if !ok {
			return nil, err
		}
		wait, reused = existing, true
	}
	degraded := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "governor_degraded",
		Help: "1 while this process runs a provider's calls without the backend (on_backend_down open or local:N), else 0.",
	}, []string{"resource"})
	if err := reg.Register(degraded); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			if !reused {
				reg.Unregister(wait)
			}
			return nil, err
		}
		existing, ok := are.ExistingCollector.(*prometheus.GaugeVec)
		if !ok {
			if !reused {
				reg.Unregister(wait)
			}
			return nil, err
		}
		degraded = existing
	}
	return &Instruments{wait: wait, degraded: degraded}, nil
}

// SetDegraded sets governor_degraded{resource}: pass it as
// governor.Options.OnDegraded.
func (in *Instruments) SetDegraded(resource string, degraded bool) {
	if in == nil {
		return
	}
	v := 0.0
	if degraded {
		v = 1
	}
	in.degraded.WithLabelValues(resource).Set(v)
}

// ObserveWait records that an acquire of resource was granted after d.
func (in *Instruments) ObserveWait(resource string, d time.Duration) {
	if in == nil {
		return
	}
	in.wait.WithLabelValues(resource).Observe(d.Seconds())
}

// Acquire calls g.Acquire and, when it grants the lease, records how long
// that took. Its results are g.Acquire's, unchanged: a refusal, an error
// or a cancelled wait records nothing (the backend counts refusals and
// queued acquires in governor_acquires_total).
func (in *Instruments) Acquire(ctx context.Context, g *governor.Governor, resource string, o governor.AcquireOptions) (*governor.Lease, error) {
	start := time.Now()
	l, err := g.Acquire(ctx, resource, o)
	if err == nil {
		in.ObserveWait(resource, time.Since(start))
	}
	return l, err
}
