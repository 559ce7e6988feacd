package conformance

import (
	"testing"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
)

// newReq is req as Governor.Acquire first sends it (Request.New: the
// scripts' fast path may take it).
func newReq(key governor.Key, limit, weight int, mode governor.Mode) governor.Request {
	r := req(key, limit, weight, mode)
	r.New = true
	return r
}

// grantLimit: a grant tells the limit in force at it (Result.Limit):
// a live limit, else the adaptive limit of a resource adaptive under the
// maximum asked, else the stored limit while the resource is in use,
// else the one asked (the tool's notes word it: internal/acquire's
// inForce). In the plain
// case, under a live limit, an adaptive limit and another process's
// stored limit (drift), for a grant claimed by a waiter too. And a live
// limit cleared back to the maximum of an adaptive resource leaves the
// adaptive limit in force: no more are granted than it.
func (s *suite) grantLimit(t *testing.T) {
	b := s.h.Open(t)
	p := project()
	granted := func(r governor.Request, want int) {
		t.Helper()
		res := mustAcquire(t, b, r, governor.Granted)
		if res.Limit != want {
			t.Fatalf("%s asking for %d: granted under limit %d; want %d, the limit in force",
				r.Key.Resource, r.Limit, res.Limit, want)
		}
	}

	plain := governor.Key{Project: p, Resource: "plain"}
	granted(newReq(plain, 3, 1, governor.Fail), 3)

	live := governor.Key{Project: p, Resource: "live"}
	if err := actionErr(b.Admin(ctxT(t), live, governor.Action{Kind: eventkind.Limit, Limit: 2, By: "ops"})); err != nil {
		t.Fatal(err)
	}
	granted(newReq(live, 5, 1, governor.Fail), 2)
	granted(newReq(live, 2, 1, governor.Fail), 2)

	adaptive := governor.Key{Project: p, Resource: "provider:adaptive"}
	granted(newReq(adaptive, 8, 1, governor.Fail), 8)
	if _, err := b.Adapt(ctxT(t), adaptive, governor.AdaptRequest{Max: 8, Min: 1, IncreaseEvery: 3, Signal: true}); err != nil {
		t.Fatal(err)
	}
	granted(newReq(adaptive, 8, 1, governor.Fail), 4)

	// Another process's limit stays while the resource is in use; a
	// waiter granted by the hand-off claims under it.
	stored := governor.Key{Project: p, Resource: "stored"}
	h := newReq(stored, 2, 2, governor.Fail)
	granted(h, 2)
	w := newReq(stored, 4, 1, governor.Wait)
	mustAcquire(t, b, w, governor.Queued)
	w.New = false
	if err := b.Release(ctxT(t), stored, h.ID, ""); err != nil {
		t.Fatal(err)
	}
	granted(w, 2)
	granted(newReq(stored, 4, 1, governor.Fail), 2)

	cleared := governor.Key{Project: p, Resource: "provider:cleared"}
	h = newReq(cleared, 4, 1, governor.Fail)
	granted(h, 4)
	if _, err := b.Adapt(ctxT(t), cleared, governor.AdaptRequest{Max: 4, Min: 1, IncreaseEvery: 3, Signal: true}); err != nil {
		t.Fatal(err)
	}
	if err := actionErr(b.Admin(ctxT(t), cleared, governor.Action{Kind: eventkind.Limit, Limit: 3, By: "ops"})); err != nil {
		t.Fatal(err)
	}
	if err := actionErr(b.Admin(ctxT(t), cleared, governor.Action{Kind: eventkind.Limit, Back: 4, By: "ops"})); err != nil {
		t.Fatal(err)
	}
	granted(newReq(cleared, 4, 1, governor.Fail), 2)
	mustAcquire(t, b, newReq(cleared, 4, 1, governor.Fail), governor.Refused)
}
