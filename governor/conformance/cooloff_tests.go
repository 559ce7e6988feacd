package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
)

// near tells whether a and b are the same backend instant as two calls
// reported it: a backend that maps its own clock to the wall clock (the
// file backend's boot clock) may report it shifted by the wall time
// between the calls. Anything off by less than half the cool-off d is
// taken for the same end; a shortened or missing one is off by more.
func near(a, b time.Time, d time.Duration) bool {
	diff := a.Sub(b)
	return !a.IsZero() && !b.IsZero() && diff > -d/2 && diff < d/2
}

// coolOffLength is a cool-off the suite can outwait (waiters sleep on
// the wall clock towards its end, even on a store whose clock stands
// still), long enough on real time that every step before its end runs
// inside it.
func (s *suite) coolOffLength() time.Duration {
	if s.h.RealTime {
		return 1500 * time.Millisecond
	}
	return time.Second
}

// coolOffHoldsBack: a cool-off grants nothing new — a Fail acquire is
// refused, a Wait acquire queues, a release hands nothing on, a rate
// reservation of the same name is denied for the time left — while
// holders keep their leases; every reply says until when. It is never
// shortened, is recorded as an event, and once it ends the queue is
// served in FIFO order: the second waiter re-checking first does not
// pass the first.
func (s *suite) coolOffHoldsBack(t *testing.T) {
	b := s.h.Open(t)
	key := governor.Key{Project: project(), Resource: "provider:fake"}
	holder := req(key, 1, 1, governor.Wait)
	mustAcquire(t, b, holder, governor.Granted)
	d := s.coolOffLength()
	end, err := until(b.Admin(ctxT(t), key, governor.Action{Kind: eventkind.CoolOff, For: d, Detail: "HTTP 429 from test"}))
	if err != nil {
		t.Fatalf("CoolOff: %v", err)
	}
	if st := mustStatus(t, b, key); !near(st.CoolOff, end, d) || !end.After(st.Now) || end.Sub(st.Now) > d {
		t.Fatalf("Status.CoolOff = %v (now %v), CoolOff returned %v for %v", st.CoolOff, st.Now, end, d)
	}
	if again, err := until(b.Admin(ctxT(t), key, governor.Action{Kind: eventkind.CoolOff, For: time.Millisecond, Detail: "a shorter one"})); err != nil || !near(again, end, d) {
		t.Fatalf("a shorter cool-off: %v, %v; want the one in force kept, ending %v", again, err, end)
	}
	if _, err := b.Renew(ctxT(t), governor.Renewal{Key: key, ID: holder.ID, Secret: "", Token: 0, TTL: 0}); err != nil {
		t.Fatalf("a holder's renewal during a cool-off: %v", err)
	}
	first, second := req(key, 1, 1, governor.Wait), req(key, 1, 1, governor.Wait)
	if res := mustAcquire(t, b, first, governor.Queued); !near(res.Status.CoolOff, end, d) {
		t.Fatalf("queued reply's CoolOff = %v, want %v", res.Status.CoolOff, end)
	}
	mustAcquire(t, b, second, governor.Queued)
	release(t, b, key, holder.ID)
	refused := mustAcquire(t, b, req(key, 1, 1, governor.Fail), governor.Refused)
	if !near(refused.Status.CoolOff, end, d) || refused.Status.Used != 0 {
		t.Fatalf("refusal with the slot free: status %+v; want its CoolOff %v", refused.Status, end)
	}
	busy := &governor.BusyError{Resource: key.Resource, Status: refused.Status}
	if !strings.Contains(busy.Error(), "cooling off after a rate-limit signal until ") {
		t.Fatalf("busy error %q does not say it is a cool-off and until when", busy)
	}
	second.New = false
	mustAcquire(t, b, second, governor.Queued) // nothing handed on
	rr := governor.RateRequest{Key: key, Requests: governor.RateLimit{Rate: 1000, Period: time.Second}, NRequests: 1}
	res, err := asFull(t, b).RateReserve(ctxT(t), rr)
	if err != nil || res.Allowed || res.RetryAfter <= 0 || res.RetryAfter > d || !near(res.CoolOff, end, d) {
		t.Fatalf("rate reservation during a cool-off: %+v, %v; want denied for at most %v, CoolOff %v", res, err, d, end)
	}
	evs, err := b.Events(ctxT(t), key, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, e := range evs {
		if e.Kind == eventkind.CoolOff {
			n++
			if !strings.Contains(e.Detail, "HTTP 429 from test") {
				t.Errorf("cool-off event detail %q does not give the reason", e.Detail)
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d cool-off events, want 1 (the shorter one changed nothing): %+v", n, evs)
	}

	s.h.Advance(t, d+10*time.Millisecond)
	// The second waiter re-checks first: the first is served first.
	if res := mustAcquire(t, b, second, governor.Queued); !res.Status.CoolOff.IsZero() {
		t.Fatalf("after the cool-off, the reply still has CoolOff %v", res.Status.CoolOff)
	}
	first.New = false
	mustAcquire(t, b, first, governor.Granted)
	if st := mustStatus(t, b, key); !st.CoolOff.IsZero() {
		t.Fatalf("Status.CoolOff = %v after its end", st.CoolOff)
	}
	if res, err := asFull(t, b).RateReserve(ctxT(t), rr); err != nil || !res.Allowed {
		t.Fatalf("rate reservation after the cool-off: %+v, %v", res, err)
	}
}

// coolOffProvider: a RateLimited error from one process's Provider.Do
// pauses the provider for every process: another process's fail-mode
// acquire is refused saying so, its Do waits (a provider with slots and
// one with none), and both go on once the cool-off ends.
func (s *suite) coolOffProvider(t *testing.T) {
	p := project()
	g1 := newGovernor(t, s.h.Open(t), governor.Options{Project: p})
	g2 := newGovernor(t, s.h.Open(t), governor.Options{Project: p})
	d := s.coolOffLength()
	signal := governor.RateLimited{RetryAfter: d, Reason: "HTTP 429"}
	for _, limits := range []governor.ProviderLimits{{MaxConcurrency: 2}, {}} {
		name := "fake" + id()[:4]
		err := g1.Provider(name, limits).Do(ctxT(t), 0, func(context.Context) (int64, error) { return 0, signal })
		var rl governor.RateLimited
		if !errors.As(err, &rl) || rl.RetryAfter != d {
			t.Fatalf("Do returned %v; want the function's RateLimited", err)
		}
		res := governor.ProviderResource(name)
		if limits.MaxConcurrency > 0 {
			_, err := g2.Acquire(ctxT(t), res, governor.AcquireOptions{Limit: 2})
			var busy *governor.BusyError
			if !errors.As(err, &busy) || busy.Status.CoolOff.IsZero() || !strings.Contains(err.Error(), "cooling off") {
				t.Fatalf("fail-mode acquire during the cool-off: %v; want busy, cooling off until ...", err)
			}
		}
		var mu sync.Mutex
		ran := false
		done := make(chan error, 1)
		go func() {
			done <- g2.Provider(name, limits).Do(ctxT(t), 0, func(context.Context) (int64, error) {
				mu.Lock()
				ran = true
				mu.Unlock()
				return 0, nil
			})
		}()
		if !s.h.RealTime {
			// The waiter must not pass on its own: give it time to try.
			time.Sleep(100 * time.Millisecond)
			mu.Lock()
			early := ran
			mu.Unlock()
			if early {
				t.Fatalf("%+v: a Do ran during the cool-off", limits)
			}
		}
		s.h.Advance(t, d+10*time.Millisecond)
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%+v: Do after the cool-off: %v", limits, err)
			}
		case <-time.After(45 * time.Second):
			t.Fatalf("%+v: Do still waiting after the cool-off ended", limits)
		}
	}
}

// coolOffUnderPolicy: under a queue policy a cool-off holds back as it
// does without one — a Fail acquire finding the queue empty and the slot
// free is refused, a Wait one queues, a release hands nothing on — and
// once it ends the queue is served by class, FIFO within a class, the
// lowest waiter re-checking first not passing the others.
func (s *suite) coolOffUnderPolicy(t *testing.T) {
	b := s.h.Open(t)
	key := governor.Key{Project: project(), Resource: "provider:fake"}
	h := preq(key, 1, 1, governor.Fail, three, "batch", "")
	mustAcquire(t, b, h, governor.Granted)
	d := s.coolOffLength()
	end, err := until(b.Admin(ctxT(t), key, governor.Action{Kind: eventkind.CoolOff, For: d, Detail: "HTTP 429 from test"}))
	if err != nil {
		t.Fatalf("CoolOff: %v", err)
	}
	release(t, b, key, h.ID)
	if res := mustAcquire(t, b, preq(key, 1, 1, governor.Fail, three, "critical", ""), governor.Refused); !near(res.Status.CoolOff, end, d) {
		t.Fatalf("refusal during the cool-off: status CoolOff %v, want %v", res.Status.CoolOff, end)
	}
	ws := []governor.Request{
		preq(key, 1, 1, governor.Wait, three, "batch", ""),
		preq(key, 1, 1, governor.Wait, three, "default", ""),
		preq(key, 1, 1, governor.Wait, three, "critical", ""),
		preq(key, 1, 1, governor.Wait, three, "default", ""),
	}
	for i := range ws {
		mustAcquire(t, b, ws[i], governor.Queued)
		ws[i].New = false
	}
	mustAcquire(t, b, ws[0], governor.Queued) // nothing handed on
	if got := grantedOf(t, b, key, ws); len(got) != 0 {
		t.Fatalf("waiters %v granted during the cool-off", got)
	}

	s.h.Advance(t, d+10*time.Millisecond)
	// The batch waiter re-checks first: the critical one is served first.
	mustAcquire(t, b, ws[0], governor.Queued)
	mustAcquire(t, b, ws[2], governor.Granted)
	rest := []governor.Request{ws[0], ws[1], ws[3]}
	if got, want := fmt.Sprint(serveOrder(t, b, key, ws[2].ID, rest)), "[1 2 0]"; got != want {
		t.Fatalf("after the cool-off, served %s of (batch, default, default), want %s (class, then FIFO)", got, want)
	}
}
