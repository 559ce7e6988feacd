package filebackend

import (
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/proc"
)

// settle prunes what expired or died and hands freed weight to the queue,
// as the Redis scripts' settle does.
func (t *tx) settle() {
	st := t.st
	if staleBoot(st.Boot, t.b.boot) {
		// Every process of an earlier boot is dead.
		for len(st.Holders) > 0 {
			t.event(eventkind.Reclaimed, st.Holders[0].ID, st.Holders[0].Token, "owner dead: the machine rebooted")
			t.dropHolder(0)
			st.Counters.ReclaimedDead++
		}
		st.Waiters = nil
		t.dirty = true
	}
	if st.Boot != t.b.boot {
		st.Boot = t.b.boot
		t.dirty = true
	}
	for i := 0; i < len(st.Holders); {
		if st.Holders[i].Expires <= t.now.boot {
			t.event(eventkind.Expired, st.Holders[i].ID, st.Holders[i].Token, "")
			t.hold(i)
			t.dropHolder(i)
			st.Counters.ReclaimedExpiry++
			continue
		}
		i++
	}
	if len(st.Waiters) > 0 {
		t.reap()
	}
	kept := st.Waiters[:0]
	for _, w := range st.Waiters {
		if w.Expires > t.now.boot {
			kept = append(kept, w)
		} else {
			t.expireWaiter(w)
			t.dirty = true
		}
	}
	st.Waiters = kept
	t.promote()
}

// reap reclaims holders whose owner is proven dead: their lease file is
// not locked and no process they declare is alive
// (governor.Declaration.OwnerVerdict: the owner, its governor, the
// command tree), or their grant is unclaimed and their wake-up pipe
// orphaned. An unlocked lease file proves only that the process that held
// it died: the declared owner may be another, live, process that does the
// protected work (the client of a SIGKILLed `governor bridge`); its lease
// then lasts until its TTL, as on Redis. Leases this Backend holds are
// alive by definition.
func (t *tx) reap() {
	if t.reaped {
		return
	}
	t.reaped = true
	st := t.st
	for i := 0; i < len(st.Holders); {
		h := st.Holders[i]
		dead := false
		if !t.b.holds(t.key, h.ID) {
			switch {
			case h.Proof:
				// The lease file of a `governor run` is held by its
				// command tree, but a process of the tree may have closed
				// it: the tree's own proof of life (its cgroup, its run
				// id) must be gone as well, and so must the processes
				// declared (the owner may not be the process that held
				// the file).
				dead = leaseDead(t.dir, leasePrefix+escape(h.ID)) && h.Decl.OwnerVerdict() != proc.Alive
			case h.Handed:
				if pokePipe(t.dir, waitPrefix+escape(h.ID), false) == pipeOrphaned {
					dead = true
					t.unlink = append(t.unlink, waitPrefix+escape(h.ID))
				}
			}
		}
		if dead {
			t.reapedDecls = append(t.reapedDecls, h.Decl)
			t.event(eventkind.Reclaimed, h.ID, h.Token, "owner dead: its lease file is no longer locked")
			t.hold(i)
			t.dropHolder(i)
			st.Counters.ReclaimedDead++
			continue
		}
		i++
	}
}

// dropHolder removes holder i, its lease file, and this Backend's hold
// on it.
func (t *tx) dropHolder(i int) {
	st := t.st
	id := st.Holders[i].ID
	st.Holders = append(st.Holders[:i], st.Holders[i+1:]...)
	t.unlink = append(t.unlink, leasePrefix+escape(id))
	t.b.forget(t.key, id)
	t.dirty = true
}

// weighExclusive makes every exclusive waiter (governor.Request.Exclusive)
// weigh the limit in force, which a live limit, an idle resource's new
// limit or AIMD may have changed since it queued: before any grant, so
// that it is granted the limit in force then (lib.lua's weight_of).
func (t *tx) weighExclusive() {
	st := t.st
	for i := range st.Waiters {
		if w := &st.Waiters[i]; w.Exclusive && st.Limit > 0 && w.Weight != st.Limit {
			w.Weight, t.dirty = st.Limit, true
		}
	}
}

// promote hands free weight to the head of the queue, in order, while it
// fits: the head blocks lighter waiters behind it, so a heavy waiter is
// never starved. Each grantee alone is woken, through its own pipe; a
// head whose pipe nobody listens to is dead and is dropped.
func (t *tx) promote() {
	t.weighExclusive()
	if p, ok := t.policy(); ok {
		t.promotePolicy(p)
		return
	}
	st := t.st
	used := st.used()
	for len(st.Waiters) > 0 && !t.heldBack() {
		w := st.Waiters[0]
		pipe := waitPrefix + escape(w.ID)
		fits := used+w.Weight <= st.Limit
		// The waiter cannot act on a wake-up before this section ends.
		if pokePipe(t.dir, pipe, fits) == pipeOrphaned {
			st.Waiters = st.Waiters[1:]
			t.dirty = true
			t.unlink = append(t.unlink, pipe)
			continue
		}
		if !fits {
			return
		}
		st.Waiters = st.Waiters[1:]
		t.dirty = true
		h := t.grant(w.ID, w.Weight, time.Duration(w.TTL), w.Decl)
		h.Handed = true
		used += w.Weight
	}
}

// grant adds a holder with a new fencing token.
func (t *tx) grant(id string, weight int, ttl time.Duration, decl governor.Declaration) *holder {
	st := t.st
	tok := max(st.Token+1, t.now.wall.UnixMicro())
	st.Token = tok
	st.Counters.Acquired++
	st.Holders = append(st.Holders, holder{ID: id, Weight: weight, Token: tok, Acquired: t.now.boot,
		Heartbeat: t.now.boot, Expires: t.now.boot + int64(ttl), Decl: decl})
	t.dirty = true
	return &st.Holders[len(st.Holders)-1]
}
