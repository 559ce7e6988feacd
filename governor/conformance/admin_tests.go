package conformance

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/internal/backendkit"
)

// wantWithdrawn checks that err is a *governor.WithdrawnError of kind by
// who, for waiter id.
func wantWithdrawn(t *testing.T, what string, err error, id, kind, who string) {
	t.Helper()
	var w *governor.WithdrawnError
	// An operator's action names who really acted, with the name given
	// as a label beside it ('IDENTITY as "bob"', issue 24.14).
	by := func() bool { return w.By == who || strings.HasSuffix(w.By, fmt.Sprintf(" as %q", who)) }
	if !errors.Is(err, governor.ErrWithdrawn) || !errors.As(err, &w) || w.Kind != kind || !by() || w.WaiterID != id ||
		!strings.Contains(err.Error(), who) {
		t.Fatalf("%s: %v; want a *WithdrawnError of kind %s by %q for waiter %s", what, err, kind, who, id)
	}
}

// lastEvent returns the last event of kind, failing when there is none.
func lastEvent(t *testing.T, b governor.Backend, key governor.Key, kind string) governor.Event {
	t.Helper()
	evs, err := b.Events(ctxT(t), key, time.Time{})
	if err != nil {
		t.Fatalf("Events: %v", err)
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == kind {
			return evs[i]
		}
	}
	t.Fatalf("no %s event among %+v", kind, evs)
	return governor.Event{}
}

// withdraw: a withdrawn waiter leaves the queue, the room goes on, an
// event names who, and the waiter's next poll learns who and why instead
// of queuing again.
func (s *suite) withdraw(t *testing.T) {
	b, key := s.open(t, "queue")
	h := req(key, 1, 1, governor.Fail)
	mustAcquire(t, b, h, governor.Granted)
	w1, w2, w3 := req(key, 1, 1, governor.Wait), req(key, 1, 1, governor.Wait), req(key, 1, 1, governor.Wait)
	for _, w := range []*governor.Request{&w1, &w2, &w3} {
		mustAcquire(t, b, *w, governor.Queued)
		w.New = false
	}
	why := governor.Action{Kind: eventkind.Cancelled, By: "alice (ops)", Detail: "cancelled by an operator"}
	gone, err := withdrawn(b.Admin(ctxT(t), key, withdrawal(why, []string{w3.ID, "unknown", w1.ID, h.ID})))
	if err != nil {
		t.Fatalf("Withdraw: %v", err)
	}
	if len(gone) != 2 || gone[0] != w1.ID || gone[1] != w3.ID {
		t.Fatalf("Withdraw = %v, want [%s %s] (queued ones, in queue order; a holder and an unknown id skipped)", gone, w1.ID, w3.ID)
	}
	st := mustStatus(t, b, key)
	if len(st.Waiters) != 1 || st.Waiters[0].ID != w2.ID || len(st.Holders) != 1 {
		t.Fatalf("after Withdraw: waiters %+v holders %d; want only %s waiting and the holder kept", st.Waiters, len(st.Holders), w2.ID)
	}
	for _, w := range []governor.Request{w1, w3} {
		_, err := b.Acquire(ctxT(t), w)
		wantWithdrawn(t, "next poll of a withdrawn waiter", err, w.ID, eventkind.Cancelled, why.By)
	}
	if st := mustStatus(t, b, key); len(st.Waiters) != 1 {
		t.Fatalf("a withdrawn waiter queued again: %+v", st.Waiters)
	}
	if res := mustAcquire(t, b, w2, governor.Queued); res.Position != 1 {
		t.Fatalf("the waiter left moved to %d, want 1", res.Position)
	}
	e := lastEvent(t, b, key, eventkind.Cancelled)
	if e.By != why.By || e.Detail != why.Detail || (e.LeaseID != w1.ID && e.LeaseID != w3.ID) {
		t.Fatalf("cancelled event %+v; want by %q naming a withdrawn waiter", e, why.By)
	}
	// Withdrawing the head hands the room on at once.
	release(t, b, key, h.ID)
	w4 := req(key, 1, 1, governor.Wait)
	mustAcquire(t, b, w4, governor.Queued)
	w4.New = false
	// w2 was granted by the release: it is no longer a waiter.
	if gone, err := withdrawn(b.Admin(ctxT(t), key, withdrawal(why, []string{w2.ID}))); err != nil || len(gone) != 0 {
		t.Fatalf("Withdraw of a granted waiter = %v, %v; want nothing withdrawn", gone, err)
	}
	mustAcquire(t, b, w2, governor.Granted)
	// No state: nothing, no error.
	none := governor.Key{Project: project(), Resource: "none"}
	if gone, err := withdrawn(b.Admin(ctxT(t), none, withdrawal(why, []string{"x"}))); err != nil || len(gone) != 0 {
		t.Fatalf("Withdraw on a resource without state = %v, %v", gone, err)
	}
	if names, _ := b.Resources(ctxT(t), none.Project); len(names) != 0 {
		t.Fatalf("Withdraw made state: %v", names)
	}
}

// governorCancel: Governor.Cancel ends a waiting Acquire in another
// process with a *WithdrawnError naming who cancelled it, by waiter id or
// by session; bad selectors change nothing.
func (s *suite) governorCancel(t *testing.T) {
	proj := project()
	holder := newGovernor(t, s.h.Open(t), governor.Options{Project: proj, Session: "holder"})
	waiter := newGovernor(t, s.h.Open(t), governor.Options{Project: proj, Session: "batch-7"})
	admin := newGovernor(t, s.h.Open(t), governor.Options{Project: proj, Session: "admin"})
	ctx := ctxT(t)
	l, err := holder.Acquire(ctx, "gpu", governor.AcquireOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	wait := func() chan error {
		done := make(chan error, 1)
		go func() {
			l, err := waiter.Acquire(ctx, "gpu", governor.AcquireOptions{Limit: 1, Mode: governor.Wait})
			if l != nil {
				l.Release()
			}
			done <- err
		}()
		return done
	}
	queued := func(n int) governor.Status {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			st, err := admin.Status(ctx, "gpu")
			if err == nil && len(st.Waiters) == n {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("waiters = %+v (err %v), want %d", st.Waiters, err, n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	done := wait()
	st := queued(1)
	if _, err := admin.Cancel(ctx, "gpu", governor.CancelSelector{}, ""); !errors.Is(err, governor.ErrInvalid) {
		t.Fatalf("Cancel with no selector: %v, want ErrInvalid", err)
	}
	if _, err := admin.Cancel(ctx, "gpu", governor.CancelSelector{WaiterID: "x", Session: "y"}, ""); !errors.Is(err, governor.ErrInvalid) {
		t.Fatalf("Cancel with both selectors: %v, want ErrInvalid", err)
	}
	if _, err := admin.Cancel(ctx, "gpu", governor.CancelSelector{WaiterID: "nobody"}, ""); !errors.Is(err, governor.ErrNoWaiter) {
		t.Fatalf("Cancel of an unknown waiter: %v, want ErrNoWaiter", err)
	}
	if _, err := admin.Cancel(ctx, "gpu", governor.CancelSelector{Session: "batch-7"}, "bad\x1bby"); !errors.Is(err, governor.ErrInvalid) {
		t.Fatalf("Cancel by a name with a control character: %v, want ErrInvalid", err)
	}
	queued(1) // nothing changed
	gone, err := admin.Cancel(ctx, "gpu", governor.CancelSelector{WaiterID: st.Waiters[0].ID}, "bob")
	if err != nil || len(gone) != 1 || gone[0].ID != st.Waiters[0].ID || gone[0].Session != "batch-7" {
		t.Fatalf("Cancel = %+v, %v", gone, err)
	}
	select {
	case err := <-done:
		// bob is a label beside who acted (issue 24.14).
		wantWithdrawn(t, "the cancelled acquire", err, st.Waiters[0].ID, eventkind.Cancelled, admin.Identity()+` as "bob"`)
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled acquire did not end")
	}
	// By session, with this Governor's identity as the actor.
	d1, d2 := wait(), wait()
	queued(2)
	gone, err = admin.Cancel(ctx, "gpu", governor.CancelSelector{Session: "batch-7"}, "")
	if err != nil || len(gone) != 2 {
		t.Fatalf("Cancel by session = %+v, %v; want both waiters", gone, err)
	}
	for _, d := range []chan error{d1, d2} {
		select {
		case err := <-d:
			var w *governor.WithdrawnError
			if !errors.As(err, &w) || w.By != admin.Identity() || !strings.Contains(w.By, "session admin") {
				t.Fatalf("cancelled by session: %v; want a *WithdrawnError by %q", err, admin.Identity())
			}
		case <-time.After(30 * time.Second):
			t.Fatal("an acquire cancelled by session did not end")
		}
	}
	if st := queued(0); st.Used != 1 {
		t.Fatalf("cancels touched the holder: %+v", st)
	}
}

// pause: a paused resource grants nothing new, by any path; holders
// finish and waiters keep their place; resume serves the queue at once.
func (s *suite) pause(t *testing.T) {
	b, key := s.open(t, "deploy")
	h := req(key, 2, 1, governor.Fail)
	mustAcquire(t, b, h, governor.Granted)
	changed, err := actChanged(b.Admin(ctxT(t), key, governor.Action{Kind: pauseKind(true), By: "carol"}))
	if err != nil || !changed {
		t.Fatalf("SetPaused(true) = %v, %v", changed, err)
	}
	if changed, err := actChanged(b.Admin(ctxT(t), key, governor.Action{Kind: pauseKind(true), By: "dave"})); err != nil || changed {
		t.Fatalf("pausing a paused resource = %v, %v; want no change", changed, err)
	}
	st := mustStatus(t, b, key)
	if st.Paused == nil || st.Paused.By != "carol" || st.Paused.Since.IsZero() {
		t.Fatalf("Status.Paused = %+v, want by carol", st.Paused)
	}
	// Room for one more, but paused: refused (New: the fast path) or
	// queued.
	fresh1 := req(key, 2, 1, governor.Fail)
	fresh1.New = true
	mustAcquire(t, b, fresh1, governor.Refused)
	w1, w2 := req(key, 2, 1, governor.Wait), req(key, 2, 1, governor.Wait)
	mustAcquire(t, b, w1, governor.Queued)
	mustAcquire(t, b, w2, governor.Queued)
	w1.New, w2.New = false, false
	// The holder renews and releases as ever; its room is not handed on.
	if _, err := b.Renew(ctxT(t), governor.Renewal{Key: key, ID: h.ID, Secret: "", Token: 0, TTL: 0}); err != nil {
		t.Fatalf("Renew while paused: %v", err)
	}
	release(t, b, key, h.ID)
	st = mustStatus(t, b, key)
	if st.Used != 0 || len(st.Waiters) != 2 || st.Waiters[0].ID != w1.ID {
		t.Fatalf("paused: used %d, waiters %+v; want nothing granted, both waiting in order", st.Used, st.Waiters)
	}
	if res := mustAcquire(t, b, w2, governor.Queued); res.Position != 2 {
		t.Fatalf("paused waiter moved to %d", res.Position)
	}
	e := lastEvent(t, b, key, eventkind.Paused)
	if e.By != "carol" {
		t.Fatalf("paused event %+v, want by carol", e)
	}
	// A Governor's refusal says the resource is paused, and by whom.
	g := newGovernor(t, s.h.Open(t), governor.Options{Project: key.Project})
	_, err = g.Acquire(ctxT(t), key.Resource, governor.AcquireOptions{Limit: 2})
	var busy *governor.BusyError
	if !errors.As(err, &busy) || busy.Status.Paused == nil || busy.Status.Paused.By != "carol" || !strings.Contains(err.Error(), "paused by carol") {
		t.Fatalf("Acquire on a paused resource with room: %v; want a *BusyError saying paused by carol", err)
	}
	// Paused resources are never forgotten.
	if gone, err := b.Forget(ctxT(t), key, 0); err != nil || gone {
		t.Fatalf("Forget of a paused resource = %v, %v", gone, err)
	}
	changed, err = actChanged(b.Admin(ctxT(t), key, governor.Action{Kind: pauseKind(false), By: "erin"}))
	if err != nil || !changed {
		t.Fatalf("SetPaused(false) = %v, %v", changed, err)
	}
	// Resume handed both slots on at once: the waiters find their grants.
	mustAcquire(t, b, w1, governor.Granted)
	mustAcquire(t, b, w2, governor.Granted)
	if st := mustStatus(t, b, key); st.Paused != nil || st.Used != 2 {
		t.Fatalf("after resume: %+v", st)
	}
	if e := lastEvent(t, b, key, eventkind.Resumed); e.By != "erin" {
		t.Fatalf("resumed event %+v, want by erin", e)
	}
	if changed, err := actChanged(b.Admin(ctxT(t), key, governor.Action{Kind: pauseKind(false), By: "erin"})); err != nil || changed {
		t.Fatalf("resuming a running resource = %v, %v; want no change", changed, err)
	}
	// The takeover of an expired lease is new room: refused while paused.
	exp := governor.Key{Project: project(), Resource: "expiring"}
	short := req(exp, 1, 1, governor.Fail)
	short.TTL = 200 * time.Millisecond
	mustAcquire(t, b, short, governor.Granted)
	if _, err := actChanged(b.Admin(ctxT(t), exp, governor.Action{Kind: pauseKind(true), By: "carol"})); err != nil {
		t.Fatal(err)
	}
	s.h.Advance(t, 300*time.Millisecond)
	if res, err := b.Acquire(ctxT(t), takeover(req(exp, 1, 1, governor.Fail), exp, short.ID)); err != nil || res.Outcome != governor.Refused {
		t.Fatalf("takeover of an expired lease while paused = %v, %v; want Refused", res.Outcome, err)
	}
	if _, err := actChanged(b.Admin(ctxT(t), exp, governor.Action{Kind: pauseKind(false), By: "carol"})); err != nil {
		t.Fatal(err)
	}
	if res, err := b.Acquire(ctxT(t), takeover(req(exp, 1, 1, governor.Fail), exp, short.ID)); err != nil || res.Outcome != governor.Granted {
		t.Fatalf("takeover of an expired lease after resume = %v, %v; want Granted", res.Outcome, err)
	}
	// Pausing a resource never used makes it, listed, paused.
	fresh := governor.Key{Project: project(), Resource: "fresh"}
	if _, err := actChanged(b.Admin(ctxT(t), fresh, governor.Action{Kind: pauseKind(true), By: "carol"})); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, b, req(fresh, 1, 1, governor.Fail), governor.Refused)
	if names, err := b.Resources(ctxT(t), fresh.Project); err != nil || len(names) != 1 {
		t.Fatalf("Resources after pausing a new resource = %v, %v", names, err)
	}
}

// liveLimit: a limit set live wins over what processes ask for; raised,
// the room goes to the queue at once; lowered below the use, nothing is
// granted until the use falls under it; cleared, back to what processes
// ask for.
func (s *suite) liveLimit(t *testing.T) {
	b, key := s.open(t, "api")
	h1, h2 := req(key, 2, 1, governor.Fail), req(key, 2, 1, governor.Fail)
	mustAcquire(t, b, h1, governor.Granted)
	mustAcquire(t, b, h2, governor.Granted)
	w := req(key, 2, 1, governor.Wait)
	mustAcquire(t, b, w, governor.Queued)
	w.New = false
	// Raised: the waiter is granted at once, by the hand-off.
	mustSetLimit(t, b, key, 3, "ops")
	st := mustStatus(t, b, key)
	if st.Limit != 3 || st.LiveLimit == nil || st.LiveLimit.Limit != 3 || st.LiveLimit.By != "ops" || st.LiveLimit.At.IsZero() {
		t.Fatalf("after SetLimit(3): limit %d live %+v", st.Limit, st.LiveLimit)
	}
	if st.Used != 3 || len(st.Waiters) != 0 {
		t.Fatalf("raising the limit did not hand the room on: used %d waiters %d", st.Used, len(st.Waiters))
	}
	mustAcquire(t, b, w, governor.Granted)
	// A process asking for 2 meets the live 3: drift, not a change.
	mustAcquire(t, b, req(key, 2, 1, governor.Fail), governor.Refused)
	if st := mustStatus(t, b, key); st.Limit != 3 || st.DriftLimit != 2 {
		t.Fatalf("asked 2 under live 3: limit %d drift %d; want 3, 2", st.Limit, st.DriftLimit)
	}
	// Lowered below the use: holders keep their leases, nothing granted
	// until the use falls under 1.
	mustSetLimit(t, b, key, 1, "ops")
	for _, id := range []string{h1.ID, h2.ID, w.ID} {
		if _, err := b.Renew(ctxT(t), governor.Renewal{Key: key, ID: id, Secret: "", Token: 0, TTL: 0}); err != nil {
			t.Fatalf("a holder lost its lease when the limit was lowered: %v", err)
		}
	}
	w2 := req(key, 1, 1, governor.Wait)
	mustAcquire(t, b, w2, governor.Queued)
	w2.New = false
	for _, id := range []string{h1.ID, h2.ID} {
		release(t, b, key, id)
		if st := mustStatus(t, b, key); len(st.Waiters) != 1 {
			t.Fatalf("granted with use %d at live limit 1", st.Used)
		}
	}
	release(t, b, key, w.ID)
	mustAcquire(t, b, w2, governor.Granted)
	// Forget keeps a resource with a live limit.
	release(t, b, key, w2.ID)
	for i := 0; i < 2; i++ {
		if gone, err := b.Forget(ctxT(t), key, 0); err != nil || gone {
			t.Fatalf("Forget of a resource with a live limit = %v, %v", gone, err)
		}
	}
	// Cleared: back to the limit a process asked for meanwhile (2).
	mustSetLimit(t, b, key, 0, "ops")
	if st := mustStatus(t, b, key); st.Limit != 2 || st.LiveLimit != nil || st.DriftLimit != 0 {
		t.Fatalf("after clearing: limit %d live %+v drift %d; want 2, none, 0", st.Limit, st.LiveLimit, st.DriftLimit)
	}
	if e := lastEvent(t, b, key, eventkind.Limit); e.By != "ops" || !strings.Contains(e.Detail, "cleared") {
		t.Fatalf("limit event %+v", e)
	}
	// Clearing nothing on a resource without state makes none.
	none := governor.Key{Project: project(), Resource: "none"}
	mustSetLimit(t, b, none, 0, "ops")
	if names, _ := b.Resources(ctxT(t), none.Project); len(names) != 0 {
		t.Fatalf("clearing no live limit made state: %v", names)
	}
	// A live limit on a resource never used is the limit it starts with.
	mustSetLimit(t, b, none, 1, "ops")
	mustAcquire(t, b, req(none, 4, 1, governor.Fail), governor.Granted)
	mustAcquire(t, b, req(none, 4, 1, governor.Fail), governor.Refused)
}

// holds: the backend records hold durations on release, expiry, reclaim
// and takeover, at most backendkit.HoldHistory of them.
func (s *suite) holds(t *testing.T) {
	b, key := s.open(t, "holds")
	if st := mustStatus(t, b, key); len(st.Holds) != 0 {
		t.Fatalf("holds without history: %v", st.Holds)
	}
	r := req(key, 1, 1, governor.Fail)
	mustAcquire(t, b, r, governor.Granted)
	s.h.Advance(t, 20*time.Millisecond)
	release(t, b, key, r.ID)
	st := mustStatus(t, b, key)
	if len(st.Holds) != 1 || st.Holds[0] < 10*time.Millisecond {
		t.Fatalf("holds after one release of ~20ms: %v", st.Holds)
	}
	r = req(key, 1, 1, governor.Fail)
	mustAcquire(t, b, r, governor.Granted)
	if ok, err := actChanged(b.Admin(ctxT(t), key, governor.Action{Kind: eventkind.Reclaimed, IDs: []string{r.ID}, Token: mustStatus(t, b, key).Holders[0].Token})); err != nil || !ok {
		t.Fatalf("Reclaim = %v, %v", ok, err)
	}
	if st := mustStatus(t, b, key); len(st.Holds) != 2 {
		t.Fatalf("holds after a reclaim: %v", st.Holds)
	}
	n := backendkit.HoldHistory + 3
	if s.h.RealTime {
		n = backendkit.HoldHistory + 1
	}
	for i := 0; i < n; i++ {
		r := req(key, 1, 1, governor.Fail)
		mustAcquire(t, b, r, governor.Granted)
		release(t, b, key, r.ID)
	}
	if st := mustStatus(t, b, key); len(st.Holds) != backendkit.HoldHistory {
		t.Fatalf("%d holds kept, want %d", len(st.Holds), backendkit.HoldHistory)
	}
}
