package conformance

import (
	"testing"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
)

// exclusiveReq is an exclusive request as Governor.Acquire makes one: the
// weight is the limit asked for, and Exclusive asks the backend for the
// limit in force at grant.
func exclusiveReq(key governor.Key, limit int, mode governor.Mode) governor.Request {
	r := req(key, limit, limit, mode)
	r.Exclusive, r.New = true, true
	return r
}

// holderWeight is the weight status shows for lease id (0: not a holder).
func holderWeight(t *testing.T, b governor.Backend, key governor.Key, id string) int {
	t.Helper()
	for _, h := range mustStatus(t, b, key).Holders {
		if h.LeaseID == id {
			return h.Weight
		}
	}
	return 0
}

// exclusiveLiveLimit: after a live limit above the one asked for, an
// exclusive acquire takes the whole limit in force and excludes everyone;
// under a live limit below it, it is not too heavy (a plain exec run
// under `limit run:join 1`).
func (s *suite) exclusiveLiveLimit(t *testing.T) {
	b, key := s.open(t, "ex")
	mustSetLimit(t, b, key, 4, "ops")
	x := exclusiveReq(key, 2, governor.Fail)
	mustAcquire(t, b, x, governor.Granted)
	if w := holderWeight(t, b, key, x.ID); w != 4 {
		t.Fatalf("exclusive under live limit 4 holds %d; want 4", w)
	}
	mustAcquire(t, b, req(key, 2, 1, governor.Fail), governor.Refused)
	mustAcquire(t, b, req(key, 4, 1, governor.Fail), governor.Refused)

	low := governor.Key{Project: project(), Resource: "run:join"}
	mustSetLimit(t, b, low, 1, "ops")
	y := exclusiveReq(low, 2, governor.Fail)
	mustAcquire(t, b, y, governor.Granted)
	if w := holderWeight(t, b, low, y.ID); w != 1 {
		t.Fatalf("exclusive under live limit 1 holds %d; want 1", w)
	}
}

// exclusiveDrift: under a limit in force above the one asked for (the
// first stored wins), an exclusive acquire (a plain exec run's every join
// slot) takes the limit in force: a joiner is not let in beside it.
func (s *suite) exclusiveDrift(t *testing.T) {
	b, key := s.open(t, "run:join")
	first := req(key, 10, 1, governor.Fail)
	mustAcquire(t, b, first, governor.Granted)
	x := exclusiveReq(key, 2, governor.Wait)
	mustAcquire(t, b, x, governor.Queued)
	x.New = false
	release(t, b, key, first.ID)
	if w := holderWeight(t, b, key, x.ID); w != 10 {
		t.Fatalf("exclusive under limit in force 10 (asked 2) holds %d; want 10", w)
	}
	mustAcquire(t, b, req(key, 10, 1, governor.Fail), governor.Refused)
}

// exclusiveQueuedResolvedAtGrant: a queued exclusive waiter takes the
// limit in force when it is granted, not the one when it queued.
func (s *suite) exclusiveQueuedResolvedAtGrant(t *testing.T) {
	b, key := s.open(t, "ex")
	h := req(key, 2, 1, governor.Fail)
	mustAcquire(t, b, h, governor.Granted)
	x := exclusiveReq(key, 2, governor.Wait)
	mustAcquire(t, b, x, governor.Queued)
	x.New = false
	if st := mustStatus(t, b, key); len(st.Waiters) != 1 || st.Waiters[0].Weight != 2 {
		t.Fatalf("waiters %+v; want the exclusive one, of the limit in force (2)", st.Waiters)
	}
	mustSetLimit(t, b, key, 3, "ops")
	release(t, b, key, h.ID)
	mustAcquire(t, b, x, governor.Granted)
	if w := holderWeight(t, b, key, x.ID); w != 3 {
		t.Fatalf("exclusive waiter granted after the limit went to 3 holds %d; want 3", w)
	}
	mustAcquire(t, b, req(key, 2, 1, governor.Fail), governor.Refused)
}

// clearLimitToConfigured: clearing a live limit with the configured one
// (Admin of eventkind.Limit with Back) puts it in force at once, not when the resource is next
// idle (issue 25.5): the next release hands off under it.
func (s *suite) clearLimitToConfigured(t *testing.T) {
	b := s.h.Open(t)
	key := governor.Key{Project: project(), Resource: "api"}
	h1 := req(key, 1, 1, governor.Fail)
	mustAcquire(t, b, h1, governor.Granted)
	mustSetLimit(t, b, key, 3, "ops")
	h2, h3 := req(key, 3, 1, governor.Fail), req(key, 3, 1, governor.Fail)
	mustAcquire(t, b, h2, governor.Granted)
	mustAcquire(t, b, h3, governor.Granted)
	w := req(key, 3, 1, governor.Wait) // asks for the live limit: no drift to go back to
	mustAcquire(t, b, w, governor.Queued)
	w.New = false
	if err := actionErr(b.Admin(ctxT(t), key, governor.Action{Kind: eventkind.Limit, Back: 1, By: "ops"})); err != nil {
		t.Fatal(err)
	}
	if st := mustStatus(t, b, key); st.Limit != 1 || st.LiveLimit != nil {
		t.Fatalf("cleared back to the configured 1: limit %d live %+v", st.Limit, st.LiveLimit)
	}
	for _, h := range []governor.Request{h1, h2} {
		release(t, b, key, h.ID)
		if st := mustStatus(t, b, key); len(st.Waiters) != 1 {
			t.Fatalf("granted with use %d under the configured limit 1", st.Used)
		}
	}
	release(t, b, key, h3.ID)
	mustAcquire(t, b, w, governor.Granted)
}
