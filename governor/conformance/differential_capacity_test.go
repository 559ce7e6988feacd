package conformance

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/governor-dev/governor/governor/capacity"
)

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
