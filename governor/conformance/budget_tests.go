package conformance

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
)

// budgetNow is the backend's clock, as its budget read reports it.
func budgetNow(t *testing.T, b full, project string) time.Time {
	t.Helper()
	_, now, err := b.Budgets(ctxT(t), project, nil)
	if err != nil {
		t.Fatalf("Budgets: %v", err)
	}
	return now
}

// charge is a charge of amount on budget name (limit) in window
// start..start+length.
func charge(name string, limit, amount int64, start time.Time, length time.Duration) governor.BudgetCharge {
	return governor.BudgetCharge{Name: name, Limit: limit, Amount: amount, Start: start, End: start.Add(length)}
}

// secretOf is the secret the suite's reservation lease is made with.
func secretOf(lease string) string { return "secret-of-" + lease }

func reserve(t *testing.T, b full, project, lease string, cs ...governor.BudgetCharge) governor.BudgetResult {
	t.Helper()
	res, err := b.BudgetReserve(ctxT(t), governor.BudgetRequest{Project: project, Lease: lease, Secret: secretOf(lease), Charges: cs, By: "conformance"})
	if err != nil {
		t.Fatalf("BudgetReserve(%s): %v", lease, err)
	}
	return res
}

func settle(t *testing.T, b full, project, lease string, actual ...governor.BudgetAmount) governor.BudgetSettlement {
	t.Helper()
	s, err := b.BudgetSettle(ctxT(t), governor.SettleRequest{Project: project, Lease: lease, Secret: secretOf(lease), Actual: actual, By: "conformance"})
	if err != nil {
		t.Fatalf("BudgetSettle(%s): %v", lease, err)
	}
	return s
}

func budgetState(t *testing.T, b full, project, name string) governor.BudgetState {
	t.Helper()
	sts, _, err := b.Budgets(ctxT(t), project, []string{name})
	if err != nil || len(sts) != 1 {
		t.Fatalf("Budgets(%s) = %+v, %v; want one", name, sts, err)
	}
	return sts[0]
}

func wantBudget(t *testing.T, what string, st governor.BudgetState, spent, reserved, limit int64) {
	t.Helper()
	if st.Spent != spent || st.Reserved != reserved || st.Limit != limit {
		t.Fatalf("%s: budget %s spent %d reserved %d limit %d; want %d %d %d", what, st.Name, st.Spent, st.Reserved, st.Limit,
			spent, reserved, limit)
	}
}

func budgetEvents(t *testing.T, b full, project string) []governor.BudgetEvent {
	t.Helper()
	evs, err := b.BudgetEvents(ctxT(t), project)
	if err != nil {
		t.Fatalf("BudgetEvents: %v", err)
	}
	return evs
}

func hasBudgetEvent(evs []governor.BudgetEvent, budget, kind string) bool {
	return slices.ContainsFunc(evs, func(e governor.BudgetEvent) bool { return e.Budget == budget && e.Kind == kind })
}

// budgetReserveSettle: a reservation that fits is charged; one that does
// not is refused with the budget's numbers and changes nothing; a settle
// moves the estimate to the actual, once.
func (s *suite) budgetReserveSettle(t *testing.T) {
	b, p := s.openFull(t), project()
	now := budgetNow(t, b, p)
	start := now.Add(-time.Second)
	if res := reserve(t, b, p, "a", charge("day", 100, 60, start, time.Hour)); !res.Allowed || len(res.States) != 1 {
		t.Fatalf("60 of 100: %+v; want allowed", res)
	}
	res := reserve(t, b, p, "b", charge("day", 100, 41, start, time.Hour))
	if res.Allowed || res.Reason != "exhausted" || res.Refused.Name != "day" {
		t.Fatalf("41 more of 100: %+v; want refused, exhausted", res)
	}
	wantBudget(t, "the refusal", res.Refused, 0, 60, 100)
	if !res.Refused.End.Equal(start.Add(time.Hour)) {
		t.Fatalf("refusal's reset %v; want the window's end %v", res.Refused.End, start.Add(time.Hour))
	}
	if res := reserve(t, b, p, "c", charge("day", 100, 40, start, time.Hour)); !res.Allowed {
		t.Fatalf("40 more of 100 (exactly the limit): %+v; want allowed", res)
	}
	if got := settle(t, b, p, "a", governor.BudgetAmount{Name: "day", Amount: 25}); !got.Settled || len(got.Overruns) != 0 {
		t.Fatalf("settle a: %+v", got)
	}
	wantBudget(t, "after settling 25 of 60", budgetState(t, b, p, "day"), 25, 40, 100)
	if got := settle(t, b, p, "a", governor.BudgetAmount{Name: "day", Amount: 25}); got.Settled {
		t.Fatalf("second settle of a: %+v; want nothing settled", got)
	}
	wantBudget(t, "after settling a again", budgetState(t, b, p, "day"), 25, 40, 100)
	// A budget not named is settled at its estimate.
	settle(t, b, p, "c")
	st := budgetState(t, b, p, "day")
	wantBudget(t, "after settling c at its estimate", st, 65, 0, 100)
	if st.Open != 0 {
		t.Fatalf("open reservations %d; want 0", st.Open)
	}
	if !hasBudgetEvent(budgetEvents(t, b, p), "day", eventkind.BudgetExhausted) {
		t.Fatalf("no exhausted event after a refusal")
	}
	// The same lease reserved again (a retry) is charged once.
	reserve(t, b, p, "d", charge("day", 100, 10, start, time.Hour))
	if res := reserve(t, b, p, "d", charge("day", 100, 10, start, time.Hour)); !res.Allowed {
		t.Fatalf("retried reserve: %+v", res)
	}
	wantBudget(t, "after a retried reserve", budgetState(t, b, p, "day"), 65, 10, 100)
}

// budgetAllOrNone: several budgets are charged together or not at all.
func (s *suite) budgetAllOrNone(t *testing.T) {
	b, p := s.openFull(t), project()
	start := budgetNow(t, b, p).Add(-time.Second)
	reserve(t, b, p, "x", charge("hour", 10, 8, start, time.Hour))
	res := reserve(t, b, p, "y", charge("team", 100, 5, start, 24*time.Hour), charge("hour", 10, 5, start, time.Hour))
	if res.Allowed || res.Refused.Name != "hour" {
		t.Fatalf("5 on team and hour (8 of 10 reserved): %+v; want refused by hour", res)
	}
	wantBudget(t, "team after the refusal", budgetState(t, b, p, "team"), 0, 0, 100)
	if res := reserve(t, b, p, "z", charge("team", 100, 2, start, 24*time.Hour), charge("hour", 10, 2, start, time.Hour)); !res.Allowed || len(res.States) != 2 {
		t.Fatalf("2 on both: %+v", res)
	}
	wantBudget(t, "team", budgetState(t, b, p, "team"), 0, 2, 100)
	wantBudget(t, "hour", budgetState(t, b, p, "hour"), 0, 10, 10)
	settle(t, b, p, "z", governor.BudgetAmount{Name: "team", Amount: 1}, governor.BudgetAmount{Name: "hour", Amount: 2})
	wantBudget(t, "team settled", budgetState(t, b, p, "team"), 1, 0, 100)
	wantBudget(t, "hour settled", budgetState(t, b, p, "hour"), 2, 8, 10)
}

// budgetOverrun: an actual above the estimate is counted in full and
// recorded.
func (s *suite) budgetOverrun(t *testing.T) {
	b, p := s.openFull(t), project()
	start := budgetNow(t, b, p).Add(-time.Second)
	reserve(t, b, p, "a", governor.BudgetCharge{Name: "day", Limit: 100, Soft: 50, Amount: 30, Start: start, End: start.Add(time.Hour)})
	got := settle(t, b, p, "a", governor.BudgetAmount{Name: "day", Amount: 70})
	if !got.Settled || !slices.Equal(got.Overruns, []string{"day"}) {
		t.Fatalf("settle 70 of 30: %+v; want an overrun of day", got)
	}
	st := budgetState(t, b, p, "day")
	wantBudget(t, "after the overrun", st, 70, 0, 100)
	if st.Overruns != 1 {
		t.Fatalf("overruns %d; want 1", st.Overruns)
	}
	evs := budgetEvents(t, b, p)
	if !hasBudgetEvent(evs, "day", eventkind.BudgetOverrun) || !hasBudgetEvent(evs, "day", eventkind.BudgetSoft) {
		t.Fatalf("events %+v; want an overrun and the soft threshold crossed", evs)
	}
}

// budgetAbandoned: a reservation not settled within its TTL is counted
// as spent at its estimate; its late settle changes nothing.
func (s *suite) budgetAbandoned(t *testing.T) {
	b, p := s.openFull(t), project()
	start := budgetNow(t, b, p).Add(-time.Second)
	res, err := b.BudgetReserve(ctxT(t), governor.BudgetRequest{Project: p, Lease: "dies", Secret: secretOf("dies"), TTL: 200 * time.Millisecond,
		Charges: []governor.BudgetCharge{charge("day", 100, 30, start, time.Hour)}})
	if err != nil || !res.Allowed {
		t.Fatalf("reserve: %+v, %v", res, err)
	}
	s.h.Advance(t, 300*time.Millisecond)
	if res := reserve(t, b, p, "next", charge("day", 100, 71, start, time.Hour)); res.Allowed {
		t.Fatalf("71 after 30 abandoned: %+v; want refused", res)
	}
	wantBudget(t, "after the ttl", budgetState(t, b, p, "day"), 30, 0, 100)
	if got := settle(t, b, p, "dies", governor.BudgetAmount{Name: "day", Amount: 1}); got.Settled {
		t.Fatalf("late settle: %+v; want nothing settled", got)
	}
	wantBudget(t, "after the late settle", budgetState(t, b, p, "day"), 30, 0, 100)
	if !hasBudgetEvent(budgetEvents(t, b, p), "day", eventkind.BudgetAbandoned) {
		t.Fatal("no abandoned event")
	}
}

// budgetReadNow: a read shows what holds at the backend's now, with no
// write in between: a reservation past its TTL counted at its estimate,
// and, once the window has ended, the next begun (what settled after
// the end spent, the hold lifted, Start the old End and End zero: the
// caller knows the next window's length).
func (s *suite) budgetReadNow(t *testing.T) {
	b, p := s.openFull(t), project()
	now := budgetNow(t, b, p)
	length := 10 * time.Minute
	if s.h.RealTime {
		// Long enough that the window is still in force at the first
		// read on a loaded machine (it must end before the second).
		length = 4 * time.Second
	}
	start := now.Add(-time.Millisecond)
	res, err := b.BudgetReserve(ctxT(t), governor.BudgetRequest{Project: p, Lease: "dies", Secret: secretOf("dies"), TTL: 200 * time.Millisecond,
		Charges: []governor.BudgetCharge{charge("r", 100, 30, start, length)}})
	if err != nil || !res.Allowed {
		t.Fatalf("reserve: %+v, %v", res, err)
	}
	reserve(t, b, p, "lives", charge("r", 100, 10, start, length))
	s.h.Advance(t, 300*time.Millisecond)
	st := budgetState(t, b, p, "r")
	wantBudget(t, "read past the ttl of 30", st, 30, 10, 100)
	if st.Open != 1 || !st.End.Equal(start.Add(length)) {
		t.Fatalf("read past the ttl: %+v; want one open reservation, the window in force", st)
	}
	s.h.Advance(t, length)
	settle(t, b, p, "lives", governor.BudgetAmount{Name: "r", Amount: 4}) // after the end: the next window's
	st = budgetState(t, b, p, "r")
	wantBudget(t, "read after the window ended", st, 4, 0, 100)
	if !st.Start.Equal(start.Add(length)) || !st.End.IsZero() || st.Open != 0 {
		t.Fatalf("read after the window ended: %+v; want Start the old end, End zero, nothing open", st)
	}
}

// budgetWindow: a later window starts spent afresh (with what settled
// after the last one ended), open reservations stay reserved; an earlier
// window (the clock stepped back) leaves the later one in force; a
// window that does not hold the backend's now is a mismatch.
func (s *suite) budgetWindow(t *testing.T) {
	b, p := s.openFull(t), project()
	now := budgetNow(t, b, p)
	length := 10 * time.Minute // below the reservations' TTL
	if s.h.RealTime {
		length = 1500 * time.Millisecond
	}
	start := now.Add(-time.Millisecond)
	if res := reserve(t, b, p, "m", charge("w", 100, 1, now.Add(-2*length), length)); !res.Mismatch || res.Allowed || res.Now.IsZero() {
		t.Fatalf("a window behind now: %+v; want a mismatch", res)
	}
	if _, _, err := b.Budgets(ctxT(t), p, nil); err != nil {
		t.Fatal(err)
	}
	reserve(t, b, p, "a", charge("w", 100, 50, start, length))
	reserve(t, b, p, "b", charge("w", 100, 30, start, length))
	settle(t, b, p, "a", governor.BudgetAmount{Name: "w", Amount: 50})
	// A window starting before the one in force (the clock stepped back).
	res := reserve(t, b, p, "c", charge("w", 100, 25, start.Add(-length/2), length))
	if res.Allowed || !res.Refused.Start.Equal(start) {
		t.Fatalf("an earlier window: %+v; want the later in force, refused", res)
	}
	s.h.Advance(t, length+50*time.Millisecond)
	// b settles after the window ended: it counts in the next.
	settle(t, b, p, "b", governor.BudgetAmount{Name: "w", Amount: 20})
	next := start.Add(length)
	now = budgetNow(t, b, p)
	for !now.Before(next.Add(length)) { // real time may have passed more than one window
		next = next.Add(length)
	}
	if res := reserve(t, b, p, "d", charge("w", 100, 80, next, length)); !res.Allowed {
		t.Fatalf("80 in the next window (20 carried): %+v; want allowed", res)
	}
	st := budgetState(t, b, p, "w")
	wantBudget(t, "the next window", st, 20, 80, 100)
	if !st.Start.Equal(next) || !st.End.Equal(next.Add(length)) {
		t.Fatalf("window %v..%v; want %v..%v", st.Start, st.End, next, next.Add(length))
	}
}

// budgetAdmin: an operator's limit takes the configured one's place,
// pause and loss holds refuse, reset clears the spent; each is recorded
// with its actor; a budget without state is made by any action (a
// configured budget nothing used yet), a pause of it holding from the
// first reservation on.
func (s *suite) budgetAdmin(t *testing.T) {
	b, p := s.openFull(t), project()
	start := budgetNow(t, b, p).Add(-time.Second)
	if err := b.BudgetAdmin(ctxT(t), p, "fresh", governor.BudgetPause, 0, "op"); err != nil {
		t.Fatalf("pause of a budget without state: %v", err)
	}
	if sts, _, err := b.Budgets(ctxT(t), p, []string{"fresh"}); err != nil || len(sts) != 1 || sts[0].Paused != "op" || sts[0].Spent != 0 {
		t.Fatalf("after the pause of a budget without state: %+v, %v; want it paused by op", sts, err)
	}
	if res := reserve(t, b, p, "f", charge("fresh", 100, 1, start, time.Hour)); res.Allowed || res.Reason != "paused" {
		t.Fatalf("reserve on the paused fresh budget: %+v; want refused, paused", res)
	}
	if err := b.BudgetAdmin(ctxT(t), p, "day", "explode", 0, "op"); !errors.Is(err, governor.ErrInvalid) {
		t.Fatalf("an unknown action: %v; want ErrInvalid", err)
	}
	reserve(t, b, p, "a", charge("day", 100, 60, start, time.Hour))
	settle(t, b, p, "a")
	if err := b.BudgetAdmin(ctxT(t), p, "day", governor.BudgetSetLimit, 70, "alice"); err != nil {
		t.Fatal(err)
	}
	res := reserve(t, b, p, "b", charge("day", 100, 20, start, time.Hour))
	if res.Allowed || res.Refused.Limit != 70 || res.Refused.LimitBy != "alice" {
		t.Fatalf("20 over 60 of alice's 70: %+v; want refused", res)
	}
	mustAdmin := func(op governor.BudgetOp, v int64) {
		t.Helper()
		if err := b.BudgetAdmin(ctxT(t), p, "day", op, v, "alice"); err != nil {
			t.Fatalf("%s: %v", op, err)
		}
	}
	mustAdmin(governor.BudgetReset, 0)
	mustAdmin(governor.BudgetPause, 0)
	if res := reserve(t, b, p, "c", charge("day", 100, 1, start, time.Hour)); res.Allowed || res.Reason != "paused" || res.Refused.Paused != "alice" {
		t.Fatalf("while paused: %+v; want refused, paused by alice", res)
	}
	mustAdmin(governor.BudgetResume, 0)
	mustAdmin(governor.BudgetSetLimit, 0) // back to the configured limit
	if res := reserve(t, b, p, "d", charge("day", 100, 100, start, time.Hour)); !res.Allowed {
		t.Fatalf("100 of 100 after reset and resume: %+v", res)
	}
	n := 0
	for _, e := range budgetEvents(t, b, p) {
		if e.Kind == eventkind.BudgetAdmin && e.By == "alice" {
			n++
		}
	}
	if n != 5 {
		t.Fatalf("%d admin events by alice; want 5", n)
	}
}

// budgetLoss: after the store lost its data, a budget a caller saw born
// is held (refusing, saying so) until an operator confirms; a settle that
// finds its reservation and budget gone holds it too.
func (s *suite) budgetLoss(t *testing.T) {
	if s.h.Lose == nil {
		t.Skip("this store cannot lose its data")
	}
	b, p := s.openFull(t), project()
	start := budgetNow(t, b, p).Add(-time.Second)
	res := reserve(t, b, p, "a", charge("day", 100, 10, start, time.Hour), charge("hour", 100, 10, start, time.Hour))
	born := res.States[0].Born
	s.h.Lose(t)
	s.h.Advance(t, 5*time.Millisecond)
	c := charge("day", 100, 10, start, time.Hour)
	c.Born = born
	res = reserve(t, b, p, "b", c)
	if res.Allowed || res.Reason != "held" || res.Refused.Held == "" {
		t.Fatalf("after the loss: %+v; want held", res)
	}
	got := settle(t, b, p, "a", governor.BudgetAmount{Name: "hour", Amount: 7, Born: res.States[0].Born.Add(-time.Hour)})
	if got.Settled {
		t.Fatalf("settle of a lost reservation: %+v", got)
	}
	if st := budgetState(t, b, p, "hour"); st.Held == "" {
		t.Fatalf("hour after a settle found it gone: %+v; want held", st)
	}
	if err := b.BudgetAdmin(ctxT(t), p, "day", governor.BudgetConfirm, 0, "bob"); err != nil {
		t.Fatal(err)
	}
	if res := reserve(t, b, p, "c", charge("day", 100, 10, start, time.Hour)); !res.Allowed {
		t.Fatalf("after the operator confirmed: %+v", res)
	}
	if !hasBudgetEvent(budgetEvents(t, b, p), "day", eventkind.BudgetHeld) {
		t.Fatal("no held event")
	}
}

// budgetBadInput: bad requests are ErrInvalid and leave no state.
func (s *suite) budgetBadInput(t *testing.T) {
	b, p := s.openFull(t), project()
	start := budgetNow(t, b, p).Add(-time.Second)
	for name, req := range map[string]governor.BudgetRequest{
		"no charges":      {Project: p, Lease: "x"},
		"negative amount": {Project: p, Lease: "x", Charges: []governor.BudgetCharge{charge("d", 10, -1, start, time.Hour)}},
		"twice":           {Project: p, Lease: "x", Charges: []governor.BudgetCharge{charge("d", 10, 1, start, time.Hour), charge("d", 10, 1, start, time.Hour)}},
		"bad name":        {Project: p, Lease: "x", Charges: []governor.BudgetCharge{charge("a{b", 10, 1, start, time.Hour)}},
		"empty window":    {Project: p, Lease: "x", Charges: []governor.BudgetCharge{charge("d", 10, 1, start, 0)}},
		"soft over limit": {Project: p, Lease: "x", Charges: []governor.BudgetCharge{{Name: "d", Limit: 10, Soft: 11, Start: start, End: start.Add(time.Hour)}}},
		"no lease":        {Project: p, Secret: "s", Charges: []governor.BudgetCharge{charge("d", 10, 1, start, time.Hour)}},
		"no secret":       {Project: p, Lease: "x", Charges: []governor.BudgetCharge{charge("d", 10, 1, start, time.Hour)}},
	} {
		if req.Secret == "" && name != "no secret" {
			req.Secret = "s"
		}
		if _, err := b.BudgetReserve(ctxT(t), req); !errors.Is(err, governor.ErrInvalid) {
			t.Errorf("%s: %v; want ErrInvalid", name, err)
		}
	}
	if _, err := b.BudgetSettle(ctxT(t), governor.SettleRequest{Project: p, Lease: "x", Secret: secretOf("x"), Actual: []governor.BudgetAmount{{Name: "d", Amount: -5}}, By: ""}); !errors.Is(err, governor.ErrInvalid) {
		t.Errorf("a negative actual: %v; want ErrInvalid", err)
	}
	if sts, _, err := b.Budgets(ctxT(t), p, nil); err != nil || len(sts) != 0 {
		t.Fatalf("budgets after bad input: %+v, %v; want none", sts, err)
	}
}

// budgetHammer: workers on several backends reserve random estimates and
// settle random actuals at most their estimates: what settles never
// passes the limit, and a budget under more demand than it holds is
// nearly all used.
func (s *suite) budgetHammer(t *testing.T) {
	p := project()
	const limit, workers, calls = 10_000, 6, 40
	first := s.openFull(t)
	start := budgetNow(t, first, p).Add(-time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		b := first
		if w%2 == 1 {
			b = s.openFull(t)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for i := range calls {
				est := 50 + r.Int64N(150)
				lease := id()
				res, err := b.BudgetReserve(ctxT(t), governor.BudgetRequest{Project: p, Lease: lease, Secret: secretOf(lease),
					Charges: []governor.BudgetCharge{charge("fleet", limit, est, start, time.Hour)}})
				if err != nil {
					errs <- err
					return
				}
				if !res.Allowed {
					continue
				}
				if st := res.States[0]; st.Spent+st.Reserved > limit {
					errs <- errors.New("spent + reserved above the limit after a reservation")
					return
				}
				actual := est / 2
				if i%3 == 0 {
					actual = est
				}
				if _, err := b.BudgetSettle(ctxT(t), governor.SettleRequest{Project: p, Lease: lease, Secret: secretOf(lease), Actual: []governor.BudgetAmount{{Name: "fleet", Amount: actual}}, By: ""}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := budgetState(t, first, p, "fleet")
	if st.Spent > limit || st.Reserved != 0 || st.Open != 0 {
		t.Fatalf("after the hammer: %+v; want spent ≤ %d, nothing reserved", st, limit)
	}
}

// budgetGovernor: through a Governor, a refusal is a *BudgetBusyError
// (ErrBusy) naming the budget's numbers and reset; a waiting reservation
// passes once another settles below its estimate; a second Governor's
// settle of the same lease changes nothing.
func (s *suite) budgetGovernor(t *testing.T) {
	p := project()
	g := newGovernor(t, s.openFull(t), governor.Options{Project: p})
	g2 := newGovernor(t, s.openFull(t), governor.Options{Project: p})
	day := governor.SpendBudget{Name: "day", Limit: 100, Window: governor.BudgetWindow{Per: 24 * time.Hour}}
	first, err := holdSpends(ctxT(t), g, []governor.BudgetSpend{{Budget: day, Amount: 80}}, governor.BudgetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = holdSpends(ctxT(t), g2, []governor.BudgetSpend{{Budget: day, Amount: 30}}, governor.BudgetOptions{})
	var busy *governor.BudgetBusyError
	if !errors.As(err, &busy) || !errors.Is(err, governor.ErrBusy) || busy.Reason != "exhausted" || busy.Budget.Reserved != 80 ||
		busy.Budget.Limit != 100 || busy.Budget.End.IsZero() {
		t.Fatalf("30 over 80 of 100: %v; want a BudgetBusyError", err)
	}
	done := make(chan error, 1)
	go func() {
		r, err := holdSpends(ctxT(t), g2, []governor.BudgetSpend{{Budget: day, Amount: 30}}, governor.BudgetOptions{Mode: governor.Wait})
		if err == nil {
			_, err = r.Settle(ctxT(t), 30)
		}
		done <- err
	}()
	if _, err := first.Settle(ctxT(t), 50); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the waiter: %v", err)
	}
	if got, err := g2.SettleBudgets(ctxT(t), first.Lease, first.Secret, nil); err != nil || got.Settled {
		t.Fatalf("settling the first lease again from another Governor: %+v, %v; want nothing settled", got, err)
	}
	sts, _, err := g.Budgets(ctxT(t), nil)
	if err != nil || len(sts) != 1 || sts[0].Spent != 80 || sts[0].Reserved != 0 {
		t.Fatalf("budgets: %+v, %v; want 80 spent", sts, err)
	}
	if err := g.BudgetAdmin(ctxT(t), "day", governor.BudgetPause, 0, "ops"); err != nil {
		t.Fatal(err)
	}
	_, err = holdSpends(ctxT(t), g, []governor.BudgetSpend{{Budget: day, Amount: 1}}, governor.BudgetOptions{})
	if !errors.As(err, &busy) || busy.Reason != "paused" || !strings.Contains(err.Error(), "ops") {
		t.Fatalf("while paused: %v; want paused by ops", err)
	}
}
