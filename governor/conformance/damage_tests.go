package conformance

import (
	"errors"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
)

// State that contradicts itself (Harness.Damage): the backend reads it
// against what holds the truth, and never grants beyond the limit
// because of it, never stays stuck beyond a TTL, and a single bad queue
// entry or event is skipped and reported, not fatal for everyone.

// damage writes d into key's state or skips t.
func (s *suite) damage(t *testing.T, key governor.Key, lease string, d Damage) {
	t.Helper()
	if s.h.Damage == nil || !s.h.Damage(t, key, lease, d) {
		t.Skip("this store cannot hold this contradiction")
	}
}

// notGranted tries an acquire that must not be granted: refused, queued
// or a governor.ErrBackend naming the contradiction are all fine.
// shortReq is a fail-mode request of weight 1 under limit, with a 2s
// TTL: the damage tests let it expire by advancing the clock 3s.
func shortReq(key governor.Key, limit int) governor.Request {
	r := req(key, limit, 1, governor.Fail)
	r.TTL = 2 * time.Second
	return r
}

// cannotRenew fails t when lease id of key renews: what names the holder.
func cannotRenew(t *testing.T, b governor.Backend, key governor.Key, id, what string) {
	t.Helper()
	if _, err := b.Renew(ctxT(t), governor.Renewal{Key: key, ID: id, Secret: "", Token: 0, TTL: 0}); err == nil {
		t.Fatalf("%s renewed", what)
	}
}

// servedAfterExpiry lets every shortReq lease expire (3s), then checks
// the resource is served again: limit newcomers of weight 1 granted, the
// next refused.
func (s *suite) servedAfterExpiry(t *testing.T, b governor.Backend, key governor.Key, limit int) {
	t.Helper()
	s.h.Advance(t, 3*time.Second)
	for range limit {
		mustAcquire(t, b, shortReq(key, limit), governor.Granted)
	}
	mustAcquire(t, b, req(key, limit, 1, governor.Fail), governor.Refused)
}

func notGranted(t *testing.T, b governor.Backend, r governor.Request, what string) {
	t.Helper()
	res, err := b.Acquire(ctxT(t), r)
	if err != nil && !errors.Is(err, governor.ErrBackend) {
		t.Fatalf("%s: %v, want a refusal or ErrBackend", what, err)
	}
	if err == nil && res.Outcome == governor.Granted {
		t.Fatalf("%s: granted beyond the limit", what)
	}
}

// damagedUsed: a stored used of -5 beside two holders of a limit-2
// resource lets nobody else in; the count is repaired from the holders.
func (s *suite) damagedUsed(t *testing.T) {
	b, key := s.open(t, "heavy")
	a := req(key, 2, 1, governor.Fail)
	mustAcquire(t, b, a, governor.Granted)
	mustAcquire(t, b, req(key, 2, 1, governor.Fail), governor.Granted)
	s.damage(t, key, a.ID, DamageUsed)
	for i := 0; i < 7; i++ {
		notGranted(t, b, req(key, 2, 1, governor.Fail), "an acquire beside used=-5")
	}
	if st := mustStatus(t, b, key); st.Used != 2 || len(st.Holders) != 2 {
		t.Fatalf("after the repair: used %d, %d holders; want 2 and 2", st.Used, len(st.Holders))
	}
	release(t, b, key, a.ID)
	mustAcquire(t, b, req(key, 2, 1, governor.Fail), governor.Granted)
	mustAcquire(t, b, req(key, 2, 1, governor.Fail), governor.Refused)
}

// damagedNoState: holders left without the rest of their state are not
// forgotten: nobody is granted beside them, their holder cannot renew
// (its record is gone), and once they expire the resource is served.
func (s *suite) damagedNoState(t *testing.T) {
	b, key := s.open(t, "heavy")
	a := shortReq(key, 1)
	mustAcquire(t, b, a, governor.Granted)
	s.damage(t, key, a.ID, DamageNoState)
	r := shortReq(key, 1)
	notGranted(t, b, r, "an acquire beside holders without their state")
	cannotRenew(t, b, key, a.ID, "a holder without its record")
	s.servedAfterExpiry(t, b, key, 1)
}

// damagedNoHolders: a state left without its holders does not keep the
// resource busy for ever, and the lost holder learns at its renewal.
func (s *suite) damagedNoHolders(t *testing.T) {
	b, key := s.open(t, "heavy")
	a := shortReq(key, 1)
	mustAcquire(t, b, a, governor.Granted)
	s.damage(t, key, a.ID, DamageNoHolders)
	cannotRenew(t, b, key, a.ID, "a holder missing from the holders")
	s.servedAfterExpiry(t, b, key, 1)
	if st := mustStatus(t, b, key); st.Used != 1 || len(st.Holders) != 1 {
		t.Fatalf("after the repair: used %d, %d holders; want 1 and 1", st.Used, len(st.Holders))
	}
}

// damagedQueueEntry: an unreadable queue entry at the head is dropped
// with an event, and the waiter behind it is served.
func (s *suite) damagedQueueEntry(t *testing.T) {
	b, key := s.open(t, "heavy")
	a := req(key, 1, 1, governor.Fail)
	mustAcquire(t, b, a, governor.Granted)
	w1, w2 := req(key, 1, 1, governor.Wait), req(key, 1, 1, governor.Wait)
	w1.New, w2.New = true, true
	mustAcquire(t, b, w1, governor.Queued)
	mustAcquire(t, b, w2, governor.Queued)
	s.damage(t, key, w1.ID, DamageQueueEntry)
	release(t, b, key, a.ID)
	w2.New = false
	mustAcquire(t, b, w2, governor.Granted)
	evs, err := b.Events(ctxT(t), key, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Kind == eventkind.Dropped && e.LeaseID == w1.ID {
			return
		}
	}
	t.Fatalf("events = %+v; want %s dropped", evs, w1.ID)
}

// damagedEvent: an event that does not read is reported in its place;
// the others are still listed.
func (s *suite) damagedEvent(t *testing.T) {
	b, key := s.open(t, "heavy")
	a := req(key, 1, 1, governor.Fail)
	ra := mustAcquire(t, b, a, governor.Granted)
	if err := b.Record(ctxT(t), key, governor.Event{Kind: eventkind.Lost, LeaseID: a.ID, Token: ra.Token, Detail: "a test"}); err != nil {
		t.Fatal(err)
	}
	s.damage(t, key, a.ID, DamageEvent)
	evs, err := b.Events(ctxT(t), key, time.Time{})
	if err != nil {
		t.Fatalf("Events beside one unreadable event: %v", err)
	}
	var lost, unreadable int
	for _, e := range evs {
		switch e.Kind {
		case eventkind.Lost:
			lost++
		case eventkind.Unreadable:
			unreadable++
			if e.Detail == "" {
				t.Fatalf("unreadable event without a detail: %+v", e)
			}
		}
	}
	if lost != 1 || unreadable != 1 {
		t.Fatalf("events = %+v; want the lost one and one unreadable", evs)
	}
}

// damagedOverLimit: holders beyond the limit let nobody else in while
// they hold, and once they expire the resource is served again: not a
// wedge beyond their TTL.
func (s *suite) damagedOverLimit(t *testing.T) {
	b, key := s.open(t, "heavy")
	a := shortReq(key, 2)
	mustAcquire(t, b, a, governor.Granted)
	s.damage(t, key, a.ID, DamageOverLimit)
	r := shortReq(key, 2)
	notGranted(t, b, r, "an acquire beside holders beyond the limit")
	s.servedAfterExpiry(t, b, key, 2)
}

// lostDataHeldBack: after the store forgot everything, a waiter that was
// queued and re-queues is not granted beside the forgotten holder, which
// learns at its renewal; once the longest TTL has passed, the waiter is
// served with a higher token. A resource never used before is granted at
// once: only evidence of lost state holds grants back.
func (s *suite) lostDataHeldBack(t *testing.T) {
	if s.h.Lose == nil {
		t.Skip("this store cannot lose its data")
	}
	b, key := s.open(t, "heavy")
	a := shortReq(key, 1)
	ra := mustAcquire(t, b, a, governor.Granted)
	w := req(key, 1, 1, governor.Wait)
	w.TTL, w.New = a.TTL, true
	mustAcquire(t, b, w, governor.Queued)
	s.h.Lose(t)
	w.New = false
	res, err := b.Acquire(ctxT(t), w)
	if err != nil || res.Outcome != governor.Queued {
		t.Fatalf("a waiter re-queuing after the loss: %v %v, want queued (held back)", res.Outcome, err)
	}
	other := req(key, 1, 1, governor.Fail)
	other.TTL, other.New = a.TTL, true
	mustAcquire(t, s.h.Open(t), other, governor.Refused)
	if _, err := b.Renew(ctxT(t), governor.Renewal{Key: key, ID: a.ID, Secret: "", Token: 0, TTL: 0}); !errors.Is(err, governor.ErrLeaseLost) {
		t.Fatalf("the forgotten holder's renewal = %v, want ErrLeaseLost", err)
	}
	fresh := req(governor.Key{Project: project(), Resource: "heavy"}, 1, 1, governor.Fail)
	fresh.New = true
	mustAcquire(t, b, fresh, governor.Granted)
	evs, err := b.Events(ctxT(t), key, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) == 0 || evs[0].Kind != eventkind.Quarantine {
		t.Fatalf("events after the loss = %+v, want the quarantine first", evs)
	}
	s.h.Advance(t, 3*time.Second)
	rw := mustAcquire(t, b, w, governor.Granted)
	if rw.Token <= ra.Token {
		t.Fatalf("token after the loss %d, not above %d from before", rw.Token, ra.Token)
	}
}

// lostDataNewcomer: after the store forgot everything, a newcomer that
// arrives before anyone renews finds no state and is granted (nothing
// can tell it), but its fresh state does not hide the loss: the state
// is born anew (its incarnation), so the forgotten holder's renewal and
// the queued waiter's re-queue, both older than it, are evidence; grants
// are held back (a quarantine event) and the waiter is not granted
// beside the forgotten holder, even once the newcomer has released,
// until the longest TTL has passed.
func (s *suite) lostDataNewcomer(t *testing.T) {
	b, other, key, a, w, n, _ := s.lostUnderNewcomer(t)
	if _, err := b.Renew(ctxT(t), governor.Renewal{Key: key, ID: a.ID, Secret: "", Token: 0, TTL: 0}); !errors.Is(err, governor.ErrLeaseLost) {
		t.Fatalf("the forgotten holder's renewal = %v, want ErrLeaseLost", err)
	}
	release(t, other, key, n.ID)
	w.New = false
	if res, err := b.Acquire(ctxT(t), w); err != nil || res.Outcome != governor.Queued {
		t.Fatalf("the waiter re-queuing after the loss and the newcomer's release: %v %v, want queued (held back)", res.Outcome, err)
	}
	evs, err := b.Events(ctxT(t), key, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	quarantined := false
	for _, e := range evs {
		quarantined = quarantined || e.Kind == eventkind.Quarantine
	}
	if !quarantined {
		t.Fatalf("events after the loss = %+v, want a quarantine", evs)
	}
	s.h.Advance(t, 3*time.Second)
	mustAcquire(t, b, w, governor.Granted)
}

// lostUnderNewcomer is the start of the lost-data-newcomer cases: on b a
// holder a (TTL 2s, fencing token tok) and a queued waiter w, then the
// store loses its data, and a newcomer n, through another backend, is
// granted in the fresh state. A store that cannot lose its data skips t.
func (s *suite) lostUnderNewcomer(t *testing.T) (b, other governor.Backend, key governor.Key, a, w, n governor.Request, tok int64) {
	t.Helper()
	if s.h.Lose == nil {
		t.Skip("this store cannot lose its data")
	}
	b = s.h.Open(t)
	key = governor.Key{Project: project(), Resource: "heavy"}
	a = req(key, 1, 1, governor.Fail)
	a.TTL, a.New = 2*time.Second, true
	tok = mustAcquire(t, b, a, governor.Granted).Token
	w = req(key, 1, 1, governor.Wait)
	w.TTL, w.New = a.TTL, true
	mustAcquire(t, b, w, governor.Queued)
	s.h.Lose(t)
	s.h.Advance(t, 10*time.Millisecond) // a restart takes time
	other = s.elsewhere(t)              // a process of this machine would be held back (lostDataNewProcess)
	n = req(key, 1, 1, governor.Fail)
	n.TTL, n.New = a.TTL, true
	mustAcquire(t, other, n, governor.Granted)
	return b, other, key, a, w, n, tok
}

// lostDataWaiterNewcomer: as lostDataNewcomer, with the waiter alone
// telling: its re-queue into a state born after it was queued holds
// grants back although nobody renewed.
func (s *suite) lostDataWaiterNewcomer(t *testing.T) {
	b, other, key, a, w, n, _ := s.lostUnderNewcomer(t)
	release(t, other, key, n.ID)
	w.New = false
	if res, err := b.Acquire(ctxT(t), w); err != nil || res.Outcome != governor.Queued {
		t.Fatalf("the waiter re-queuing into a state born after it: %v %v, want queued (held back)", res.Outcome, err)
	}
	late := req(key, 1, 1, governor.Fail)
	late.TTL, late.New = a.TTL, true
	res := mustAcquire(t, other, late, governor.Refused)
	// The refusal says why (issue 25.12): a quarantine is in force.
	if !res.Status.Quarantine.After(res.Status.Now) {
		t.Fatalf("refused in a quarantine: Status.Quarantine %v, now %v; want the quarantine's end", res.Status.Quarantine, res.Status.Now)
	}
	if st := mustStatus(t, other, key); !st.Quarantine.After(st.Now) {
		t.Fatalf("Status in a quarantine: Quarantine %v, now %v; want its end", st.Quarantine, st.Now)
	}
}

// lostDataRenewByHandle: as lostDataNewcomer, with the forgotten holder
// renewed by its handle from a process that did not grant it (`governor
// renew` in a shell script): without the lease's token the renewal tells
// nothing (no quarantine), with it (Backend.Renew's token) it is the
// evidence the holder's own renewal is, although that backend never saw
// the lease and knows no TTL on the resource: grants are held back, even
// once the newcomer has released.
func (s *suite) lostDataRenewByHandle(t *testing.T) {
	_, other, key, a, _, n, tok := s.lostUnderNewcomer(t)
	if err := other.Release(ctxT(t), key, n.ID, ""); err != nil {
		t.Fatal(err)
	}
	quarantined := func() bool {
		t.Helper()
		evs, err := other.Events(ctxT(t), key, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Kind == eventkind.Quarantine {
				return true
			}
		}
		return false
	}
	if _, err := s.h.Open(t).Renew(ctxT(t), governor.Renewal{Key: key, ID: a.ID, Secret: a.Secret}); !errors.Is(err, governor.ErrLeaseLost) {
		t.Fatalf("the forgotten lease renewed by handle without its token = %v, want ErrLeaseLost", err)
	}
	if quarantined() {
		t.Fatal("a renewal without a token was taken as evidence of lost data")
	}
	if _, err := s.h.Open(t).Renew(ctxT(t), governor.Renewal{Key: key, ID: a.ID, Secret: a.Secret, Token: tok}); !errors.Is(err, governor.ErrLeaseLost) {
		t.Fatalf("the forgotten lease renewed by handle with its token = %v, want ErrLeaseLost", err)
	}
	if !quarantined() {
		t.Fatal("a renewal by handle with the lease's token into a state born after it: no quarantine")
	}
	late := req(key, 1, 1, governor.Fail)
	late.TTL, late.New = a.TTL, true
	if res := mustAcquire(t, other, late, governor.Refused); !res.Status.Quarantine.After(res.Status.Now) {
		t.Fatalf("refused in a quarantine: Status.Quarantine %v, now %v; want the quarantine's end", res.Status.Quarantine, res.Status.Now)
	}
}
