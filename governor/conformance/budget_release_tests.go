package conformance

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
)

// budgetReleaseSettle: ReleaseSettle releases a slot and settles a
// reservation together, each part with its own outcome: a second call
// settles nothing and finds the slot not held; a release of a lease
// not held still settles; bad settle input still releases; an actual
// above the estimate is an overrun.
func (s *suite) budgetReleaseSettle(t *testing.T) {
	bo, key := s.open(t, "gate")
	b := asFull(t, bo)
	p := key.Project
	start := budgetNow(t, b, p).Add(-time.Second)
	day := func(amount int64) governor.BudgetCharge { return charge("day", 100, amount, start, time.Hour) }
	both := func(id, lease string, actual ...governor.BudgetAmount) (governor.BudgetSettlement, error) {
		return b.BudgetSettle(ctxT(t), governor.SettleRequest{Project: p, Lease: lease, Secret: secretOf(lease), Actual: actual, By: "conformance",
			Release: &governor.Handle{Resource: key.Resource, ID: id}})
	}
	r := req(key, 1, 1, governor.Fail)
	mustAcquire(t, b, r, governor.Granted)
	reserve(t, b, p, "s1", day(60))
	st, serr := both(r.ID, "s1", governor.BudgetAmount{Name: "day", Amount: 25})
	if serr != nil || st.ReleaseErr != nil || !st.Settled || len(st.Overruns) != 0 {
		t.Fatalf("ReleaseSettle: %+v, settle %v, release %v; want settled and released", st, serr, st.ReleaseErr)
	}
	wantBudget(t, "after ReleaseSettle of 25 of 60", budgetState(t, b, p, "day"), 25, 0, 100)
	again := req(key, 1, 1, governor.Fail)
	mustAcquire(t, b, again, governor.Granted) // the slot was freed
	release(t, b, key, again.ID)
	// Again: nothing settled, not held.
	st, serr = both(r.ID, "s1", governor.BudgetAmount{Name: "day", Amount: 25})
	if serr != nil || !errors.Is(st.ReleaseErr, governor.ErrNotHeld) || st.Settled {
		t.Fatalf("ReleaseSettle again: %+v, settle %v, release %v; want nothing settled and ErrNotHeld", st, serr, st.ReleaseErr)
	}
	wantBudget(t, "after ReleaseSettle again", budgetState(t, b, p, "day"), 25, 0, 100)
	// The parts are independent: a lease not held still settles, at its
	// estimate when no budget is named.
	reserve(t, b, p, "s2", day(10))
	st, serr = both(id(), "s2")
	if serr != nil || !errors.Is(st.ReleaseErr, governor.ErrNotHeld) || !st.Settled {
		t.Fatalf("ReleaseSettle of a lease not held: %+v, settle %v, release %v; want settled and ErrNotHeld", st, serr, st.ReleaseErr)
	}
	wantBudget(t, "after a settle at the estimate", budgetState(t, b, p, "day"), 35, 0, 100)
	// Bad settle input settles nothing and still releases.
	k2 := governor.Key{Project: p, Resource: "gate2"}
	r2 := req(k2, 1, 1, governor.Fail)
	mustAcquire(t, b, r2, governor.Granted)
	reserve(t, b, p, "s3", day(10))
	st, serr = b.BudgetSettle(ctxT(t), governor.SettleRequest{Project: p, Lease: "s3", Secret: secretOf("s3"),
		Actual: []governor.BudgetAmount{{Name: "day", Amount: -1}}, By: "conformance", Release: &governor.Handle{Resource: k2.Resource, ID: r2.ID}})
	if !errors.Is(serr, governor.ErrInvalid) || st.ReleaseErr != nil || st.Settled {
		t.Fatalf("ReleaseSettle with a negative cost: %+v, settle %v, release %v; want ErrInvalid and released", st, serr, st.ReleaseErr)
	}
	mustAcquire(t, b, req(k2, 1, 1, governor.Fail), governor.Granted)
	wantBudget(t, "after a bad settle", budgetState(t, b, p, "day"), 35, 10, 100)
	// An overrun counts in full.
	r3 := req(key, 1, 1, governor.Fail)
	mustAcquire(t, b, r3, governor.Granted)
	st, serr = both(r3.ID, "s3", governor.BudgetAmount{Name: "day", Amount: 15})
	if serr != nil || st.ReleaseErr != nil || !st.Settled || !slices.Equal(st.Overruns, []string{"day"}) {
		t.Fatalf("ReleaseSettle above the estimate: %+v, settle %v, release %v; want an overrun on day", st, serr, st.ReleaseErr)
	}
	wantBudget(t, "after an overrun", budgetState(t, b, p, "day"), 50, 0, 100)
}

// budgetSettleEvery: a settle's amount named "" is the actual of every
// budget of the reservation that no other amount names; given twice it
// is bad input.
func (s *suite) budgetSettleEvery(t *testing.T) {
	b, p := s.openFull(t), project()
	start := budgetNow(t, b, p).Add(-time.Second)
	reserve(t, b, p, "e1", charge("day", 100, 30, start, time.Hour), charge("hour", 100, 30, start, time.Hour),
		charge("team", 100, 30, start, time.Hour))
	st := settle(t, b, p, "e1", governor.BudgetAmount{Amount: 12}, governor.BudgetAmount{Name: "hour", Amount: 40})
	if !st.Settled || !slices.Equal(st.Overruns, []string{"hour"}) {
		t.Fatalf("settle of every budget at 12, hour at 40: %+v; want settled, an overrun on hour", st)
	}
	wantBudget(t, "day", budgetState(t, b, p, "day"), 12, 0, 100)
	wantBudget(t, "team", budgetState(t, b, p, "team"), 12, 0, 100)
	wantBudget(t, "hour", budgetState(t, b, p, "hour"), 40, 0, 100)
	reserve(t, b, p, "e2", charge("day", 100, 30, start, time.Hour))
	_, err := b.BudgetSettle(ctxT(t), governor.SettleRequest{Project: p, Lease: "e2", Secret: secretOf("e2"), Actual: []governor.BudgetAmount{{Amount: 1}, {Amount: 2}}, By: "conformance"})
	if !errors.Is(err, governor.ErrInvalid) {
		t.Fatalf("two amounts for every budget: %v; want ErrInvalid", err)
	}
	if got := settle(t, b, p, "ghost", governor.BudgetAmount{Amount: 5}); got.Settled {
		t.Fatalf("settle of every budget of no reservation: %+v; want nothing settled", got)
	}
	wantBudget(t, "day after refusals", budgetState(t, b, p, "day"), 12, 30, 100)
}

// budgetDoSpend: a provider call with a slot and spend budgets settles
// its cost with the slot's release: the actual it reports, the estimate
// when it cannot tell; a refusal runs nothing and leaves the slot free.
func (s *suite) budgetDoSpend(t *testing.T) {
	p := project()
	g := newGovernor(t, s.openFull(t), governor.Options{Project: p})
	pr := g.Provider("spend", governor.ProviderLimits{MaxConcurrency: 1})
	day := governor.SpendBudget{Name: "day", Limit: 100, Window: governor.BudgetWindow{Per: 24 * time.Hour}}
	call := func(estimate, actual int64) error {
		return pr.DoSpend(ctxT(t), []governor.SpendBudget{day}, estimate, 0, governor.BudgetOptions{},
			func(context.Context) (int64, int64, error) { return 0, actual, nil })
	}
	spent := func() governor.BudgetState {
		sts, _, err := g.Budgets(ctxT(t), []string{"day"})
		if err != nil || len(sts) != 1 {
			t.Fatalf("Budgets: %+v, %v", sts, err)
		}
		return sts[0]
	}
	free := func(what string) {
		t.Helper()
		st, err := g.Status(ctxT(t), governor.ProviderResource("spend"))
		if err != nil || st.Used != 0 {
			t.Fatalf("%s: provider slot %d in use, %v; want free", what, st.Used, err)
		}
	}
	if err := call(40, 25); err != nil {
		t.Fatal(err)
	}
	wantBudget(t, "after a call of 25 of 40", spent(), 25, 0, 100)
	free("after a call")
	if err := call(40, -1); err != nil {
		t.Fatal(err)
	}
	wantBudget(t, "after a call settled at its estimate", spent(), 65, 0, 100)
	ran := false
	err := pr.DoSpend(ctxT(t), []governor.SpendBudget{day}, 40, 0, governor.BudgetOptions{},
		func(context.Context) (int64, int64, error) { ran = true; return 0, 0, nil })
	var busy *governor.BudgetBusyError
	if !errors.As(err, &busy) || ran {
		t.Fatalf("40 over 65 of 100: %v, ran %v; want a BudgetBusyError and nothing run", err, ran)
	}
	wantBudget(t, "after a refusal", spent(), 65, 0, 100)
	free("after a refusal")
	if st := spent(); st.Open != 0 {
		t.Fatalf("open reservations %d; want 0", st.Open)
	}
	// A Held whose lease was released before sends no release: the
	// settle goes alone, once.
	h, err := g.Hold(ctxT(t), governor.Ask{Wants: []governor.Want{{Resource: "gate", AcquireOptions: governor.AcquireOptions{Limit: 1}}},
		Spends: []governor.BudgetSpend{{Budget: day, Amount: 20}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Leases[0].Release(); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false} {
		var st governor.BudgetSettlement
		var serr error
		h.SettleOnRelease(h.Spend, []governor.BudgetAmount{{Name: "day", Amount: 5}}, func(s governor.BudgetSettlement, err error) { st, serr = s, err })
		if lost, failed := h.ReleaseWith(nil); serr != nil || len(lost)+len(failed) != 0 || st.Settled != want {
			t.Fatalf("release %d with a settle of a lease released before: %+v, settle %v, release %v %v; want settled %v", i+1, st, serr, lost, failed, want)
		}
	}
	wantBudget(t, "after a settle without a release", spent(), 70, 0, 100)
}
