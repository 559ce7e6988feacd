package conformance

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"sync"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/capacity"
	"github.com/governor-dev/governor/governor/proc"
)

// deadOwner is the declaration of a process of this machine that has
// ended (zero if none could be made: then nothing is declared).
var deadOwner = sync.OnceValue(func() governor.Declaration {
	c := exec.Command("sleep", "60")
	if c.Start() != nil {
		return governor.Declaration{}
	}
	start, err := proc.StartTime(c.Process.Pid)
	_ = c.Process.Kill()
	_ = c.Wait()
	if err != nil {
		return governor.Declaration{}
	}
	return governor.Declaration{HostID: proc.Current().HostID, PID: c.Process.Pid, StartTime: start}
})

// capacityOp draws, one step in eight, a refresh of a capacity lease
// (governor.Request.Capacity): a new lease or one sent before, wanting 0
// to 3 with some in use, or its release; its count of local grants is
// 0 to 9, so that counts go up, repeat and go back (a refresh retried or
// late).
func capacityOp(rng *rand.Rand, i int, sent map[string][]string) (diffOp, bool) {
	if rng.IntN(8) != 0 {
		return diffOp{}, false
	}
	res := []string{"r1", "r2"}[rng.IntN(2)]
	if rng.IntN(2) == 0 {
		return rateShareOp(rng, i, res, sent), true
	}
	op := diffOp{kind: "capacity", resource: res, limit: 3, weight: rng.IntN(4), n: int64(rng.IntN(3)), granted: int64(rng.IntN(10))}
	if ids := sent["~cap"+res]; len(ids) > 0 && rng.IntN(3) != 0 {
		op.id = ids[rng.IntN(len(ids))]
		op.wait = rng.IntN(6) == 0 // a release
	} else {
		op.id = fmt.Sprintf("c%02d", i)
		sent["~cap"+res] = append(sent["~cap"+res], op.id)
	}
	if rng.IntN(12) == 0 {
		op.limit = 4 // drift, or a change when idle
	}
	return op, true
}

// capacityStep runs a capacity step: what the lease got.
func (r *diffRun) capacityStep(ctx context.Context, o diffOp) string {
	a := capacity.Ask{Want: o.weight, InUse: int(o.n), Release: o.wait, Granted: o.granted}
	if a.Release {
		a.Want, a.InUse = 0, 0
	}
	req := r.request(diffOp{resource: o.resource, limit: o.limit, weight: 1}, o.id, false)
	req.Capacity = &a
	res, err := r.b.Acquire(ctx, req)
	if err != nil || res.Share == nil {
		return fmt.Sprintf("%s %v", errClass(err), res.Share)
	}
	if res.Token != 0 {
		r.granted(o.resource, o.id, res.Token, res.Token != r.tokens[o.resource+"/"+o.id])
	}
	return fmt.Sprintf("%v limit %d token %v share %d held %d entitled %d waiting %v", res.Outcome, res.Limit, res.Token != 0,
		res.Share.Share, res.Share.Held, res.Share.Entitled, res.Share.Waiting)
}

// rateShareOp draws a refresh of a rate share of diffRequests, or (one
// in two) of diffTokens (governor.RateRequest.Share): a new lease or one
// sent before, wanting 0 to the limit, or its release, or (one in ten)
// another's secret; its count of local grants is 0 to 9, so that counts
// go up, repeat and go back.
func rateShareOp(rng *rand.Rand, i int, res string, sent map[string][]string) diffOp {
	op := diffOp{kind: "rateshare", resource: res, signal: rng.IntN(10) == 0, tokens: rng.IntN(2) == 0, granted: rng.Int64N(10)}
	l, leases := diffRequests, "~rs"+res
	if op.tokens {
		l, leases = diffTokens, "~ts"+res
	}
	op.n = rng.Int64N(l.Rate + 1)
	if ids := sent[leases]; len(ids) > 0 && rng.IntN(3) != 0 {
		op.id = ids[rng.IntN(len(ids))]
		op.wait = rng.IntN(6) == 0 // a release
	} else {
		op.id = fmt.Sprintf("s%02d", i)
		sent[leases] = append(sent[leases], op.id)
	}
	return op
}

// rateShareStep runs a rateshare step: what the share got (its Held and
// Token the last answer's), and the key's RateStatus then.
func (r *diffRun) rateShareStep(ctx context.Context, o diffOp) string {
	key := governor.Key{Project: r.project, Resource: o.resource}
	if r.shares == nil {
		r.shares = map[string]capacity.RateShare{}
	}
	name := fmt.Sprintf("%s/%s tokens %v", o.resource, o.id, o.tokens)
	last := r.shares[name]
	a := capacity.RateAsk{ID: o.id, Secret: "s-" + o.id, TTL: time.Minute, Want: o.n, Held: last.Rate, Token: last.Token, Release: o.wait,
		Granted: o.granted, Tokens: o.tokens}
	if a.Release {
		a.Want = 0
	}
	if o.signal {
		a.Secret = "another"
	}
	req := governor.RateRequest{Key: key, Requests: diffRequests, Tokens: diffTokens, Share: &a}
	if o.id[len(o.id)-1]%3 == 0 {
		req.Declaration = deadOwner() // reaped by a refresh short of its part
	}
	res, err := r.b.RateReserve(ctx, req)
	rs, serr := r.b.RateStatus(ctx, key)
	status := fmt.Sprintf("; status %s grants %d learning %v", errClass(serr), rs.LocalGrants, !rs.Learning.IsZero())
	for _, h := range rs.Shares {
		status += fmt.Sprintf(" [%s want %d rate %d burst %d granted %d]", h.ID, h.Want, h.Rate, h.Burst, h.Granted)
	}
	if err != nil || res.Share == nil {
		return fmt.Sprintf("%s %v", errClass(err), res.Share) + status
	}
	sh := res.Share
	r.shares[name] = *sh
	return fmt.Sprintf("allowed %v rate %d burst %d entitled %d waiting %v token %v learning %v", res.Allowed, sh.Rate, sh.Burst, sh.Entitled,
		sh.Waiting, sh.Token != 0, !sh.Learning.IsZero()) + status
}
