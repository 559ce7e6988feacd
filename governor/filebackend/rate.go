package filebackend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/gcra"
)

// ratePrefix names the pseudo-resource that holds a rate limit's state.
const ratePrefix = "{rate}"

var _ governor.RateBackend = (*Backend)(nil)

func limit(l governor.RateLimit) gcra.Limit {
	return gcra.Limit{Rate: l.Rate, Period: int64(l.Period), Burst: l.Burst}
}

// RateReserve implements governor.RateBackend, on the machine's
// monotonic clock shared by every process.
func (b *Backend) RateReserve(ctx context.Context, req governor.RateRequest) (governor.RateResult, error) {
	if b.isClosed() {
		return governor.RateResult{}, governor.ErrClosed
	}
	t, err := b.begin(ctx, governor.Key{Project: req.Key.Project, Resource: ratePrefix + req.Key.Resource}, true)
	if err != nil {
		return governor.RateResult{}, err
	}
	defer t.end()
	st, now := t.st, t.now.boot
	rq := gcra.Reserve(limit(req.Requests), st.RateRequests, now, req.NRequests)
	tk := gcra.Reserve(limit(req.Tokens), st.RateTokens, now, req.NTokens)
	if rq.RetryAfter < 0 || tk.RetryAfter < 0 {
		return governor.RateResult{}, fmt.Errorf("%w: %d requests / %d tokens for %s exceed the burst of its rate limits",
			governor.ErrTooHeavy, req.NRequests, req.NTokens, req.Key.Resource)
	}
	res := governor.RateResult{Allowed: rq.Allowed && tk.Allowed, RemainingRequests: rq.Remaining, RemainingTokens: tk.Remaining}
	if res.Allowed {
		st.RateRequests, st.RateTokens = rq.TAT, tk.TAT
		st.RateAllowed++
	} else {
		res.RetryAfter = time.Duration(max(rq.RetryAfter, tk.RetryAfter))
		res.RemainingRequests, res.RemainingTokens = 0, 0
		st.RateLimited++
	}
	t.dirty = true
	return res, t.commit()
}

// RateAdjust implements governor.RateBackend.
func (b *Backend) RateAdjust(ctx context.Context, key governor.Key, tokens governor.RateLimit, delta int64) error {
	if b.isClosed() {
		return governor.ErrClosed
	}
	t, err := b.begin(ctx, governor.Key{Project: key.Project, Resource: ratePrefix + key.Resource}, true)
	if err != nil {
		return err
	}
	defer t.end()
	t.st.RateTokens = gcra.Adjust(limit(tokens), t.st.RateTokens, t.now.boot, delta)
	t.dirty = true
	return t.commit()
}

// RateLimited returns how many reservations of key were denied.
func (b *Backend) RateLimited(ctx context.Context, key governor.Key) (int64, error) {
	if b.isClosed() {
		return 0, governor.ErrClosed
	}
	k := governor.Key{Project: key.Project, Resource: ratePrefix + key.Resource}
	dir, err := b.openResource(k.Project, k.Resource, false)
	if errors.Is(err, errNoState) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer unix.Close(dir)
	st, err := b.load(dir, k)
	if err != nil {
		return 0, err
	}
	return st.RateLimited, nil
}
