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
// bucket per resource named and dimension (its requests, its tokens)
// whose limit is reserved, opened by its first request and closed by
// Close, which gives its share back.
type capRates = openings[RateLimit, *capgate.Bucket]

// leasedRate tells whether req's requests and tokens are taken from its
// resource's rate shares: a requests or tokens limit, and nothing a
// share cannot grant (Shadow, a budget sent with it) — those stay
// central.
func (c *capShares) leasedRate(req RateRequest) (capacity.Config, bool) {
	rc, ok := c.cfg[req.Key.Resource]
	return rc, ok && (req.Requests.Rate > 0 || req.Tokens.Rate > 0) && !req.Shadow && req.Budget == nil && req.Share == nil
}

// rateDim is the limit of req's requests, or of its tokens, the count
// asked, and the name of its bucket.
func rateDim(req RateRequest, tokens bool) (l RateLimit, n int64, name string) {
	if tokens {
		return req.Tokens, req.NTokens, req.Key.Resource + " tokens"
	}
	return req.Requests, req.NRequests, req.Key.Resource
}

// bucket returns the bucket of req's resource's requests (tokens: its
// tokens), opening it (its first refresh, on a context of its own) on
// first use.
func (c *capShares) bucket(ctx context.Context, g *Governor, req RateRequest, rc capacity.Config, tokens bool) (*capgate.Bucket, error) {
	l, _, name := rateDim(req, tokens)
	s, err := c.rates.get(ctx, name, l, func() (*capgate.Bucket, error) { return g.openRateShare(req, rc, tokens) })
	if err != nil {
		return nil, err
	}
	if s.limit != l {
		return nil, invalid("%s's %s are granted from a rate share of %d per %v (burst %d); asked: %d per %v (burst %d); allowed: the same limit in every request of a Governor",
			req.Key.Resource, capacity.RateAsk{Tokens: tokens}.Unit(), s.limit.Rate, s.limit.Period, s.limit.Burst, l.Rate, l.Period, l.Burst)
	}
	return s.v, nil
}

// openRateShare opens the rate share of req's resource's requests
// (tokens: its tokens).
func (g *Governor) openRateShare(req RateRequest, rc capacity.Config, tokens bool) (*capgate.Bucket, error) {
	l, _, _ := rateDim(req, tokens)
	if err := l.validate(capacity.RateAsk{Tokens: tokens}.Unit()); err != nil {
		return nil, err
	}
	secret, id := newSecret()
	send := func(ctx context.Context, a capacity.RateAsk) (capacity.RateShare, error) {
		a.ID, a.Secret, a.TTL, a.Tokens = id, secret, rc.Lease, tokens
		res, err := g.rates.RateReserve(ctx, RateRequest{Key: req.Key, Requests: req.Requests, Tokens: req.Tokens, Share: &a, Declaration: g.decl})
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
	return capgate.NewBucket(ctx, capgate.BucketOptions{Limit: l.Rate, Period: l.Period, Lease: rc.Lease,
		Refresh: rc.Refresh, Margin: rc.Margin(), First: true,
		Fatal: func(err error) bool { return errors.Is(err, ErrInvalid) || errors.Is(err, ErrNotOwner) }}, send)
}

// coolRate stops resource's rate shares (its requests', its tokens'),
// those this Governor has open, from granting at once
// (capgate.Bucket.Cool): a rate-limit signal this process saw. The
// returned func, called once the cool-off is recorded, refreshes the
// shares, which the cool-off shrinks to 0.
func (c *capShares) coolRate(resource string) (done func()) {
	var dones []func()
	for _, tokens := range []bool{false, true} {
		_, _, name := rateDim(RateRequest{Key: Key{Resource: resource}}, tokens)
		if b, ok := c.rates.opened(name); ok {
			dones = append(dones, b.Cool())
		}
	}
	return func() {
		for _, d := range dones {
			d()
		}
	}
}

// takeLocalRate takes req's requests, then its tokens (the estimate),
// from its resource's rate shares, with no round trip: waiting for them
// (Wait), or refused at once with a *RateBusyError when a bucket is
// empty; what was taken is given back when the other is not.
func (g *Governor) takeLocalRate(ctx context.Context, req RateRequest, rc capacity.Config, mode Mode) error {
	wait, cancel := context.WithCancel(ctx)
	defer context.AfterFunc(g.closing, cancel)()
	defer cancel()
	var took *capgate.Bucket
	for _, tokens := range []bool{false, true} {
		l, n, _ := rateDim(req, tokens)
		if l.Rate <= 0 {
			continue
		}
		b, err := g.caps.bucket(ctx, g, req, rc, tokens)
		var retry time.Duration
		if err == nil {
			retry, err = b.Take(wait, n, mode != Wait)
		}
		if err != nil {
			if took != nil {
				took.Settle(-req.NRequests)
			}
			return g.localRateErr(ctx, req, retry, err)
		}
		took = b
	}
	return nil
}

// localRateErr is the error of a take of req from a bucket that failed
// with err (retry: when its tokens come).
func (g *Governor) localRateErr(ctx context.Context, req RateRequest, retry time.Duration, err error) error {
	switch {
	case errors.Is(err, capgate.ErrFull):
		return &RateBusyError{Key: req.Key, Result: RateResult{RetryAfter: max(retry, time.Millisecond)}}
	case errors.Is(err, capgate.ErrClosed), err != nil && g.closing.Err() != nil && ctx.Err() == nil:
		return ErrClosed
	}
	return err
}

// settleLocalTokens settles a call's tokens (delta beyond its estimate)
// into its provider's tokens bucket when req's tokens are taken from a
// rate share, and tells whether they are: their settle is then local,
// never the backend's.
func (g *Governor) settleLocalTokens(req RateRequest, delta int64) bool {
	if _, ok := g.caps.leasedRate(req); !ok || req.Tokens.Rate <= 0 {
		return false
	}
	if s, ok := g.caps.rates.opened(req.Key.Resource + " tokens"); ok {
		s.Settle(delta)
	}
	return true
}
