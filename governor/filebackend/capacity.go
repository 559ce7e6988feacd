package filebackend

import (
	"fmt"
	"slices"
	"strings"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/capacity"
)

// capacity refreshes or releases capacity lease req.ID (see
// governor.Backend's Acquire and package capacity). One machine: its
// state is never lost, so the learning mode never starts here.
func (b *Backend) capacity(t *tx, req governor.Request) (governor.Result, error) {
	st, a := t.st, *req.Capacity
	i := holderIndex(st, req.ID)
	was, kept := st.Wants[req.ID]
	add, granted := a.Tally(was.Granted, kept && was.Expires > t.now.boot) // an expired want keeps no count
	if a.Release {
		st.Counters.LocalGrants += add
		if i >= 0 {
			t.hold(i)
			t.dropHolder(i)
			st.Counters.Released++
			t.promote()
		}
		delete(st.Wants, req.ID)
		t.dirty = true
		return committed(t, governor.Result{Outcome: governor.Granted, Limit: st.Limit, Share: &capacity.Share{}})
	}
	if st.Policy != "" {
		return governor.Result{}, t.commitThen(fmt.Errorf("%w: capacity lease on %s, which has queue policy %q in force; allowed: resources without a queue policy",
			governor.ErrInvalid, req.Key.Resource, st.Policy))
	}
	t.inForce(req.Limit, req.ID)
	st.Counters.LocalGrants += add
	if st.Wants == nil {
		st.Wants = map[string]capWant{}
	}
	st.Wants[req.ID] = capWant{Want: a.Want, InUse: a.InUse, Expires: t.now.boot + int64(req.TTL), Granted: granted}
	t.dirty = true
	t.reapShares()
	i = holderIndex(st, req.ID) // the reclaim may have dropped holders before it
	parts, held := t.shares()
	cur := held[req.ID]
	share, weight := a.Next(capacity.State{Entitled: parts[req.ID], Held: cur, Free: max(0, st.Limit-st.used()),
		Blocked: len(st.Waiters) > 0 || t.heldBack()})
	res := governor.Result{Outcome: governor.Granted, Expires: t.now.at(t.now.boot + int64(req.TTL)), Limit: st.Limit}
	switch {
	case weight == 0 && i >= 0:
		t.dropHolder(i)
	case weight > 0 && i >= 0:
		h := &st.Holders[i]
		h.Weight, h.Expires, h.Heartbeat = weight, t.now.boot+int64(req.TTL), t.now.boot
		t.attach(h)
		res.Token = h.Token
	case weight > 0:
		h := t.grant(req.ID, weight, req.TTL, req.Declaration)
		t.attach(h)
		res.Token = h.Token
	}
	if weight < cur {
		t.promote()
	}
	held[req.ID] = weight
	res.Share = &capacity.Share{Share: share, Held: weight, Entitled: parts[req.ID], Waiting: waiting(parts, held, req.ID)}
	return committed(t, res)
}

// shares drops the wants that expired and returns each live lease's part
// (capacity.FairShare of the limit in force less the other holders'
// weight, the queue competing while anyone waits) and the weight each
// holds.
func (t *tx) shares() (parts, held map[string]int) {
	st := t.st
	held = map[string]int{}
	ws := make([]capacity.Wanter, 0, len(st.Wants)+1)
	for id, w := range st.Wants {
		if w.Expires <= t.now.boot {
			delete(st.Wants, id)
			continue
		}
		ws = append(ws, capacity.Wanter{ID: id, Want: w.Want})
	}
	others := st.used()
	for _, h := range st.Holders {
		if _, ok := st.Wants[h.ID]; ok {
			held[h.ID] = h.Weight
			others -= h.Weight
		}
	}
	if len(st.Waiters) > 0 {
		ws = append(ws, capacity.Wanter{ID: capacity.Queue, Want: st.Limit})
	}
	return capacity.FairShare(st.Limit-others, ws), held
}

// reapShares reclaims the holders of shares whose owner is proven dead
// (reap: their lease file unlocked, no declared process alive), and
// drops their wants: a killed process's share returns at once on this
// machine, rather than at its lease's end.
func (t *tx) reapShares() {
	st := t.st
	was := map[string]bool{}
	for _, h := range st.Holders {
		if _, ok := st.Wants[h.ID]; ok {
			was[h.ID] = true
		}
	}
	if len(was) == 0 {
		return
	}
	t.reap()
	for _, h := range st.Holders {
		delete(was, h.ID)
	}
	for id := range was {
		delete(st.Wants, id)
	}
}

// waiting tells whether a lease other than id, or the queue, holds less
// than its part.
func waiting(parts, held map[string]int, id string) bool {
	for w, p := range parts {
		if w != id && held[w] < p {
			return true
		}
	}
	return false
}

// shares lists the live capacity leases for Status, by id, with the
// weight each holds among the live holders hs.
func (st *state) shares(hs []holder, now clockNow) []capacity.Lease {
	var out []capacity.Lease
	for id, w := range st.Wants {
		if w.Expires <= now.boot {
			continue
		}
		l := capacity.Lease{ID: id, Want: w.Want, InUse: w.InUse, Expires: now.at(w.Expires)}
		if i := slices.IndexFunc(hs, func(h holder) bool { return h.ID == id }); i >= 0 {
			l.Held = hs[i].Weight
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b capacity.Lease) int { return strings.Compare(a.ID, b.ID) })
	return out
}
