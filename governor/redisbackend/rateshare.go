package redisbackend

import (
	"context"
	"fmt"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/capacity"
)

// rateSharesKey is the hash of a rate limit's shares (rate.lua), under
// the hash tag of the resource of the same name.
func rateSharesKey(key governor.Key) string {
	return Prefix + "{" + key.Project + "/" + key.Resource + "}:rshares"
}

// rateShare refreshes or releases the rate share req.Share of req.Key's
// requests limit (governor.RateRequest.Share): rate.lua's share mode,
// the twin of capacity.RateLeases.Refresh.
func (b *Backend) rateShare(ctx context.Context, req governor.RateRequest) (governor.RateResult, error) {
	if b.closed.Load() {
		return governor.RateResult{}, governor.ErrClosed
	}
	a, l := *req.Share, req.Requests
	if err := a.Validate(l.Rate, l.Period); err != nil {
		return governor.RateResult{}, fmt.Errorf("%w: %s: %v", governor.ErrInvalid, req.Key.Resource, err)
	}
	keys := append(RateKeys(req.Key), b.resource(req.Key).keys[1], rateSharesKey(req.Key))
	v, err := rateScript.Run(ctx, b.rdb, keys, "share", l.Rate, l.Period.Microseconds(), l.Burst, a.ID, a.Secret,
		a.TTL.Microseconds(), a.Want, a.Held, a.Token, flag(a.Release)).Slice()
	if err != nil {
		return governor.RateResult{}, wrap("rate share", err)
	}
	b.registerRate(ctx, req.Key)
	r := &reader{op: "rate share", key: req.Key}
	if !r.length(v, 8, false) {
		return governor.RateResult{}, r.err
	}
	ok := r.int(v[0], "the verdict") == 1
	sh := capacity.RateShare{Rate: r.int(v[1], "the rate"), Burst: r.int(v[2], "the burst"), Entitled: r.int(v[3], "the entitlement"),
		Waiting: r.int(v[4], "the waiting flag") == 1, Token: r.int(v[5], "the token")}
	exp, learn := r.int(v[6], "the expiry"), r.int(v[7], "the learning's end")
	if r.err != nil {
		return governor.RateResult{}, r.err
	}
	if !ok {
		return governor.RateResult{}, fmt.Errorf("%w: rate share %s of %s", governor.ErrNotOwner, a.ID, req.Key.Resource)
	}
	if !a.Release {
		sh.Expires = time.UnixMicro(exp)
	}
	if learn > 0 {
		sh.Learning = time.UnixMicro(learn)
	}
	return governor.RateResult{Allowed: true, Share: &sh}, nil
}
