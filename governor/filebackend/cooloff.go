package filebackend

import (
	"context"
	"fmt"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
)

// adminCoolOff implements governor.Backend's Admin of eventkind.CoolOff, on the machine's
// monotonic clock shared by every process.
func (b *Backend) adminCoolOff(ctx context.Context, key governor.Key, d time.Duration, reason string) (time.Time, error) {
	return within(ctx, b, key, section{create: true}, func(t *tx) (time.Time, error) {
		st := t.st
		if staleBoot(st.Boot, b.boot) {
			st.CoolOff = 0 // of an earlier boot: a clock that means nothing now
		}
		st.SignalAt = t.now.wall.UnixNano()
		t.dirty = true
		if end := t.now.boot + int64(d); end > st.CoolOff {
			st.CoolOff = end
			t.event(eventkind.CoolOff, "", 0, fmt.Sprintf("%s: no new grant for %d ms", reason, d.Milliseconds()))
			t.dirty = true
		}
		end := t.now.at(st.CoolOff)
		return end, t.commit()
	})
}

// heldBack tells whether new grants wait: the admin state holds them
// back (state.paused), or the resource is cooling off; the twin of
// lib.lua's held_back.
func (t *tx) heldBack() bool {
	return t.st.paused() || t.coolingOff()
}

// coolingOff tells whether the resource is cooling off; once the time
// has passed, the mark goes.
func (t *tx) coolingOff() bool {
	st := t.st
	if st.CoolOff == 0 {
		return false
	}
	if t.now.boot < st.CoolOff && !staleBoot(st.Boot, t.b.boot) {
		return true
	}
	st.CoolOff = 0
	t.dirty = true
	return false
}

// coolOffEnd is the end of st's cool-off as of now, zero when none is in
// force.
func (st *state) coolOffEnd(now clockNow, boot string) time.Time {
	if st.CoolOff <= now.boot || staleBoot(st.Boot, boot) {
		return time.Time{}
	}
	return now.at(st.CoolOff)
}

// coolOffOf reads, without locking (the state file is replaced
// atomically), the end of key's cool-off for a rate reservation: zero
// when none is in force.
func (b *Backend) coolOffOf(key governor.Key, now clockNow) (time.Time, error) {
	st, err := b.peek(key)
	if err != nil || st == nil {
		return time.Time{}, err
	}
	return st.coolOffEnd(now, b.boot), nil
}

// Adapt implements governor.Backend: the twin of adapt.lua.
func (b *Backend) Adapt(ctx context.Context, key governor.Key, req governor.AdaptRequest) (governor.AdaptiveState, error) {
	return within(ctx, b, key, section{create: true, settle: true}, func(t *tx) (governor.AdaptiveState, error) {
		return t.adapt(req)
	})
}

func (t *tx) adapt(req governor.AdaptRequest) (governor.AdaptiveState, error) {
	st := t.st
	a := governor.AdaptiveState{Limit: req.Max, Max: req.Max}
	if st.Adaptive != nil && st.Adaptive.Max == req.Max && st.Adaptive.Limit > 0 {
		a = *st.Adaptive
	}
	if req.Signal {
		a.Limit, a.Successes = a.Limit/2, 0
	} else if a.Successes++; a.Successes >= req.IncreaseEvery {
		a.Limit, a.Successes = a.Limit+1, 0
	}
	a.Limit = max(req.Min, min(req.Max, a.Limit))
	if a.Limit == req.Max {
		a.Successes = 0 // at the maximum: nothing to count towards
	}
	st.Adaptive = &a
	t.dirty = true
	if st.Live == nil && st.Limit != 0 && st.Limit != a.Limit {
		st.Limit, st.Drift = a.Limit, 0
		t.promote() // a higher limit hands room on at once
	}
	return a, t.commit()
}

// adaptive sets the limit in force to the one AIMD holds when the
// resource is adaptive under the maximum asked, and tells whether it
// did: the twin of lib-slow.lua's adaptive.
func (t *tx) adaptive(asked int) bool {
	st := t.st
	if st.Adaptive == nil || st.Adaptive.Max != asked || st.Adaptive.Limit <= 0 {
		return false
	}
	if st.Limit != st.Adaptive.Limit || st.Drift != 0 {
		st.Limit, st.Drift = st.Adaptive.Limit, 0
		t.dirty = true
	}
	return true
}

// adaptiveStatus is a copy of st's AIMD state, nil when not adaptive.
func (st *state) adaptiveStatus() *governor.AdaptiveState {
	if st.Adaptive == nil {
		return nil
	}
	a := *st.Adaptive
	return &a
}

// recordDegraded implements governor.Backend's Record of eventkind.Degraded.
func (b *Backend) recordDegraded(ctx context.Context, key governor.Key, detail string) error {
	return b.do(ctx, key, section{create: true}, func(t *tx) error {
		t.event(eventkind.Degraded, "", 0, detail)
		return t.commit()
	})
}
