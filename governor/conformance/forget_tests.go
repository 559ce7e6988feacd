package conformance

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/histogram"
)

// forget: a resource is forgotten only after it has been idle — no
// holder, no waiter, no grant or enqueue — for the retention; then its
// state is gone and it is no longer listed, its fencing tokens still
// increase when it is used again, it is listed again, and its sequences
// go on where they were.
func (s *suite) forget(t *testing.T) {
	const retention = time.Second
	b := s.h.Open(t)
	// other is another process that used the resource before it was
	// forgotten, and uses it again after.
	other := s.h.Open(t)
	p := project()
	key := governor.Key{Project: p, Resource: "issue:1"}
	forget := func(want bool, when string) {
		t.Helper()
		got, err := b.Forget(ctxT(t), key, retention)
		if err != nil || got != want {
			t.Fatalf("%s: Forget = %v, %v; want %v", when, got, err, want)
		}
	}
	listed := func() bool {
		t.Helper()
		names, err := b.Resources(ctxT(t), p)
		if err != nil {
			t.Fatal(err)
		}
		return slices.Contains(names, key.Resource)
	}
	forget(false, "never used")
	g := newGovernor(t, s.h.Open(t), governor.Options{Project: p})
	if _, err := g.Forget(ctxT(t), key.Resource, governor.MinRetention/2); !errors.Is(err, governor.ErrInvalid) {
		t.Fatalf("Forget with a retention below %v: %v, want ErrInvalid", governor.MinRetention, err)
	}
	if _, err := g.Forget(ctxT(t), "bad{name}", time.Hour); !errors.Is(err, governor.ErrInvalid) {
		t.Fatalf("Forget of a bad name: %v, want ErrInvalid", err)
	}

	r := mustAcquire(t, b, req(key, 1, 1, governor.Fail), governor.Granted)
	first := r.Token
	seq1, err := b.NextSeq(ctxT(t), p, "version", first)
	if err != nil || seq1 != 1 {
		t.Fatalf("NextSeq = %d, %v", seq1, err)
	}
	forget(false, "held")
	s.h.Advance(t, retention+100*time.Millisecond)
	forget(false, "held past the retention")
	held := mustStatus(t, b, key)
	release(t, b, key, held.Holders[0].LeaseID)
	if err := b.Observe(ctxT(t), key, histogram.Wait, []int64{2, 1}, 3*time.Millisecond); err != nil {
		t.Fatalf("Observe: %v", err)
	}
	forget(false, "idle, first seen")
	s.h.Advance(t, retention+100*time.Millisecond)

	// A waiter is activity: queued, then cancelled, it restarts the clock.
	w := req(key, 1, 1, governor.Wait)
	mustAcquire(t, other, req(key, 1, 1, governor.Fail), governor.Granted)
	mustAcquire(t, b, w, governor.Queued)
	forget(false, "a waiter queued")
	if err := b.Cancel(ctxT(t), key, w.ID, ""); err != nil {
		t.Fatal(err)
	}
	st := mustStatus(t, b, key)
	release(t, b, key, st.Holders[0].LeaseID)
	last := st.Holders[0].Token
	forget(false, "idle again, first seen")
	s.h.Advance(t, retention/2)
	forget(false, "idle for half the retention")
	if !listed() {
		t.Fatal("not listed before it is forgotten")
	}
	s.h.Advance(t, retention/2+100*time.Millisecond)
	forget(true, "idle for the retention")
	forget(false, "forgotten already")
	if listed() {
		t.Fatal("still listed after it was forgotten")
	}
	st = mustStatus(t, b, key)
	if st.Limit != 0 || st.Counters != (governor.Counters{}) || len(st.Histograms) != 0 {
		t.Fatalf("status after forgetting: %+v", st)
	}
	if evs, err := b.Events(ctxT(t), key, time.Time{}); err != nil || len(evs) != 0 {
		t.Fatalf("events after forgetting: %v, %v", evs, err)
	}

	again := mustAcquire(t, other, req(key, 2, 1, governor.Fail), governor.Granted)
	if again.Token <= last {
		t.Fatalf("token %d after forgetting, not above the last one before, %d", again.Token, last)
	}
	if !listed() {
		t.Fatal("not listed again once used again")
	}
	if st := mustStatus(t, b, key); st.Limit != 2 || st.Counters.Acquired != 1 {
		t.Fatalf("status when used again: %+v", st)
	}
	if n, err := b.NextSeq(ctxT(t), p, "version", again.Token); err != nil || n != 2 {
		t.Fatalf("NextSeq after the resource was forgotten = %d, %v; want 2 (sequences are kept)", n, err)
	}
	if _, err := b.NextSeq(ctxT(t), p, "version", first); err == nil {
		t.Fatal("NextSeq with the token of before: accepted")
	}
}

// histograms: observations add up per bucket and are read back in Status;
// a Governor records each grant's wait and sends it at Close.
func (s *suite) histograms(t *testing.T) {
	b, key := s.open(t, "gpu")
	n := len(histogram.Bounds(histogram.Wait)) + 1
	// A resource without state (never used, or forgotten since) takes
	// no observations and gets no state from them.
	if err := b.Observe(ctxT(t), key, histogram.Wait, []int64{1}, time.Second); err != nil {
		t.Fatalf("Observe without state: %v", err)
	}
	if names, err := b.Resources(ctxT(t), key.Project); err != nil || len(names) != 0 {
		t.Fatalf("Resources after an Observe without state: %v, %v", names, err)
	}
	if st := mustStatus(t, b, key); len(st.Histograms) != 0 {
		t.Fatalf("histograms of a resource without state: %+v", st.Histograms)
	}
	r := req(key, 1, 1, governor.Fail)
	mustAcquire(t, b, r, governor.Granted)
	release(t, b, key, r.ID)
	if n < 2 {
		t.Fatalf("wait histogram has %d buckets", n)
	}
	one := make([]int64, n)
	one[0], one[n-1] = 2, 1
	for range 2 {
		if err := b.Observe(ctxT(t), key, histogram.Wait, one, 90*time.Minute); err != nil {
			t.Fatalf("Observe: %v", err)
		}
	}
	h := mustStatus(t, b, key).Histograms[histogram.Wait]
	if len(h.Counts) != n || h.Counts[0] != 4 || h.Counts[n-1] != 2 || h.Count() != 6 || h.Sum != 3*time.Hour {
		t.Fatalf("wait histogram %+v, want 4 in the first bucket, 2 in +Inf, sum 3h", h)
	}

	g := newGovernor(t, s.h.Open(t), governor.Options{Project: key.Project})
	l := mustLease(t, g, "cpu", governor.AcquireOptions{Limit: 1})
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	st := mustStatus(t, b, governor.Key{Project: key.Project, Resource: "cpu"})
	if h := st.Histograms[histogram.Wait]; h.Count() != 1 {
		t.Fatalf("wait histogram after one grant and Close: %+v, want 1 observation", h)
	}
	if h := st.Histograms[histogram.Hold]; h.Count() != 1 || len(h.Counts) != len(histogram.Bounds(histogram.Hold))+1 {
		t.Fatalf("hold histogram after one release and Close: %+v, want 1 observation", h)
	}
}
