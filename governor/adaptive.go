package governor

import (
	"context"
)

// Adaptive makes a provider's concurrency adaptive (AIMD), for the whole
// fleet: the limit in force moves between Min and the configured
// MaxConcurrency, halved on each rate-limit signal and one more after
// IncreaseEvery successes in a row (counted over every process).
type Adaptive struct {
	Min           int // at least 1; default 1
	IncreaseEvery int // successes before one more slot; default DefaultIncreaseEvery
}

// DefaultIncreaseEvery is Adaptive.IncreaseEvery when zero.
const DefaultIncreaseEvery = 20

// AdaptRequest is one AIMD step of a resource: a rate-limit signal
// (Signal) or one success.
type AdaptRequest struct {
	Max, Min, IncreaseEvery int
	Signal                  bool
}

// AdaptiveState is a resource's adaptive concurrency as the backend
// keeps it.
type AdaptiveState struct {
	Limit     int `json:"limit"`     // the limit AIMD holds: the limit in force unless one is set live
	Max       int `json:"max"`       // the configured maximum it runs under
	Successes int `json:"successes"` // successes since the last change
}

// Request checks a against the configured maximum (the max
// concurrency) and returns the request of one step, defaults filled; bad
// values are ErrInvalid naming them and what is allowed.
func (a Adaptive) Request(maxConcurrency int) (AdaptRequest, error) {
	r := AdaptRequest{Max: maxConcurrency, Min: a.Min, IncreaseEvery: a.IncreaseEvery}
	if r.Min == 0 {
		r.Min = 1
	}
	if r.IncreaseEvery == 0 {
		r.IncreaseEvery = DefaultIncreaseEvery
	}
	switch {
	case maxConcurrency < 1:
		return r, invalid("adaptive concurrency without a max concurrency; give MaxConcurrency (providers.NAME.max_concurrency)")
	case r.Min < 1 || r.Min > maxConcurrency:
		return r, invalid("adaptive min %d; allowed: 1 to the max concurrency %d", a.Min, maxConcurrency)
	case r.IncreaseEvery < 1 || r.IncreaseEvery > 1_000_000:
		return r, invalid("adaptive increase_every %d; allowed: 1 to 1000000 successes", a.IncreaseEvery)
	}
	return r, nil
}

// adapt takes one AIMD step of resource: a signal, or a success.
func (g *Governor) adapt(ctx context.Context, resource string, req AdaptRequest, signal bool) error {
	req.Signal = signal
	_, err := g.b.Adapt(ctx, Key{g.project, resource}, req)
	return err
}
