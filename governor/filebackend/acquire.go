package filebackend

import (
	"context"
	"fmt"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/internal/backendkit"
	"github.com/governor-dev/governor/governor/internal/policyrule"
)

func (t *tx) fits(weight int) bool {
	return len(t.st.Waiters) == 0 && t.st.used()+weight <= t.st.Limit && !t.heldBack()
}

// Acquire implements governor.Backend.
func (b *Backend) Acquire(ctx context.Context, req governor.Request) (governor.Result, error) {
	if req.Takeover != "" {
		return b.acquireTakeover(ctx, req.Key, req.Takeover, req)
	}
	return within(ctx, b, req.Key, section{create: true, settle: true, owner: &owner{req.ID, req.Secret}},
		func(t *tx) (governor.Result, error) { return b.acquire(t, req) })
}

func (b *Backend) acquire(t *tx, req governor.Request) (governor.Result, error) {
	st := t.st

	if req.Capacity != nil {
		return b.capacity(t, req)
	}
	// Already granted (freed weight was handed to this waiter): claim it.
	if h := st.holder(req.ID); h != nil {
		h.Expires = t.now.boot + int64(req.TTL)
		h.Heartbeat = t.now.boot
		h.Handed = false
		t.dirty = true
		return b.granted(t, req, h)
	}

	// A newcomer may need the room of holders that died: prove them so
	// first (settle did only if someone was queued).
	if len(st.Holders) > 0 {
		t.reap()
		t.promote()
	}
	// A waiter whose queue entry someone else withdrew learns who and
	// why, and is not queued again.
	if !req.New && st.waiterIndex(req.ID) < 0 {
		if e := st.withdrawn(req.ID); e != nil {
			return governor.Result{}, t.commitThen(&governor.WithdrawnError{Resource: req.Key.Resource, WaiterID: req.ID,
				Kind: e.Kind, By: e.By, Detail: e.Detail, At: time.Unix(0, e.At)})
		}
	}
	t.inForce(req.Limit, req.ID)
	if req.Exclusive {
		req.Weight = st.Limit // the limit in force, now (Request.Exclusive)
	}
	t.agreePolicy(req, len(st.Holders) == 0 && len(st.Waiters) == 0)
	p, pol := t.policy()
	if req.Weight > st.Limit || pol && p.Rules().Never(st.Limit, p.Rules().ClassOf(req.Priority), req.FairKey, req.Weight) != policyrule.Allows {
		if i := st.waiterIndex(req.ID); i >= 0 {
			st.Waiters = append(st.Waiters[:i], st.Waiters[i+1:]...)
			t.dirty = true
		}
		return governor.Result{}, t.commitThen(fmt.Errorf("%w: weight %d for %s; the limit in force is %d",
			governor.ErrTooHeavy, req.Weight, req.Key.Resource, st.Limit))
	}

	// A request with a supersede key that is not queued yet (granted, it
	// would have been claimed above; withdrawn, it would have been told)
	// replaces the older one with its key.
	if req.Supersede != "" && st.waiterIndex(req.ID) < 0 {
		if err := t.supersede(req); err != nil {
			return governor.Result{}, t.commitThen(err)
		}
	}
	if pol {
		return b.acquirePolicy(t, p, req)
	}
	i := st.waiterIndex(req.ID)
	if i < 0 {
		if t.fits(req.Weight) {
			return b.granted(t, req, t.grant(req.ID, req.Weight, req.TTL, req.Declaration))
		}
		if req.Mode != governor.Wait {
			return b.refused(t, req)
		}
		st.Waiters = append(st.Waiters, waiter{ID: req.ID, Weight: req.Weight, Exclusive: req.Exclusive, TTL: int64(req.TTL),
			Enqueued: t.now.boot, Decl: req.Declaration})
		st.Counters.Waited++
		i = len(st.Waiters) - 1
	}
	return b.queued(t, req, i, t.now.boot+int64(req.QueueTTL))
}

// queued ends an Acquire that left req queued as waiter i, its queue
// entry refreshed to expire at exp.
func (b *Backend) queued(t *tx, req governor.Request, i int, exp int64) (governor.Result, error) {
	t.st.Waiters[i].Expires = exp
	t.dirty = true
	t.superseding(req, false)
	return committed(t, governor.Result{Outcome: governor.Queued, Position: i + 1,
		Status: t.st.status(req.Key, t.now, b.boot, backendkit.RefusalHolders)})
}

// granted ends an Acquire that granted h to req.
func (b *Backend) granted(t *tx, req governor.Request, h *holder) (governor.Result, error) {
	t.attach(h)
	t.superseding(req, true)
	if err := t.commit(); err != nil {
		b.forget(req.Key, req.ID)
		return governor.Result{}, err
	}
	return governor.Result{Outcome: governor.Granted, Token: h.Token, Expires: t.now.at(h.Expires), Limit: t.st.Limit}, nil
}

// refused ends a Fail-mode Acquire that found no room.
func (b *Backend) refused(t *tx, req governor.Request) (governor.Result, error) {
	t.st.Counters.Busy++
	t.dirty = true
	return committed(t, governor.Result{Outcome: governor.Refused,
		Status: t.st.status(req.Key, t.now, b.boot, backendkit.RefusalHolders)})
}
