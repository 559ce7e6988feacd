package filebackend

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/internal/backendkit"
)

// The admin state (pause, live limit), the limit in force, withdrawn
// waiters and hold durations: the twins of lib.lua's held_back,
// in_force, withdraw, withdrawn and hold, and of admin.lua.

// paused tells whether the resource is paused. Whether new grants wait
// is tx.heldBack's to tell (paused, or cooling off): a call of this
// one instead was the cool-off-under-policy drift (issue 24.10).
func (st *state) paused() bool {
	return st.Paused != nil
}

// inForce sets the limit in force for a process asking for limit asked
// (its waiter or lease id): the one place that decides it. A limit set
// live wins, then the one AIMD holds (adaptive); otherwise the limit
// changes only when the resource is idle.
// A process asking for another limit than the one in force is recorded
// as drift, once per new disagreement.
func (t *tx) inForce(asked int, id string) {
	st := t.st
	if st.Live == nil && t.adaptive(asked) {
		return
	}
	idle := len(st.Holders) == 0 && len(st.Waiters) == 0
	if st.Live == nil && (st.Limit == 0 || idle) {
		if st.Limit != asked || st.Drift != 0 {
			st.Limit, st.Drift = asked, 0
			t.dirty = true
		}
		return
	}
	if st.Limit != asked && st.Drift != asked {
		live := ""
		if st.Live != nil {
			live = " (set live)"
		}
		t.event(eventkind.Drift, id, 0, fmt.Sprintf("a process asked for limit %d; the limit in force is %d%s", asked, st.Limit, live))
		st.Drift = asked
		t.dirty = true
	}
}

// hold records how long holder i was held, keeping the last
// backendkit.HoldHistory: for releases, expiries, reclaims and takeovers.
func (t *tx) hold(i int) {
	st := t.st
	st.Holds = append(st.Holds, max(0, t.now.boot-st.Holders[i].Acquired))
	if n := len(st.Holds) - backendkit.HoldHistory; n > 0 {
		st.Holds = append(st.Holds[:0], st.Holds[n:]...)
	}
	t.dirty = true
}

// withdrawn is the last recorded event that withdrew waiter id (one of
// eventkind.Withdraw), or nil.
func (st *state) withdrawn(id string) *event {
	for i := len(st.Events) - 1; i >= 0; i-- {
		e := &st.Events[i]
		if e.Lease == id && slices.Contains(eventkind.Withdraw, e.Kind) {
			return e
		}
	}
	return nil
}

// eventBy records an admin action's event, naming who acted.
func (t *tx) eventBy(kind, id, detail, by string) {
	t.event(kind, id, 0, detail)
	t.st.Events[len(t.st.Events)-1].By = by
}

// adminWithdraw implements governor.Backend's Admin of a withdraw kind.
func (b *Backend) adminWithdraw(ctx context.Context, key governor.Key, ids []string, why governor.Action) ([]string, error) {
	return within(ctx, b, key, section{settle: true}, func(t *tx) ([]string, error) {
		if !t.hasState() {
			return nil, nil
		}
		var out []string
		st := t.st
		kept := st.Waiters[:0]
		var gone []waiter
		for _, w := range st.Waiters {
			if slices.Contains(ids, w.ID) {
				gone = append(gone, w)
			} else {
				kept = append(kept, w)
			}
		}
		st.Waiters = kept
		for _, w := range gone {
			t.eventBy(why.Kind, w.ID, why.Detail, why.By)
			out = append(out, w.ID)
		}
		t.promote()
		// Woken once the state is written: the waiter then finds its
		// entry gone and the event saying why.
		defer func() {
			for _, w := range gone {
				pokePipe(t.dir, waitPrefix+escape(w.ID), true)
			}
		}()
		return committed(t, out)
	})
}

// adminPause implements governor.Backend's Admin of eventkind.Paused and eventkind.Resumed.
func (b *Backend) adminPause(ctx context.Context, key governor.Key, paused bool, by string) (bool, error) {
	return within(ctx, b, key, section{create: true, settle: true}, func(t *tx) (bool, error) {
		st := t.st
		changed := false
		switch {
		case paused && st.Paused == nil:
			t.eventBy(eventkind.Paused, "", "no new grant until resumed", by)
			st.Paused = &pauseMark{Since: t.now.wall.UnixNano(), By: by}
			changed = true
		case !paused && st.Paused != nil:
			t.eventBy(eventkind.Resumed, "", fmt.Sprintf("paused for %d ms",
				t.now.wall.Sub(time.Unix(0, st.Paused.Since)).Milliseconds()), by)
			st.Paused = nil
			changed = true
			t.promote()
		}
		return committed(t, changed)
	})
}

// adminLimit implements governor.Backend's Admin of eventkind.Limit, set.
func (b *Backend) adminLimit(ctx context.Context, key governor.Key, limit int, by string) error {
	return b.setLimit(ctx, key, limit, 0, by)
}

// adminClearLimit implements governor.Backend's Admin of eventkind.Limit, cleared.
func (b *Backend) adminClearLimit(ctx context.Context, key governor.Key, back int, by string) error {
	return b.setLimit(ctx, key, 0, back, by)
}

// setLimit sets limit live, or with 0 clears the live limit, back to back
// when it is above 0 (as admin.lua).
func (b *Backend) setLimit(ctx context.Context, key governor.Key, limit, back int, by string) error {
	return b.do(ctx, key, section{create: true, settle: true}, func(t *tx) error {
		st := t.st
		was := st.Limit
		switch {
		case limit > 0:
			t.eventBy(eventkind.Limit, "", fmt.Sprintf("limit set live to %d (was %d)", limit, was), by)
			st.Live = &liveMark{Limit: limit, At: t.now.wall.UnixNano(), By: by}
			st.Limit = limit
			if st.Drift == limit {
				st.Drift = 0
			}
		case st.Live != nil:
			// Back to the limit given (the configured one), else to the
			// one a process asked for meanwhile (drift), else the one in
			// force stays until a process asks for another (inForce).
			back := cmp.Or(max(back, 0), st.Drift, was)
			t.eventBy(eventkind.Limit, "", fmt.Sprintf("live limit cleared; the limit in force is %d (was %d)", back, was), by)
			st.Live, st.Limit, st.Drift = nil, back, 0
		default:
			return t.commit() // no live limit to clear: nothing changes
		}
		t.dirty = true
		t.promote()
		return t.commit()
	})
}
