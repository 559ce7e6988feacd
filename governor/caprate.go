package governor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/governor-dev/governor/governor/capacity"
	"github.com/governor-dev/governor/governor/internal/capgate"
)

// capRates are the rate shares of a Governor (Options.Capacity): one
// bucket per resource named whose requests limit is reserved, opened by
// its first request and closed by Close, which gives its share back.
type capRates = openings[RateLimit, *capgate.Bucket]

// leasedRate tells whether req's requests are taken from its resource's
// rate share: a requests limit, and nothing a share cannot grant (a
// tokens limit, Shadow, a budget sent with it) — those stay central.
func (c *capShares) leasedRate(req RateRequest) (capacity.Config, bool) {
	rc, ok := c.cfg[req.Key.Resource]
	return rc, ok && req.Requests.Rate > 0 && req.Tokens.Rate == 0 && !req.Shadow && req.Budget == nil && req.Share == nil
}

// bucket returns the bucket of req's resource, opening it (its first
// refresh, on a context of its own) on first use.
func (c *capShares) bucket(ctx context.Context, g *Governor, req RateRequest, rc capacity.Config) (*capgate.Bucket, error) {
	s, err := c.rates.get(ctx, req.Key.Resource, req.Requests, func() (*capgate.Bucket, error) { return g.openRateShare(req, rc) })
	if err != nil {
		return nil, err
	}
	if s.limit != req.Requests {
		return nil, invalid("%s's requests are granted from a rate share of %d per %v (burst %d); asked: %d per %v (burst %d); allowed: the same limit in every request of a Governor",
			req.Key.Resource, s.limit.Rate, s.limit.Period, s.limit.Burst, req.Requests.Rate, req.Requests.Period, req.Requests.Burst)
	}
	return s.v, nil
}

// openRateShare opens the rate share of req's resource.
func (g *Governor) openRateShare(req RateRequest, rc capacity.Config) (*capgate.Bucket, error) {
	if err := req.Requests.validate("requests"); err != nil {
		return nil, err
	}
	secret, id := newSecret()
	send := func(ctx context.Context, a capacity.RateAsk) (capacity.RateShare, error) {
		a.ID, a.Secret, a.TTL = id, secret, rc.Lease
		res, err := g.rates.RateReserve(ctx, RateRequest{Key: req.Key, Requests: req.Requests, Share: &a, Declaration: g.decl})
		switch {
		case err != nil:
			return capacity.RateShare{}, err
		case res.Share == nil:
			return capacity.RateShare{}, fmt.Errorf("%w: %s answered a rate share without a share", ErrBackend, req.Key)
		}
		return *res.Share, nil
	}
	ctx, cancel := context.WithTimeout(g.closing, rc.Refresh)
	defer cancel()
	return capgate.NewBucket(ctx, capgate.BucketOptions{Limit: req.Requests.Rate, Period: req.Requests.Period, Lease: rc.Lease,
		Refresh: rc.Refresh, Margin: rc.Margin(), First: true,
		Fatal: func(err error) bool { return errors.Is(err, ErrInvalid) || errors.Is(err, ErrNotOwner) }}, send)
}

// coolRate stops resource's rate share, if this Governor has one open,
// from granting at once (capgate.Bucket.Cool): a rate-limit signal this
// process saw. The returned func, called once the cool-off is recorded,
// refreshes the share, which the cool-off shrinks to 0.
func (c *capShares) coolRate(resource string) (done func()) {
	if b, ok := c.rates.opened(resource); ok {
		return b.Cool()
	}
	return func() {}
}

// takeLocalRate takes req's requests from its resource's rate share, with
// no round trip: waiting for its tokens (Wait), or refused at once with
// a *RateBusyError when the bucket is empty.
func (g *Governor) takeLocalRate(ctx context.Context, req RateRequest, rc capacity.Config, mode Mode) error {
	b, err := g.caps.bucket(ctx, g, req, rc)
	if err != nil {
		return err
	}
	wait, cancel := context.WithCancel(ctx)
	defer context.AfterFunc(g.closing, cancel)()
	defer cancel()
	retry, err := b.Take(wait, req.NRequests, mode != Wait)
	switch {
	case errors.Is(err, capgate.ErrFull):
		return &RateBusyError{Key: req.Key, Result: RateResult{RetryAfter: max(retry, time.Millisecond)}}
	case errors.Is(err, capgate.ErrClosed), err != nil && g.closing.Err() != nil && ctx.Err() == nil:
		return ErrClosed
	}
	return err
}
