package redisbackend

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/capacity"
	"github.com/governor-dev/governor/governor/proc"
	scripts "github.com/governor-dev/governor/scripts-lua"
)

var capacityScript = newScript(scripts.Capacity)

// CapacityKey is the hash of a resource's capacity leases' wants
// (capacity.lua), under the resource's hash tag.
func CapacityKey(key governor.Key) string {
	return Prefix + "{" + key.Project + "/" + key.Resource + "}:capacity"
}

// acquireCapacity implements governor.Backend's Acquire of a capacity
// lease (Request.Capacity). A refresh short of its part first reclaims
// the holders whose owner is proven dead on this machine, and then
// refreshes again: a killed process's share returns at the next refresh
// of anyone on its machine, as filebackend's reapShares does with its
// lease files, rather than at its lease's end.
func (b *Backend) acquireCapacity(ctx context.Context, req governor.Request) (governor.Result, error) {
	res, err := b.refreshCapacity(ctx, req)
	if err != nil || req.Capacity.Release || res.Share.Share >= res.Share.Entitled || !b.reclaimDead(ctx, req.Key) {
		return res, err
	}
	return b.refreshCapacity(ctx, req)
}

// reclaimDead reclaims the holders of key whose owner is proven dead
// (governor.Declaration's OwnerVerdict: this backend keeps no proof of
// life of its own), as Governor does before an acquire queues, and
// reports whether it reclaimed any. A reclaimed capacity lease's want
// goes with it (reclaim.lua).
func (b *Backend) reclaimDead(ctx context.Context, key governor.Key) bool {
	st, err := b.Status(ctx, key)
	if err != nil {
		return false
	}
	reclaimed := false
	for _, h := range st.Holders {
		if h.OwnerVerdict() != proc.Dead {
			continue
		}
		if ok, err := b.adminReclaim(ctx, key, h.LeaseID, h.Token); err == nil && ok {
			reclaimed = true
			_ = h.RemoveDeadCgroup() // best effort, as Governor's reclaim
		}
	}
	return reclaimed
}

// refreshCapacity runs capacity.lua once.
func (b *Backend) refreshCapacity(ctx context.Context, req governor.Request) (governor.Result, error) {
	if b.closed.Load() {
		return governor.Result{}, governor.ErrClosed
	}
	decl, err := b.declJSON(req.Declaration)
	if err != nil {
		return governor.Result{}, err
	}
	a, rk := req.Capacity, b.resource(req.Key)
	tok := a.Token
	if t, ok := rk.held.Load(req.ID); ok && tok == 0 {
		tok = t.(int64)
	}
	// A lease without a token sends what its machine witnessed, as a new
	// acquire does (capacity.lua's ARGV 13).
	evidence := int64(0)
	if tok == 0 && !a.Release {
		evidence = b.wit.seen('r', rk.wkey)
	}
	v, err := capacityScript.Run(ctx, b.rdb, rk.withCap, req.ID, req.Secret, req.Limit, req.TTL.Milliseconds(), a.Want, a.InUse,
		a.Held, tok, flag(a.Release), decl, b.lossMS(rk, req.TTL), a.Granted, evidence).Slice()
	if err != nil {
		return governor.Result{}, wrap("capacity", err)
	}
	r := &reader{op: "capacity", key: req.Key}
	if !r.length(v, 1, true) {
		return governor.Result{}, r.err
	}
	switch code := r.int(v[0], "the code"); {
	case r.err != nil:
		return governor.Result{}, r.err
	case code == -2:
		return governor.Result{}, governor.NotOwner(req.Key, req.ID)
	case code == -6 && len(v) == 2:
		return governor.Result{}, fmt.Errorf("%w: capacity lease on %s, which has queue policy %q in force; allowed: resources without a queue policy",
			governor.ErrInvalid, req.Key.Resource, r.str(v[1], "the policy"))
	}
	if !r.length(v, 10, false) {
		return governor.Result{}, r.err
	}
	sh := &capacity.Share{Share: int(r.int(v[1], "the share")), Held: int(r.int(v[2], "the weight held")),
		Entitled: int(r.int(v[3], "the entitlement")), Waiting: r.int(v[4], "waiting") == 1}
	if q := r.int(v[8], "the quarantine"); q > 0 {
		sh.Learning = time.UnixMilli(q)
	}
	res := governor.Result{Outcome: governor.Granted, Token: r.int(v[5], "the token"), Expires: time.UnixMilli(r.int(v[6], "the expiry")),
		Limit: int(r.int(v[7], "the limit")), Share: sh}
	inc := r.int(v[9], "the incarnation")
	if r.err != nil {
		return governor.Result{}, r.err
	}
	b.wit.saw('r', rk.wkey, inc)
	if sh.Held > 0 {
		rk.held.Store(req.ID, res.Token)
	} else {
		rk.held.Delete(req.ID)
	}
	if !a.Release {
		b.register(ctx, req.Key, rk, false)
	}
	return res, nil
}

// shares reads the capacity hash (flat id, "want expiry_ms in_use
// granted" pairs) into st's live capacity leases, by id, with the weight each
// holds among st's holders.
func (r *reader) shares(v []any, st governor.Status) []capacity.Lease {
	if len(v)%2 != 0 {
		r.fail("capacity leases: %d values, not (id, want) pairs", len(v))
		return nil
	}
	var out []capacity.Lease
	for i := 0; i+1 < len(v) && r.err == nil; i += 2 {
		id := r.str(v[i], "a capacity lease's id")
		var want, exp, inUse int64
		if n, _ := fmt.Sscanf(r.str(v[i+1], "capacity lease "+id), "%d %d %d", &want, &exp, &inUse); n < 2 {
			r.fail("capacity lease %s: %q, not \"want expiry in_use\"", id, v[i+1])
			return nil
		}
		if !time.UnixMilli(exp).After(st.Now) {
			continue
		}
		l := capacity.Lease{ID: id, Want: int(want), InUse: int(inUse), Expires: time.UnixMilli(exp)}
		if j := slices.IndexFunc(st.Holders, func(h governor.Holder) bool { return h.LeaseID == id }); j >= 0 {
			l.Held = st.Holders[j].Weight
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b capacity.Lease) int { return strings.Compare(a.ID, b.ID) })
	return out
}
