package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/internal/backendkit"
)

// Queue policies (issue 15): each rule of governor.Policy, on every
// backend.

// three is the policy of most tests: critical, default, batch.
var three = governor.Policy{Classes: []governor.Class{{Name: "critical"}, {Name: "default"}, {Name: "batch"}}}

// preq is req under policy p, in class prio with fair key key.
func preq(key governor.Key, limit, weight int, mode governor.Mode, p governor.Policy, prio, fair string) governor.Request {
	r := req(key, limit, weight, mode)
	r.Policy, r.Priority, r.FairKey = p.Encode(), prio, fair
	r.Declaration.Priority, r.Declaration.FairKey = prio, fair
	return r
}

// grantedOf tells which of ws the backend lists as holders.
func grantedOf(t *testing.T, b governor.Backend, key governor.Key, ws []governor.Request) []int {
	t.Helper()
	held := map[string]bool{}
	for _, h := range mustStatus(t, b, key).Holders {
		held[h.LeaseID] = true
	}
	var out []int
	for i, w := range ws {
		if held[w.ID] {
			out = append(out, i)
		}
	}
	return out
}

// serveOrder releases holder, then each grantee in turn, and returns the
// order in which ws were granted (indexes), one grant per release.
func serveOrder(t *testing.T, b governor.Backend, key governor.Key, holder string, ws []governor.Request) []int {
	t.Helper()
	var order []int
	done := map[int]bool{}
	for len(order) < len(ws) {
		release(t, b, key, holder)
		got := -1
		for _, i := range grantedOf(t, b, key, ws) {
			if !done[i] {
				if got >= 0 {
					t.Fatalf("waiters %d and %d both granted by one release", got, i)
				}
				got = i
			}
		}
		if got < 0 {
			t.Fatalf("nobody granted after %v", order)
		}
		mustAcquire(t, b, ws[got], governor.Granted) // claim it
		done[got] = true
		order = append(order, got)
		holder = ws[got].ID
	}
	return order
}

// Higher classes first, FIFO within a class; a class without waiters
// costs nothing.
func (s *suite) policyClassOrder(t *testing.T) {
	b, key := s.open(t, "gpu")
	h := preq(key, 1, 1, governor.Fail, three, "batch", "")
	mustAcquire(t, b, h, governor.Granted)
	ws := []governor.Request{
		preq(key, 1, 1, governor.Wait, three, "batch", ""),
		preq(key, 1, 1, governor.Wait, three, "", ""), // default
		preq(key, 1, 1, governor.Wait, three, "batch", ""),
		preq(key, 1, 1, governor.Wait, three, "critical", ""),
		preq(key, 1, 1, governor.Wait, three, "default", ""),
	}
	for _, w := range ws {
		mustAcquire(t, b, w, governor.Queued)
	}
	if res := mustAcquire(t, b, ws[3], governor.Queued); res.Position != 1 {
		t.Fatalf("critical waiter at position %d, want 1", res.Position)
	}
	// A fail-mode batch newcomer is refused, a critical one too: the
	// slot is taken.
	mustAcquire(t, b, preq(key, 1, 1, governor.Fail, three, "critical", ""), governor.Refused)
	if got, want := fmt.Sprint(serveOrder(t, b, key, h.ID, ws)), "[3 1 4 0 2]"; got != want {
		t.Fatalf("served in order %s, want %s (critical, default FIFO, batch FIFO)", got, want)
	}
	st := mustStatus(t, b, key)
	if st.Policy.Encode() != three.Encode() || st.DriftPolicy != "" {
		t.Fatalf("status policy %q drift %q, want %q", st.Policy.Encode(), st.DriftPolicy, three.Encode())
	}
}

// Reserve: the unused part of a higher class's reserve is never taken by
// lower classes, whether or not it waits.
func (s *suite) policyReserve(t *testing.T) {
	b, key := s.open(t, "gpu")
	p := governor.Policy{Classes: []governor.Class{{Name: "critical", Reserve: 1}, {Name: "default"}, {Name: "batch"}}}
	var held []governor.Request
	for i := 0; i < 2; i++ {
		r := preq(key, 3, 1, governor.Fail, p, "batch", "")
		mustAcquire(t, b, r, governor.Granted)
		held = append(held, r)
	}
	// One slot free, reserved for critical: neither batch nor default
	// may take it, although no critical work waits.
	mustAcquire(t, b, preq(key, 3, 1, governor.Fail, p, "batch", ""), governor.Refused)
	mustAcquire(t, b, preq(key, 3, 1, governor.Fail, p, "default", ""), governor.Refused)
	w := preq(key, 3, 1, governor.Wait, p, "default", "")
	mustAcquire(t, b, w, governor.Queued)
	c := preq(key, 3, 1, governor.Fail, p, "critical", "")
	mustAcquire(t, b, c, governor.Granted)
	// Critical uses its reserve: a freed slot goes to default.
	release(t, b, key, held[0].ID)
	mustAcquire(t, b, w, governor.Granted)
	// Critical released: its reserve is unused again, so the slot it
	// frees stays free for it.
	release(t, b, key, c.ID)
	mustAcquire(t, b, preq(key, 3, 1, governor.Fail, p, "batch", ""), governor.Refused)
	// A weight that the reserve leaves no room for is refused at once.
	_, err := b.Acquire(ctxT(t), preq(key, 3, 3, governor.Wait, p, "batch", ""))
	if !errors.Is(err, governor.ErrTooHeavy) {
		t.Fatalf("batch weight 3 of 3 with 1 reserved: %v, want ErrTooHeavy", err)
	}
}

// Cap: a class at its cap is passed over, and the others borrow what it
// leaves idle.
func (s *suite) policyCap(t *testing.T) {
	b, key := s.open(t, "gpu")
	p := governor.Policy{Classes: []governor.Class{{Name: "default"}, {Name: "batch", Cap: 2}}}
	b1, b2 := preq(key, 4, 1, governor.Fail, p, "batch", ""), preq(key, 4, 1, governor.Fail, p, "batch", "")
	mustAcquire(t, b, b1, governor.Granted)
	mustAcquire(t, b, b2, governor.Granted)
	mustAcquire(t, b, preq(key, 4, 1, governor.Fail, p, "batch", ""), governor.Refused)
	b3 := preq(key, 4, 1, governor.Wait, p, "batch", "")
	mustAcquire(t, b, b3, governor.Queued)
	// The batch waiter at its cap does not block default: it borrows.
	d1 := preq(key, 4, 1, governor.Wait, p, "", "")
	mustAcquire(t, b, d1, governor.Granted)
	mustAcquire(t, b, preq(key, 4, 1, governor.Fail, p, "", ""), governor.Granted)
	mustAcquire(t, b, b3, governor.Queued)
	release(t, b, key, b1.ID)
	mustAcquire(t, b, b3, governor.Granted)
	if n := mustStatus(t, b, key).Used; n != 4 {
		t.Fatalf("used %d, want 4", n)
	}
}

// Anti-starvation: a waiting lower class is overtaken by at most
// MaxOvertakes grants to higher classes.
func (s *suite) policyAntiStarvation(t *testing.T) {
	b, key := s.open(t, "gpu")
	p := governor.Policy{Classes: []governor.Class{{Name: "hi"}, {Name: "lo"}}, MaxOvertakes: 2}
	holder := preq(key, 1, 1, governor.Fail, p, "hi", "")
	mustAcquire(t, b, holder, governor.Granted)
	lo := preq(key, 1, 1, governor.Wait, p, "lo", "")
	mustAcquire(t, b, lo, governor.Queued)
	for i := 0; ; i++ {
		hi := preq(key, 1, 1, governor.Wait, p, "hi", "")
		mustAcquire(t, b, hi, governor.Queued)
		release(t, b, key, holder.ID)
		if res, err := b.Acquire(ctxT(t), lo); err == nil && res.Outcome == governor.Granted {
			if i != 2 {
				t.Fatalf("lo granted after %d higher grants, want after exactly MaxOvertakes 2", i)
			}
			mustAcquire(t, b, hi, governor.Queued)
			return
		}
		if i >= 2 {
			t.Fatalf("lo still waits after %d higher grants (MaxOvertakes 2)", i+1)
		}
		mustAcquire(t, b, hi, governor.Granted)
		holder = hi
	}
}

// Fairness: keys take turns; a weighted key takes more turns.
func (s *suite) policyFairKeys(t *testing.T) {
	for _, tc := range []struct {
		name    string
		weights map[string]int
		within  int // B's single waiter is granted within this many grants
	}{
		{"equal", nil, 2},
		{"weighted", map[string]int{"a": 2}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, key := s.open(t, "api")
			p := governor.Policy{Fair: true, FairWeights: tc.weights}
			h := preq(key, 1, 1, governor.Fail, p, "", "a")
			mustAcquire(t, b, h, governor.Granted)
			var ws []governor.Request
			for i := 0; i < 6; i++ {
				w := preq(key, 1, 1, governor.Wait, p, "", "a")
				mustAcquire(t, b, w, governor.Queued)
				ws = append(ws, w)
			}
			single := preq(key, 1, 1, governor.Wait, p, "", "b")
			mustAcquire(t, b, single, governor.Queued)
			ws = append(ws, single)
			order := serveOrder(t, b, key, h.ID, ws)
			at := -1
			for i, o := range order {
				if o == len(ws)-1 {
					at = i
				}
			}
			if at < 0 || at >= tc.within {
				t.Fatalf("key b's waiter granted as grant %d of %v, want within the first %d", at+1, order, tc.within)
			}
			// Key a's own waiters stay FIFO.
			prev := -1
			for _, o := range order {
				if o < len(ws)-1 {
					if o < prev {
						t.Fatalf("key a's waiters out of order: %v", order)
					}
					prev = o
				}
			}
		})
	}
}

// Fair cap: a key at its cap is passed over, the next key served.
func (s *suite) policyFairCap(t *testing.T) {
	b, key := s.open(t, "api")
	p := governor.Policy{FairCap: 1}
	a1 := preq(key, 3, 1, governor.Fail, p, "", "a")
	mustAcquire(t, b, a1, governor.Granted)
	mustAcquire(t, b, preq(key, 3, 1, governor.Fail, p, "", "a"), governor.Refused)
	a2 := preq(key, 3, 1, governor.Wait, p, "", "a")
	mustAcquire(t, b, a2, governor.Queued)
	b1 := preq(key, 3, 1, governor.Wait, p, "", "b")
	mustAcquire(t, b, b1, governor.Granted)
	mustAcquire(t, b, a2, governor.Queued)
	release(t, b, key, a1.ID)
	mustAcquire(t, b, a2, governor.Granted)
}

// Bounds: max_queue refuses at once; max_wait drops the waiter, which
// learns why.
func (s *suite) policyBounds(t *testing.T) {
	b, key := s.open(t, "q")
	p := governor.Policy{MaxQueue: 2, MaxWait: 500 * time.Millisecond}
	h := preq(key, 1, 1, governor.Fail, p, "", "")
	mustAcquire(t, b, h, governor.Granted)
	w1, w2 := preq(key, 1, 1, governor.Wait, p, "", ""), preq(key, 1, 1, governor.Wait, p, "", "")
	mustAcquire(t, b, w1, governor.Queued)
	mustAcquire(t, b, w2, governor.Queued)
	_, err := b.Acquire(ctxT(t), preq(key, 1, 1, governor.Wait, p, "", ""))
	if !errors.Is(err, governor.ErrQueueFull) {
		t.Fatalf("third waiter with max_queue 2: %v, want ErrQueueFull", err)
	}
	mustAcquire(t, b, preq(key, 1, 1, governor.Fail, p, "", ""), governor.Refused)
	if st := mustStatus(t, b, key); len(st.Waiters) != 2 {
		t.Fatalf("%d waiters after the refusal, want 2", len(st.Waiters))
	}
	s.h.Advance(t, time.Second)
	_, err = b.Acquire(ctxT(t), w1)
	if !errors.Is(err, governor.ErrMaxWait) {
		t.Fatalf("waiter past max_wait: %v, want ErrMaxWait", err)
	}
	if st := mustStatus(t, b, key); len(st.Waiters) != 0 {
		t.Fatalf("waiters left after max_wait: %+v", st.Waiters)
	}
	var seen bool
	evs, err := b.Events(ctxT(t), key, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		seen = seen || e.Kind == eventkind.MaxWait && e.LeaseID == w2.ID
	}
	if !seen {
		t.Fatalf("no withdrawn event for the second waiter: %+v", evs)
	}
}

// Drift: a busy resource keeps its policy; another one asked for is
// reported, and its waiters are served under the policy in force.
func (s *suite) policyDrift(t *testing.T) {
	b, key := s.open(t, "gpu")
	h := preq(key, 1, 1, governor.Fail, three, "critical", "")
	mustAcquire(t, b, h, governor.Granted)
	other := governor.Policy{MaxQueue: 5}
	w := preq(key, 1, 1, governor.Wait, other, "", "")
	mustAcquire(t, b, w, governor.Queued)
	st := mustStatus(t, b, key)
	if st.Policy.Encode() != three.Encode() || st.DriftPolicy != other.Encode() {
		t.Fatalf("policy %q drift %q, want %q and %q", st.Policy.Encode(), st.DriftPolicy, three.Encode(), other.Encode())
	}
	release(t, b, key, h.ID)
	mustAcquire(t, b, w, governor.Granted)
	release(t, b, key, w.ID)
	// Idle: the next acquire sets the policy, and the drift goes.
	mustAcquire(t, b, preq(key, 1, 1, governor.Fail, other, "", ""), governor.Granted)
	st = mustStatus(t, b, key)
	if st.Policy.Encode() != other.Encode() || st.DriftPolicy != "" {
		t.Fatalf("after idle: policy %q drift %q, want %q and none", st.Policy.Encode(), st.DriftPolicy, other.Encode())
	}
}

// Hammer: many Governors on many backends, under classes, reserve, caps
// and fair caps: never over the limit, a cap or a fair cap, and tokens
// increase.
func (s *suite) policyHammer(t *testing.T) {
	const limit = 3
	key := governor.Key{Project: project(), Resource: "hammer"}
	p := governor.Policy{Classes: []governor.Class{{Name: "critical", Reserve: 1}, {Name: "default"}, {Name: "batch", Cap: 1}},
		FairCap: 2, MaxOvertakes: 3}
	var inUse, batch, nonCritical atomic.Int64
	var mu sync.Mutex
	perKey := map[string]int{}
	tokens := map[int64]bool{}
	var fail atomic.Value
	workers, rounds := 6, 8
	if s.h.RealTime {
		rounds = 4
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		g := newGovernor(t, s.h.Open(t), governor.Options{Project: key.Project, TTL: 30 * time.Second})
		prio := []string{"critical", "default", "batch"}[w%3]
		fair := []string{"a", "b"}[w%2]
		wg.Go(func() {
			var lastToken int64
			for i := 0; i < rounds; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				l, err := g.Acquire(ctx, key.Resource, governor.AcquireOptions{Limit: limit, Mode: governor.Wait,
					Policy: p, Priority: prio, FairKey: fair})
				cancel()
				if err != nil {
					fail.Store(err.Error())
					return
				}
				mu.Lock()
				if l.Token() <= lastToken || tokens[l.Token()] {
					fail.Store(fmt.Sprintf("token %d after %d, or given twice", l.Token(), lastToken))
				}
				lastToken = l.Token()
				tokens[l.Token()] = true
				perKey[fair]++
				if perKey[fair] > p.FairCap {
					fail.Store(fmt.Sprintf("key %s holds %d > fair_cap", fair, perKey[fair]))
				}
				mu.Unlock()
				if n := inUse.Add(1); n > limit {
					fail.Store(fmt.Sprintf("%d in use > limit %d", n, limit))
				}
				if prio == "batch" && batch.Add(1) > 1 {
					fail.Store("batch over its cap 1")
				}
				if prio != "critical" && nonCritical.Add(1) > limit-1 {
					fail.Store("critical's reserve taken")
				}
				time.Sleep(time.Millisecond)
				if prio == "batch" {
					batch.Add(-1)
				}
				if prio != "critical" {
					nonCritical.Add(-1)
				}
				inUse.Add(-1)
				mu.Lock()
				perKey[fair]--
				mu.Unlock()
				if err := l.Release(); err != nil {
					fail.Store(err.Error())
					return
				}
			}
		})
	}
	wg.Wait()
	if f := fail.Load(); f != nil {
		t.Fatal(f)
	}
}

// Supersede: a newer waiter with the same key replaces the older one,
// which is told (woken, then ErrSuperseded); with cancel-in-progress the
// holder with the key loses its lease (a superseded end, at its next
// renewal). With or without a policy.
func (s *suite) policySupersede(t *testing.T) {
	// The key "0" too: a name, not a default the Redis client may leave
	// out (it once did, and Redis then superseded nothing).
	for _, c := range []struct {
		p    governor.Policy
		name string
	}{{governor.Policy{}, "main"}, {three, "main"}, {governor.Policy{}, "0"}} {
		p, name := c.p, c.name
		t.Run(fmt.Sprintf("policy=%q/key=%q", p.Encode(), name), func(t *testing.T) {
			b, key := s.open(t, "deploy")
			h := preq(key, 1, 1, governor.Fail, p, "", "")
			h.Supersede = name
			mustAcquire(t, b, h, governor.Granted)
			old := preq(key, 1, 1, governor.Wait, p, "", "")
			old.Supersede = name
			ch, stop := b.Notify(ctxT(t), key, old.ID)
			t.Cleanup(stop)
			mustAcquire(t, b, old, governor.Queued)
			other := preq(key, 1, 1, governor.Wait, p, "", "") // no key: untouched
			mustAcquire(t, b, other, governor.Queued)
			newer := preq(key, 1, 1, governor.Wait, p, "", "")
			newer.Supersede = name
			mustAcquire(t, b, newer, governor.Queued)
			select {
			case <-ch:
			case <-time.After(10 * time.Second):
				t.Fatal("the superseded waiter was not woken")
			}
			old.New = false
			if _, err := b.Acquire(ctxT(t), old); !errors.Is(err, governor.ErrSuperseded) || !strings.Contains(err.Error(), newer.ID) {
				t.Fatalf("superseded waiter: %v, want ErrSuperseded naming %s", err, newer.ID)
			}
			st := mustStatus(t, b, key)
			if len(st.Waiters) != 2 || st.Waiters[0].ID != other.ID || st.Waiters[1].ID != newer.ID {
				t.Fatalf("waiters after supersede: %+v", st.Waiters)
			}
			// Cancel in progress: the holder with the key is cancelled: its
			// renewals are refused, but it keeps its slot until it
			// releases, so that nobody (other, first in the queue) is
			// granted beside its work.
			latest := preq(key, 1, 1, governor.Wait, p, "", "")
			latest.Supersede, latest.CancelInProgress = name, true
			mustAcquire(t, b, latest, governor.Queued)
			for range 2 { // and it is never renewed back to life
				_, err := b.Renew(ctxT(t), governor.Renewal{Key: key, ID: h.ID, Secret: "", Token: 0, TTL: 0})
				var lost *governor.LeaseLostError
				if !errors.As(err, &lost) || lost.End.Kind != eventkind.CancelledInProgress || !strings.Contains(lost.Error(), latest.ID) {
					t.Fatalf("renewal of the cancelled holder: %v, want a LeaseLostError of kind %s naming %s", err, eventkind.CancelledInProgress, latest.ID)
				}
			}
			if _, err := b.Renew(ctxT(t), governor.Renewal{Key: key, ID: h.ID, Secret: "", Token: 0, Touch: true}); !errors.Is(err, governor.ErrLeaseLost) {
				t.Fatalf("progress mark of the cancelled holder: %v, want ErrLeaseLost", err)
			}
			other.New = false
			mustAcquire(t, b, other, governor.Queued)
			if st := mustStatus(t, b, key); st.Used != 1 || len(st.Holders) != 1 || st.Holders[0].LeaseID != h.ID || st.Holders[0].Cancelled.IsZero() {
				t.Fatalf("while the cancelled holder works on: used %d, holders %+v; want it alone, marked cancelled", st.Used, st.Holders)
			}
			// Its release succeeds and hands the slot on, in queue order.
			release(t, b, key, h.ID)
			mustAcquire(t, b, other, governor.Granted)
			newer.New = false
			if _, err := b.Acquire(ctxT(t), newer); !errors.Is(err, governor.ErrSuperseded) {
				t.Fatalf("second superseded waiter: %v, want ErrSuperseded", err)
			}
			if st := mustStatus(t, b, key); st.Used != 1 || len(st.Waiters) != 1 || st.Waiters[0].ID != latest.ID {
				t.Fatalf("after cancel-in-progress: used %d, waiters %+v", st.Used, st.Waiters)
			}
			release(t, b, key, other.ID)
			latest.New = false
			mustAcquire(t, b, latest, governor.Granted)
		})
	}
}

// Cancel in progress of a holder that died: the cancelled lease is
// reclaimed or expires as any other, and its successor is granted then.
// On a real server's clock the holder's TTL is 3 s, so that it is still
// held when its successor asks on a loaded machine (400 ms was not: the
// successor was granted at once in a CI run at load 30).
func (s *suite) policyCancelExpires(t *testing.T) {
	ttl := 400 * time.Millisecond
	if s.h.RealTime {
		ttl = 3 * time.Second
	}
	b, key := s.open(t, "deploy")
	h := preq(key, 1, 1, governor.Fail, governor.Policy{}, "", "")
	h.Supersede = "main"
	h.TTL = ttl
	mustAcquire(t, b, h, governor.Granted)
	latest := preq(key, 1, 1, governor.Wait, governor.Policy{}, "", "")
	latest.Supersede, latest.CancelInProgress = "main", true
	mustAcquire(t, b, latest, governor.Queued)
	latest.New = false
	s.h.Advance(t, ttl+600*time.Millisecond)
	mustAcquire(t, b, latest, governor.Granted)
}

// Eager: lighter waiters pass a head that does not fit, at most
// backendkit.EagerPasses times; then the head blocks until it fits. Under
// FIFO (the default) nobody passes it (HeadOfLineBlocks).
func (s *suite) policyEager(t *testing.T) {
	b, key := s.open(t, "mem")
	p := governor.Policy{Eager: true}
	h := preq(key, 2, 1, governor.Fail, p, "", "")
	mustAcquire(t, b, h, governor.Granted)
	big := preq(key, 2, 2, governor.Wait, p, "", "")
	mustAcquire(t, b, big, governor.Queued)
	for i := 0; i <= backendkit.EagerPasses; i++ {
		small := preq(key, 2, 1, governor.Wait, p, "", "")
		res, err := b.Acquire(ctxT(t), small)
		if err != nil {
			t.Fatal(err)
		}
		if i == backendkit.EagerPasses {
			if res.Outcome != governor.Queued {
				t.Fatalf("pass %d: %v, want queued: the head was passed %d times already", i+1, res.Outcome, backendkit.EagerPasses)
			}
			mustAcquire(t, b, big, governor.Queued) // one slot free, it needs two
			release(t, b, key, h.ID)
			mustAcquire(t, b, big, governor.Granted)
			mustAcquire(t, b, small, governor.Queued)
			return
		}
		if res.Outcome != governor.Granted {
			t.Fatalf("pass %d: %v, want granted past the heavy head", i+1, res.Outcome)
		}
		release(t, b, key, small.ID)
	}
}

// A starving lower class waits for room, never for a reserve above it: a
// higher-class waiter still takes the reserve meant for it.
func (s *suite) policyStarvingNotInReserve(t *testing.T) {
	b, key := s.open(t, "gpu")
	p := governor.Policy{Classes: []governor.Class{{Name: "hi", Reserve: 1}, {Name: "lo"}}, MaxOvertakes: 1}
	mustAcquire(t, b, preq(key, 2, 1, governor.Fail, p, "lo", ""), governor.Granted)
	lo := preq(key, 2, 1, governor.Wait, p, "lo", "")
	mustAcquire(t, b, lo, governor.Queued) // the last slot is hi's reserve
	h1 := preq(key, 2, 1, governor.Wait, p, "hi", "")
	mustAcquire(t, b, h1, governor.Granted) // one overtake: lo is starving now
	h2 := preq(key, 2, 1, governor.Wait, p, "hi", "")
	mustAcquire(t, b, h2, governor.Queued)
	release(t, b, key, h1.ID)
	mustAcquire(t, b, h2, governor.Granted)
	mustAcquire(t, b, lo, governor.Queued)
}
