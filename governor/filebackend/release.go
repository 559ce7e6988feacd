package filebackend

import (
	"context"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
)

// Release implements governor.Backend.
func (b *Backend) Release(ctx context.Context, key governor.Key, id, secret string) error {
	notHeld := func() error {
		b.forget(key, id)
		return governor.ErrNotHeld
	}
	return b.do(ctx, key, section{settle: true, owner: &owner{id, secret}, absent: notHeld, ahead: true}, func(t *tx) error {
		i := holderIndex(t.st, id)
		if i < 0 {
			return t.commitThen(notHeld())
		}
		t.hold(i)
		t.dropHolder(i)
		t.st.Counters.Released++
		t.promote()
		return t.commit()
	})
}

func holderIndex(st *state, id string) int {
	for i := range st.Holders {
		if st.Holders[i].ID == id {
			return i
		}
	}
	return -1
}

// Cancel implements governor.Backend.
func (b *Backend) Cancel(ctx context.Context, key governor.Key, id, secret string) error {
	return b.do(ctx, key, section{settle: true, owner: &owner{id, secret}, ahead: true}, func(t *tx) error {
		if i := t.st.waiterIndex(id); i >= 0 {
			t.st.Waiters = append(t.st.Waiters[:i], t.st.Waiters[i+1:]...)
			t.dirty = true
		}
		if i := holderIndex(t.st, id); i >= 0 {
			t.dropHolder(i)
			t.st.Counters.Released++
		}
		t.promote()
		return t.commit()
	})
}

// adminReclaim implements governor.Backend's Admin of eventkind.Reclaimed.
func (b *Backend) adminReclaim(ctx context.Context, key governor.Key, id string, token int64) (bool, error) {
	return within(ctx, b, key, section{settle: true}, func(t *tx) (bool, error) {
		i := holderIndex(t.st, id)
		if i < 0 || t.st.Holders[i].Token != token {
			return false, t.commit()
		}
		t.event(eventkind.Reclaimed, id, token, "owner dead")
		t.hold(i)
		t.dropHolder(i)
		delete(t.st.Wants, id) // a capacity lease's want goes with it
		t.st.Counters.ReclaimedDead++
		t.promote()
		return committed(t, true)
	})
}

// recordLost implements governor.Backend's Record of eventkind.Lost. Like lost.lua it records and
// settles nothing else: what expired is pruned by the next operation.
func (b *Backend) recordLost(ctx context.Context, key governor.Key, id string, token int64, reason string) error {
	return b.do(ctx, key, section{create: true}, func(t *tx) error {
		t.event(eventkind.Lost, id, token, reason)
		t.st.Counters.Lost++
		t.dirty = true
		return t.commit()
	})
}
