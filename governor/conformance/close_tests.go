package conformance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
)

// closeEndsWaits: Governor.Close ends every acquire waiting in it with
// ErrClosed, leaving no waiter, no lease and no heartbeat behind, even
// when the slot is freed (and handed to a waiter) as Close runs: that
// waiter either ends with ErrClosed or was granted just before Close,
// which then released its lease. Then every call is ErrClosed.
func (s *suite) closeEndsWaits(t *testing.T) {
	p := project()
	raw := s.h.Open(t)
	key := governor.Key{Project: p, Resource: "heavy"}
	for round, free := range []bool{false, true} {
		holder := req(key, 1, 1, governor.Fail)
		mustAcquire(t, raw, holder, governor.Granted)
		g, err := governor.New(s.h.Open(t), governor.Options{Project: p, TTL: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		const waiters = 3
		type result struct {
			l   *governor.Lease
			err error
		}
		done := make(chan result, waiters)
		for i := 0; i < waiters; i++ {
			go func() {
				// The caller's context never ends: only Close can end the wait.
				l, err := g.Acquire(context.Background(), "heavy", governor.AcquireOptions{Limit: 1, Mode: governor.Wait})
				done <- result{l, err}
			}()
		}
		deadline := time.Now().Add(30 * time.Second)
		for len(mustStatus(t, raw, key).Waiters) < waiters {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the waiters never queued: %+v", round, mustStatus(t, raw, key))
			}
			time.Sleep(10 * time.Millisecond)
		}
		if free {
			// The head of the queue is granted the slot while Close runs.
			release(t, raw, key, holder.ID)
		}
		closed := make(chan error, 1)
		go func() { closed <- g.Close() }()
		var granted []*governor.Lease
		for i := 0; i < waiters; i++ {
			select {
			case r := <-done:
				switch {
				case r.err == nil && free:
					granted = append(granted, r.l) // before Close began
				case !errors.Is(r.err, governor.ErrClosed):
					t.Fatalf("round %d: a wait ended by Close returned %v, %v; want ErrClosed", round, r.l, r.err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("round %d: Close did not end a wait", round)
			}
		}
		select {
		case err := <-closed:
			if err != nil {
				t.Fatalf("round %d: Close = %v", round, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: Close did not return", round)
		}
		if len(granted) > 1 {
			t.Fatalf("round %d: %d waiters granted one slot", round, len(granted))
		}
		for _, l := range granted {
			select {
			case <-l.Done():
			default:
				t.Fatalf("round %d: Close left lease %s held", round, l.ID())
			}
		}
		st := mustStatus(t, raw, key)
		want := 1
		if free {
			want = 0
		}
		if len(st.Waiters) != 0 || st.Used != want || len(st.Holders) != want {
			t.Fatalf("round %d: after Close: used %d, holders %+v, waiters %+v; want %d held and no waiter",
				round, st.Used, st.Holders, st.Waiters, want)
		}
		if !free {
			release(t, raw, key, holder.ID)
		}
		if _, err := g.Acquire(ctxT(t), "heavy", governor.AcquireOptions{Limit: 1}); !errors.Is(err, governor.ErrClosed) {
			t.Fatalf("round %d: Acquire after Close = %v, want ErrClosed", round, err)
		}
		if _, err := g.Hold(ctxT(t), governor.Ask{Wants: []governor.Want{{Resource: "heavy", AcquireOptions: governor.AcquireOptions{Limit: 1}}}}); !errors.Is(err, governor.ErrClosed) {
			t.Fatalf("round %d: Hold after Close = %v, want ErrClosed", round, err)
		}
	}
	// Nothing heartbeats on: after two TTLs the resource is still empty
	// (a lease left behind would have been renewed).
	s.h.Advance(t, 4*time.Second)
	if st := mustStatus(t, raw, key); st.Used != 0 || len(st.Holders) != 0 || len(st.Waiters) != 0 {
		t.Fatalf("after Close and two TTLs: %+v", st)
	}
}

// malformedStateEndsWait: a backend that finds its state damaged says
// so with governor.ErrBackend, which retrying cannot cure: a waiting
// acquire beside the damage fails at once instead of retrying until its
// context ends, and leaves no waiter.
func (s *suite) malformedStateEndsWait(t *testing.T) {
	if s.h.Corrupt == nil {
		t.Skip("this harness cannot damage its store")
	}
	raw := s.h.Open(t)
	p := project()
	key := governor.Key{Project: p, Resource: "heavy"}
	h := req(key, 1, 1, governor.Fail)
	mustAcquire(t, raw, h, governor.Granted)
	s.h.Corrupt(t, key, h.ID)
	if _, err := raw.Status(ctxT(t), key); !errors.Is(err, governor.ErrBackend) {
		t.Fatalf("Status of a damaged state = %v, want ErrBackend", err)
	}
	g := newGovernor(t, s.h.Open(t), governor.Options{Project: p})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := g.Acquire(ctx, "heavy", governor.AcquireOptions{Limit: 1, Mode: governor.Wait})
	if ctx.Err() != nil {
		t.Fatalf("a waiting acquire beside a damaged state retried until its context ended: %v", err)
	}
	if !errors.Is(err, governor.ErrBackend) {
		t.Fatalf("a waiting acquire beside a damaged state = %v, want ErrBackend", err)
	}
}

// useAfterClose: every backend call after Close is ErrClosed, even when
// the backend's connection belongs to someone else and stays open.
func (s *suite) useAfterClose(t *testing.T) {
	b, key := s.open(t, "heavy")
	r := req(key, 1, 1, governor.Fail)
	mustAcquire(t, b, r, governor.Granted)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, governor.ErrClosed) {
			t.Fatalf("%s after Close = %v, want ErrClosed", op, err)
		}
	}
	_, err := b.Acquire(ctxT(t), req(key, 1, 1, governor.Wait))
	check("Acquire", err)
	_, err = b.Renew(ctxT(t), governor.Renewal{Key: key, ID: r.ID, Secret: "", Token: 0, TTL: 0})
	check("Renew", err)
	check("Release", b.Release(ctxT(t), key, r.ID, ""))
	check("Cancel", b.Cancel(ctxT(t), key, r.ID, ""))
	_, err = actChanged(b.Admin(ctxT(t), key, governor.Action{Kind: eventkind.Reclaimed, IDs: []string{r.ID}, Token: 1}))
	check("Reclaim", err)
	_, err = b.Acquire(ctxT(t), takeover(req(key, 1, 1, governor.Fail), key, r.ID))
	check("Takeover", err)
	_, err = b.Status(ctxT(t), key)
	check("Status", err)
	_, err = b.Events(ctxT(t), key, time.Time{})
	check("Events", err)
	_, err = b.Resources(ctxT(t), key.Project)
	check("Resources", err)
	_, err = b.NextSeq(ctxT(t), key.Project, "s", 1)
	check("NextSeq", err)
	check("CountLost", b.Record(ctxT(t), key, governor.Event{Kind: eventkind.Lost, LeaseID: r.ID, Token: 1, Detail: "a test"}))
	// The lease was left to expire, not released.
	if st := mustStatus(t, s.h.Open(t), key); st.Used != 1 {
		t.Fatalf("Close released a lease: %+v", st)
	}
}
