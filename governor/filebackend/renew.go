package filebackend

import (
	"context"
	"time"

	"github.com/governor-dev/governor/governor"
)

// Renew implements governor.Backend. The token is no evidence here: the
// file backend's state lives as long as its directory, and nothing in it
// is born anew while a holder's processes run. A touch (r.Touch) sets
// the progress mark instead. A reservation of the same id that the
// secret proves is renewed to the lease's new expiry
// (governor.Ask.BudgetUnderLease).
func (b *Backend) Renew(ctx context.Context, r governor.Renewal) (time.Time, error) {
	if r.Touch {
		return b.renew(ctx, r.Key, r.ID, r.Secret, func(h *holder, now int64) { h.Progress = now })
	}
	key, id, secret, ttl := r.Key, r.ID, r.Secret, r.TTL
	exp, err := b.renew(ctx, key, id, secret, func(h *holder, now int64) {
		if ttl == 0 {
			ttl = time.Duration(h.Expires - h.Heartbeat) // the lease's own
		}
		h.Expires = now + int64(ttl)
		h.Heartbeat = now
	})
	if err == nil && b.rides(key, id) {
		b.extendSpend(ctx, key.Project, id, secret, time.Until(exp))
	}
	return exp, err
}

// renew applies change (given the boot clock's now) to held lease id
// that secret proves and that is neither cancelled in progress nor
// stalled, and returns its expiry.
func (b *Backend) renew(ctx context.Context, key governor.Key, id, secret string, change func(h *holder, now int64)) (time.Time, error) {
	s := section{settle: true, owner: &owner{id, secret}, ahead: true, absent: func() error {
		b.forget(key, id)
		return governor.ErrLeaseLost
	}}
	return within(ctx, b, key, s, func(t *tx) (time.Time, error) {
		h := t.st.holder(id)
		var fail error
		if h == nil {
			b.forget(key, id)
			fail = t.st.lost(key, id)
		} else {
			fail = h.refused(key, t.now)
		}
		if fail != nil {
			return time.Time{}, t.commitThen(fail)
		}
		change(h, t.now.boot)
		t.dirty = true
		return committed(t, t.now.at(h.Expires))
	})
}
