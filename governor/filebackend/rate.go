package filebackend

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/internal/gcra"
)

// ratePrefix names the pseudo-resource that holds a rate limit's state.
const ratePrefix = "{rate}"

func limit(l governor.RateLimit) gcra.Limit {
	return gcra.Limit{Rate: l.Rate, Period: int64(l.Period), Burst: l.Burst}
}

// RateReserve implements governor.RateBackend, on the machine's
// monotonic clock shared by every process.
//
// A budget reservation sent with it (req.Budget) is made after it,
// under its own lock: nothing here costs a round trip.
func (b *Backend) RateReserve(ctx context.Context, req governor.RateRequest) (governor.RateResult, error) {
	if req.Share != nil {
		return b.rateShare(ctx, req)
	}
	res, err := within(ctx, b, rateKey(req.Key), section{create: true}, func(t *tx) (governor.RateResult, error) {
		return b.reserve(t, req)
	})
	if req.Budget != nil {
		res.Budget, res.BudgetErr = b.BudgetReserve(ctx, *req.Budget)
	}
	return res, err
}

// rateKey is the pseudo-resource that holds key's rate limit.
func rateKey(key governor.Key) governor.Key {
	return governor.Key{Project: key.Project, Resource: ratePrefix + key.Resource}
}

func (b *Backend) reserve(t *tx, req governor.RateRequest) (governor.RateResult, error) {
	st, now := t.st, t.now.boot
	// A cool-off of the resource of the same name denies without
	// charging anything.
	if end, err := b.coolOffOf(req.Key, t.now); err != nil {
		return governor.RateResult{}, err
	} else if !end.IsZero() {
		st.RateLimited++
		t.dirty = true
		return governor.RateResult{RetryAfter: end.Sub(t.now.wall), CoolOff: end}, t.commit()
	}
	// Rate shares (rateshare.go) hold the central path to what they leave.
	central, tokens, retry, ok := centralLimits(st, req, now)
	if !ok {
		t.dirty = true
		if req.Shadow {
			st.RateShadow++
			return governor.RateResult{Allowed: true, ShadowDenied: true, RetryAfter: retry, RemainingTokens: -1}, t.commit()
		}
		st.RateLimited++
		return governor.RateResult{RetryAfter: retry, RemainingTokens: -1}, t.commit()
	}
	rq := gcra.Reserve(limit(central), st.RateRequests, now, req.NRequests)
	tk := gcra.Reserve(limit(tokens), st.RateTokens, now, req.NTokens)
	// Shadow (req.Shadow): a denial is counted, never enforced, and
	// charges nothing; the twin of rate.lua's shadow_denied.
	if (rq.RetryAfter < 0 || tk.RetryAfter < 0) && req.Shadow {
		st.RateShadow++
		t.dirty = true
		return governor.RateResult{Allowed: true, ShadowDenied: true, RemainingRequests: rq.Remaining, RemainingTokens: tk.Remaining}, t.commit()
	}
	if rq.RetryAfter < 0 || tk.RetryAfter < 0 {
		return governor.RateResult{}, fmt.Errorf("%w: %d requests / %d tokens for %s exceed the burst of its rate limits",
			governor.ErrTooHeavy, req.NRequests, req.NTokens, req.Key.Resource)
	}
	// The learned budget (RateAdjustment.Learned): the stricter of it and the limits
	// decides; the twin of rate.lua's.
	lrq := learned(&rq, st.LearnedRequests, st.LearnedRequestsUntil, now, req.NRequests)
	ltk := learned(&tk, st.LearnedTokens, st.LearnedTokensUntil, now, req.NTokens)
	res := governor.RateResult{Allowed: rq.Allowed && tk.Allowed, RemainingRequests: rq.Remaining, RemainingTokens: tk.Remaining}
	st.RateRequestsLimit, st.RateTokensLimit = req.Requests, req.Tokens
	if res.Allowed {
		lrq(&st.LearnedRequests)
		ltk(&st.LearnedTokens)
		st.RateRequests, st.RateTokens = rq.TAT, tk.TAT
		st.RateAllowed++
	} else if req.Shadow {
		res.Allowed, res.ShadowDenied = true, true
		res.RetryAfter = time.Duration(max(rq.RetryAfter, tk.RetryAfter))
		st.RateShadow++
	} else {
		res.RetryAfter = time.Duration(max(rq.RetryAfter, tk.RetryAfter))
		st.RateLimited++
	}
	t.dirty = true
	return res, t.commit()
}

// RateAdjust implements governor.RateBackend.
func (b *Backend) RateAdjust(ctx context.Context, a governor.RateAdjustment) error {
	if a.Learned != nil {
		if err := b.rateLearn(ctx, a.Key, *a.Learned); err != nil || a.Delta == 0 {
			return err
		}
	}
	return b.do(ctx, rateKey(a.Key), section{create: true}, func(t *tx) error {
		t.st.RateTokens = gcra.Adjust(limit(settleLimit(t.st, a.Tokens, t.now.boot)), t.st.RateTokens, t.now.boot, a.Delta)
		t.dirty = true
		return t.commit()
	})
}

// RateStatus implements governor.RateBackend. It reads without locking:
// the state file is replaced atomically.
func (b *Backend) RateStatus(ctx context.Context, key governor.Key) (governor.RateStatus, error) {
	st, err := b.read(ctx, rateKey(key))
	now := b.now()
	rs := governor.RateStatus{Key: key, Now: now.wall, RemainingRequests: -1, RemainingTokens: -1}
	if err != nil {
		return governor.RateStatus{}, err
	}
	if st == nil {
		return rs, nil
	}
	rs.Requests, rs.Tokens = st.RateRequestsLimit, st.RateTokensLimit
	rs.Allowed, rs.Limited, rs.ShadowDenied = st.RateAllowed, st.RateLimited, st.RateShadow
	rs.RemainingRequests = remaining(rs.Requests, st.RateRequests, now.boot)
	rs.RemainingTokens = remaining(rs.Tokens, st.RateTokens, now.boot)
	if r := st.RateShares; r != nil {
		rs.Shares, rs.LocalGrants = r.Holders(now.boot, now.at), r.Granted
		if now.boot < r.Learn {
			rs.Learning = now.at(r.Learn)
		}
	}
	if r := st.TokenShares; r != nil {
		rs.TokenShares, rs.TokenLocalGrants = r.Holders(now.boot, now.at), r.Granted
		if now.boot < r.Learn && now.at(r.Learn).After(rs.Learning) {
			rs.Learning = now.at(r.Learn)
		}
	}
	return rs, nil
}

// remaining is the budget left at now: what a reservation of nothing
// would leave.
func remaining(l governor.RateLimit, tat, now int64) int64 {
	d := gcra.Reserve(limit(l), tat, now, 0)
	if !d.Allowed {
		return 0
	}
	return d.Remaining
}

// Rates implements governor.RateBackend.
func (b *Backend) Rates(ctx context.Context, project string) ([]string, error) {
	all, err := b.list(ctx, project)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, n := range all {
		if r, ok := strings.CutPrefix(n, ratePrefix); ok {
			names = append(names, r)
		}
	}
	return names, nil
}

// learned applies a learned budget of left until until (boot clock) to
// d, the configured limit's decision for cost at now: a budget in force
// that does not cover cost denies until then, and the remaining is the
// smaller. It returns what takes the cost off the budget once the
// reservation is granted.
func learned(d *gcra.Decision, left, until, now, cost int64) func(*int64) {
	if until <= now {
		return func(*int64) {}
	}
	rem := left - cost
	if rem < 0 {
		d.Allowed, d.RetryAfter, d.Remaining = false, max(d.RetryAfter, until-now), 0
		return func(*int64) {}
	}
	if d.Remaining < 0 || rem < d.Remaining {
		d.Remaining = rem
	}
	return func(b *int64) { *b = rem }
}

// rateLearn implements RateAdjust's learned budget (RateAdjustment.Learned).
func (b *Backend) rateLearn(ctx context.Context, key governor.Key, lb governor.LearnedBudget) error {
	return b.do(ctx, rateKey(key), section{create: true}, func(t *tx) error {
		st := t.st
		if lb.RemainingRequests >= 0 && lb.ResetRequests > 0 {
			st.LearnedRequests, st.LearnedRequestsUntil = lb.RemainingRequests, t.now.boot+int64(lb.ResetRequests)
		}
		if lb.RemainingTokens >= 0 && lb.ResetTokens > 0 {
			st.LearnedTokens, st.LearnedTokensUntil = lb.RemainingTokens, t.now.boot+int64(lb.ResetTokens)
		}
		t.dirty = true
		return t.commit()
	})
}
