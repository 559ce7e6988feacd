package redisbackend

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/capacity"
	"github.com/governor-dev/governor/governor/internal/backendkit"
)

// rateSharesKey is the hash of a rate limit's shares (rate.lua), under
// the hash tag of the resource of the same name.
func rateSharesKey(key governor.Key) string {
	return Prefix + "{" + key.Project + "/" + key.Resource + "}:rshares"
}

// tokenSharesKey is the hash of a rate limit's shares of its tokens
// (rate.lua), under the hash tag of the resource of the same name.
func tokenSharesKey(key governor.Key) string {
	return Prefix + "{" + key.Project + "/" + key.Resource + "}:tshares"
}

// rateCallKeys are rate.lua's keys for a reservation or an adjustment
// of key: its state and counters, the resource of the same name (its
// cool-off), the shares of its requests and of its tokens.
func (b *Backend) rateCallKeys(key governor.Key) []string {
	return append(RateKeys(key), b.resource(key).keys[1], rateSharesKey(key), tokenSharesKey(key))
}

// rateShare refreshes or releases the rate share req.Share of req.Key's
// requests limit, or its tokens limit (capacity.RateAsk.Tokens;
// governor.RateRequest.Share): rate.lua's share mode, the twin of
// capacity.RateLeases.Refresh. A refresh short of its part first reaps
// the shares whose owner is proven dead on this machine, and then
// refreshes again, as acquireCapacity does for slots.
func (b *Backend) rateShare(ctx context.Context, req governor.RateRequest) (governor.RateResult, error) {
	if b.closed.Load() {
		return governor.RateResult{}, governor.ErrClosed
	}
	a, l, hash := *req.Share, req.Requests, rateSharesKey(req.Key)
	if a.Tokens {
		l, hash = req.Tokens, tokenSharesKey(req.Key)
	}
	if err := a.Validate(l.Rate, l.Period); err != nil {
		return governor.RateResult{}, fmt.Errorf("%w: %s: %v", governor.ErrInvalid, req.Key.Resource, err)
	}
	owner := ""
	if req.Declaration.PID != 0 {
		j, err := b.declJSON(req.Declaration)
		if err != nil {
			return governor.RateResult{}, err
		}
		owner = j.(string)
	}
	keys := append(RateKeys(req.Key), b.resource(req.Key).keys[1], hash)
	res, err := b.refreshRateShare(ctx, req, l, keys, owner)
	if err != nil || a.Release || res.Share.Rate >= res.Share.Entitled || !b.reapRateShares(ctx, keys, a.ID) {
		return res, err
	}
	return b.refreshRateShare(ctx, req, l, keys, owner)
}

// reapRateShares drops the rate shares but id's whose owner's
// declaration is proven dead on this machine (backendkit.OwnerDead),
// and reports whether it dropped any.
func (b *Backend) reapRateShares(ctx context.Context, keys []string, id string) bool {
	all, err := b.rdb.HGetAll(ctx, keys[len(keys)-1]).Result()
	if err != nil {
		return false
	}
	reaped := false
	for f, decl := range all {
		lid, ok := strings.CutPrefix(f, "o:")
		if !ok || lid == id || !backendkit.OwnerDead(decl) {
			continue
		}
		if n, err := rateScript.Run(ctx, b.rdb, keys, "reap", lid, decl).Int(); err == nil && n == 1 {
			reaped = true
		}
	}
	return reaped
}

// refreshRateShare runs rate.lua's share mode once, for a share of l.
func (b *Backend) refreshRateShare(ctx context.Context, req governor.RateRequest, l governor.RateLimit, keys []string, owner string) (governor.RateResult, error) {
	a := *req.Share
	// The machine's witness of the shares' state (its birth, the share's
	// Token), beside the resources': a lease without a token sends it,
	// as a new acquire sends the resource's (rate.lua's ARGV 14).
	wkey := witnessKey(req.Key.Project, "\x1e"+req.Key.Resource)
	if a.Tokens {
		wkey = witnessKey(req.Key.Project, "\x1e"+req.Key.Resource+" tokens") // a state of its own
	}
	evidence := int64(0)
	if a.Token == 0 && !a.Release {
		evidence = b.wit.seen('r', wkey)
	}
	v, err := rateScript.Run(ctx, b.rdb, keys, "share", l.Rate, l.Period.Microseconds(), l.Burst, a.ID, a.Secret,
		a.TTL.Microseconds(), a.Want, a.Held, a.Token, flag(a.Release), owner, a.Granted, evidence).Slice()
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
	b.wit.saw('r', wkey, sh.Token)
	if !a.Release {
		sh.Expires = time.UnixMicro(exp)
	}
	if learn > 0 {
		sh.Learning = time.UnixMicro(learn)
	}
	return governor.RateResult{Allowed: true, Share: &sh}, nil
}

// rateStatusShares reads rate.lua status's share fields v (the
// learning's end, the local grants, the flat list of live shares) into
// rs.
func rateStatusShares(r *reader, v []any, rs *governor.RateStatus) {
	if learn := r.int(v[0], "the learning's end"); learn > 0 {
		rs.Learning = time.UnixMicro(learn)
	}
	rs.LocalGrants, rs.Shares = r.int(v[1], "the local grants"), rateHolders(r, v[2], "the rate shares")
	rs.TokenLocalGrants, rs.TokenShares = r.int(v[3], "the local tokens"), rateHolders(r, v[4], "the tokens' shares")
}

// rateHolders reads a list of rate shares of rate.lua's status (6
// fields each), by ID.
func rateHolders(r *reader, v any, what string) []capacity.RateHolder {
	list := r.list(v, what)
	if len(list)%6 != 0 {
		r.fail("%s: %d fields, not 6 per share", what, len(list))
		return nil
	}
	var out []capacity.RateHolder
	for i := 0; i+6 <= len(list) && r.err == nil; i += 6 {
		out = append(out, capacity.RateHolder{ID: r.str(list[i], "a rate share's id"), Rate: r.int(list[i+1], "a rate share's rate"),
			Want: r.int(list[i+2], "a rate share's want"), Burst: r.int(list[i+3], "a rate share's burst"),
			Granted: r.int(list[i+4], "a rate share's grants"), Expires: time.UnixMicro(r.int(list[i+5], "a rate share's expiry"))})
	}
	slices.SortFunc(out, func(a, b capacity.RateHolder) int { return strings.Compare(a.ID, b.ID) })
	return out
}
