package conformance

import (
	"errors"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
)

// elsewhere opens a backend as a process on another machine would
// (Harness.OpenElsewhere; Open when unset).
func (s *suite) elsewhere(t *testing.T) governor.Backend {
	if s.h.OpenElsewhere != nil {
		return s.h.OpenElsewhere(t)
	}
	return s.h.Open(t)
}

// newShort is a new request (Request.New) of weight 1 under limit, with
// the 2 s TTL of the lost-data cases.
func newShort(key governor.Key, limit int) governor.Request {
	r := shortReq(key, limit)
	r.New = true
	return r
}

// quarantined fails t unless res, a refusal, says a quarantine is in
// force.
func quarantined(t *testing.T, res governor.Result, who string) {
	t.Helper()
	if !res.Status.Quarantine.After(res.Status.Now) {
		t.Fatalf("%s refused: Status.Quarantine %v, now %v; want a quarantine in force", who, res.Status.Quarantine, res.Status.Now)
	}
}

// lostDataNewProcess: after the store lost its data, a new process of
// the machine whose process holds the resource (a new `governor run`, a
// new client) arrives first, before anyone renews: although it never
// saw the state itself, it is not granted beside the forgotten holder
// (refused: a quarantine, in force for every process, of any machine);
// the holder's renewal learns, and once the quarantine is over a new
// process is granted with a higher token.
func (s *suite) lostDataNewProcess(t *testing.T) {
	if s.h.Lose == nil {
		t.Skip("this store cannot lose its data")
	}
	bo, key := s.open(t, "heavy")
	b := asFull(t, bo)
	a := newShort(key, 1)
	ra := mustAcquire(t, b, a, governor.Granted)
	s.h.Lose(t)
	s.h.Advance(t, 10*time.Millisecond) // a restart takes time
	quarantined(t, mustAcquire(t, s.h.Open(t), newShort(key, 1), governor.Refused), "a new process of the holder's machine")
	quarantined(t, mustAcquire(t, s.elsewhere(t), newShort(key, 1), governor.Refused), "then a process of another machine")
	if _, err := b.Renew(ctxT(t), governor.Renewal{Key: key, ID: a.ID, Secret: "", Token: 0, TTL: 0}); !errors.Is(err, governor.ErrLeaseLost) {
		t.Fatalf("the forgotten holder's renewal = %v, want ErrLeaseLost", err)
	}
	s.h.Advance(t, 3*time.Second)
	if got := mustAcquire(t, s.h.Open(t), newShort(key, 1), governor.Granted); got.Token <= ra.Token {
		t.Fatalf("token after the loss %d, not above %d from before", got.Token, ra.Token)
	}
}

// lostDataIdleMachine: a machine whose process used a resource and left
// it witnessed its state all the same: after the store lost its data and
// a process of a machine that never used the resource made a fresh state
// (it cannot tell: granted), a new process of the first machine finds a
// state born after the one it witnessed and is held back, although
// there is room; the quarantine is recorded.
func (s *suite) lostDataIdleMachine(t *testing.T) {
	if s.h.Lose == nil {
		t.Skip("this store cannot lose its data")
	}
	bo, key := s.open(t, "heavy")
	b := asFull(t, bo)
	a := newShort(key, 2)
	mustAcquire(t, b, a, governor.Granted)
	release(t, b, key, a.ID)
	s.h.Lose(t)
	s.h.Advance(t, 10*time.Millisecond)
	mustAcquire(t, s.elsewhere(t), newShort(key, 2), governor.Granted)
	quarantined(t, mustAcquire(t, s.h.Open(t), newShort(key, 2), governor.Refused), "a new process of the machine that used it")
	if !hasEvent(t, b, key, eventkind.Quarantine) {
		t.Fatal("no quarantine event")
	}
}

// forgetNotLoss: a resource forgotten (Backend.Forget) after a machine's
// process used it did not lose its data: a new process of that machine
// is granted at once, and no quarantine is recorded.
func (s *suite) forgetNotLoss(t *testing.T) {
	bo, key := s.open(t, "forgotten")
	b := asFull(t, bo)
	a := newShort(key, 1)
	mustAcquire(t, b, a, governor.Granted)
	release(t, b, key, a.ID)
	retention := governor.MinRetention
	for i := 0; ; i++ {
		gone, err := b.Forget(ctxT(t), key, retention)
		if err != nil {
			t.Fatal(err)
		}
		if gone {
			break
		}
		if i == 3 {
			t.Fatal("not forgotten after three retentions idle")
		}
		s.h.Advance(t, retention+100*time.Millisecond)
	}
	mustAcquire(t, s.h.Open(t), newShort(key, 1), governor.Granted)
	if hasEvent(t, b, key, eventkind.Quarantine) {
		t.Fatal("a quarantine after a forget")
	}
}

// hasEvent reports whether key recorded an event of kind.
func hasEvent(t *testing.T, b governor.Backend, key governor.Key, kind string) bool {
	t.Helper()
	evs, err := b.Events(ctxT(t), key, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Kind == kind {
			return true
		}
	}
	return false
}

// budgetLossNewProcess: after the store lost its data, new processes of
// a machine that saw the budgets born (new `governor run --cost`, a new
// client), which never saw them themselves and give no birth, find the
// loss: a reservation is refused, the budget held; a settle of a
// reservation that vanished (`governor settle`, naming no budget) holds
// the budgets it may have charged. Until an operator confirms.
func (s *suite) budgetLossNewProcess(t *testing.T) {
	if s.h.Lose == nil {
		t.Skip("this store cannot lose its data")
	}
	b, p := s.openFull(t), project()
	start := budgetNow(t, b, p).Add(-time.Second)
	reserve(t, b, p, "a", charge("day", 100, 10, start, time.Hour))
	reserve(t, b, p, "x", charge("hour", 100, 10, start, time.Hour))
	s.h.Lose(t)
	s.h.Advance(t, 5*time.Millisecond)
	if res := reserve(t, s.openFull(t), p, "b", charge("day", 100, 10, start, time.Hour)); res.Allowed || res.Reason != "held" {
		t.Fatalf("a new process's reservation after the loss: %+v; want held", res)
	}
	if got := settle(t, s.openFull(t), p, "x", governor.BudgetAmount{Amount: 7}); got.Settled {
		t.Fatalf("a new process's settle of a lost reservation: %+v", got)
	}
	if st := budgetState(t, b, p, "hour"); st.Held == "" {
		t.Fatalf("hour after a new process's settle found it gone: %+v; want held", st)
	}
	if err := b.BudgetAdmin(ctxT(t), p, "day", governor.BudgetConfirm, 0, "bob"); err != nil {
		t.Fatal(err)
	}
	if res := reserve(t, s.openFull(t), p, "c", charge("day", 100, 10, start, time.Hour)); !res.Allowed {
		t.Fatalf("after the operator confirmed: %+v", res)
	}
}

// lostDataShareNewProcess: as lostDataNewProcess, with the slots held by
// a capacity lease's share (granted locally by its process, which the
// store cannot see): after the store lost its data, a new process of the
// share's machine is not granted beside the share, whether it comes
// first with a single grant, or with a capacity lease of its own (which
// gets nothing, and must not make a new state that the machine then
// witnesses: a single grant after it would pass the witness's check).
func (s *suite) lostDataShareNewProcess(t *testing.T) {
	if s.h.Lose == nil {
		t.Skip("this store cannot lose its data")
	}
	for _, first := range []string{"a single grant", "a capacity lease"} {
		t.Run(first, func(t *testing.T) {
			bo, key := s.open(t, "hot")
			b := asFull(t, bo)
			l := newCapLease(key, 4, 6*time.Second)
			wantShare(t, "the share before the loss", l.ask(t, b, 4, 4), 4, 4)
			s.h.Lose(t)
			s.h.Advance(t, 10*time.Millisecond) // a restart takes time
			if first == "a capacity lease" {
				n := newCapLease(key, 4, 6*time.Second)
				n.r.New = true
				if sh := n.ask(t, s.h.Open(t), 4, 0); sh.Share != 0 {
					t.Fatalf("a new process's capacity lease after the loss: %+v, want no share beside the one held", sh)
				}
			}
			quarantined(t, mustAcquire(t, s.h.Open(t), newShort(key, 4), governor.Refused), "then a new process of the share's machine")
		})
	}
}
