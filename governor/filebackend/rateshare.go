package filebackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/capacity"
	"github.com/governor-dev/governor/governor/internal/backendkit"
)

// rateShare refreshes or releases the rate share req.Share of req.Key's
// requests limit, or its tokens limit (capacity.RateAsk.Tokens;
// governor.RateRequest.Share, capacity.RateLeases): the twin of
// rate.lua's share mode.
func (b *Backend) rateShare(ctx context.Context, req governor.RateRequest) (governor.RateResult, error) {
	a, l := *req.Share, req.Requests
	if a.Tokens {
		l = req.Tokens
	}
	if err := a.Validate(l.Rate, l.Period); err != nil {
		return governor.RateResult{}, fmt.Errorf("%w: %s: %v", governor.ErrInvalid, req.Key.Resource, err)
	}
	owner, err := ownerJSON(req.Declaration)
	if err != nil {
		return governor.RateResult{}, err
	}
	return within(ctx, b, rateKey(req.Key), section{create: true}, func(t *tx) (governor.RateResult, error) {
		st, now := t.st, t.now.boot
		shares := &st.RateShares
		if a.Tokens {
			shares = &st.TokenShares
		}
		if *shares == nil {
			*shares = &capacity.RateLeases{}
		}
		rs := *shares
		t.dirty = true
		var sh capacity.RateShare
		var err error
		if a.Release {
			sh, err = capacity.RateShare{Token: rs.Born}, rs.Release(a, now)
		} else {
			// A cool-off of the resource of the same name (as reserve's)
			// shrinks the share to 0.
			end, cerr := b.coolOffOf(req.Key, t.now)
			if cerr != nil {
				return governor.RateResult{}, cerr
			}
			sh, err = rs.Refresh(a, now, int64(a.TTL), l.Rate, l.Burst, !end.IsZero())
			// Short of its part: the shares of processes proven dead on
			// this machine go at once, and the refresh is made again.
			if err == nil && sh.Rate < sh.Entitled && rs.Reap(a.ID, backendkit.OwnerDead) {
				sh, err = rs.Refresh(a, now, int64(a.TTL), l.Rate, l.Burst, !end.IsZero())
			}
			if err == nil {
				rs.Own(a.ID, owner)
			}
		}
		if errors.Is(err, capacity.ErrRateOwner) {
			return governor.RateResult{}, t.commitThen(fmt.Errorf("%w: rate share %s of %s", governor.ErrNotOwner, a.ID, req.Key.Resource))
		}
		if a.Release {
			return governor.RateResult{Allowed: true, Share: &sh}, t.commit()
		}
		sh.Expires = t.now.at(now + int64(a.TTL))
		if now < rs.Learn {
			sh.Learning = t.now.at(rs.Learn)
		}
		return governor.RateResult{Allowed: true, Share: &sh}, t.commit()
	})
}

// ownerJSON is d as a rate share keeps it (capacity.RateLease.Owner):
// "" when it names no process.
func ownerJSON(d governor.Declaration) (string, error) {
	if d.PID == 0 {
		return "", nil
	}
	j, err := json.Marshal(d)
	return string(j), err
}

// centralLimit is l held to what shares leave at now for a reservation
// of cost (capacity.RateLeases.Central); ok false: denied, to retry
// after retry.
func centralLimit(shares *capacity.RateLeases, l governor.RateLimit, now, cost int64) (_ governor.RateLimit, retry time.Duration, ok bool) {
	if shares == nil || l.Rate <= 0 {
		return l, 0, true
	}
	rate, burst, r, ok := shares.Central(now, int64(l.Period), l.Rate, l.Burst, cost)
	if !ok {
		shares.Denied(now)
		return l, time.Duration(r), false
	}
	return governor.RateLimit{Rate: rate, Period: l.Period, Burst: burst}, 0, true
}

// centralLimits is req's requests and tokens limits held to what st's
// shares of each leave (centralLimit); ok false: denied, to retry after
// retry.
func centralLimits(st *state, req governor.RateRequest, now int64) (rq, tk governor.RateLimit, retry time.Duration, ok bool) {
	rq, retry, ok = centralLimit(st.RateShares, req.Requests, now, req.NRequests)
	if !ok {
		return rq, tk, retry, false
	}
	tk, retry, ok = centralLimit(st.TokenShares, req.Tokens, now, req.NTokens)
	return rq, tk, retry, ok
}

// settleLimit is the tokens limit l at the rate a settle of the central
// path is charged at now (capacity.RateLeases.SettleRate).
func settleLimit(st *state, l governor.RateLimit, now int64) governor.RateLimit {
	if st.TokenShares != nil && l.Rate > 0 {
		l.Rate = st.TokenShares.SettleRate(now, l.Rate)
	}
	return l
}
