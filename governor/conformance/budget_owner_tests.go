package conformance

import (
	"errors"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
)

// budgetSecret: a reservation's id is public, its secret proves it. A
// settle (alone, with a release, with a token adjustment) or a retried
// reserve whose secret does not prove the open reservation is
// ErrNotOwner and changes nothing; the right secret settles it. A
// second Unix user who knew a run's id settled the run's 0.9 at 0 (and
// then spent 0.9 itself), or at 1000 to exhaust the budget for all.
func (s *suite) budgetSecret(t *testing.T) {
	bo, key := s.open(t, "provider:owned")
	b := asFull(t, bo)
	p := key.Project
	start := budgetNow(t, b, p).Add(-time.Second)
	day := charge("day", 1_000_000, 900_000, start, time.Hour)
	reserve(t, b, p, "run-1", day)
	notOwner := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, governor.ErrNotOwner) {
			t.Fatalf("%s: %v; want ErrNotOwner", what, err)
		}
		wantBudget(t, what, budgetState(t, b, p, "day"), 0, 900_000, 1_000_000)
	}
	at := func(v int64) []governor.BudgetAmount { return []governor.BudgetAmount{{Name: "day", Amount: v}} }
	for _, secret := range []string{"", "guess", secretOf("run-2")} {
		_, err := b.BudgetSettle(ctxT(t), governor.SettleRequest{Project: p, Lease: "run-1", Secret: secret, Actual: at(0), By: "other"})
		notOwner("a settle at 0 with secret "+secret, err)
		_, err = b.BudgetSettle(ctxT(t), governor.SettleRequest{Project: p, Lease: "run-1", Secret: secret, Actual: []governor.BudgetAmount{{Amount: 1000 * governor.MicroUnit}}, By: "other"})
		notOwner("a settle at 1000 with secret "+secret, err)
	}
	r := req(key, 1, 1, governor.Fail)
	mustAcquire(t, b, r, governor.Granted)
	st, serr := b.BudgetSettle(ctxT(t), governor.SettleRequest{Project: p, Lease: "run-1", Secret: "guess", Actual: at(0), By: "other",
		Release: &governor.Handle{Resource: key.Resource, ID: r.ID, Secret: r.Secret}})
	if st.ReleaseErr != nil {
		t.Fatalf("the release beside a settle refused: %v; want released", st.ReleaseErr)
	}
	notOwner("a settle with a release, with another secret", serr)
	st, serr = b.BudgetSettle(ctxT(t), governor.SettleRequest{Project: p, Lease: "run-1", Secret: "guess", Actual: at(0), By: "other",
		Adjust: &governor.RateAdjustment{Key: key, Tokens: governor.RateLimit{Rate: 100, Period: time.Hour}}})
	if st.AdjustErr != nil {
		t.Fatalf("the adjustment beside a settle refused: %v", st.AdjustErr)
	}
	notOwner("a settle with an adjustment, with another secret", serr)
	_, err := b.BudgetReserve(ctxT(t), governor.BudgetRequest{Project: p, Lease: "run-1", Secret: "guess", By: "other",
		Charges: []governor.BudgetCharge{day}})
	notOwner("a reserve of the open reservation with another secret", err)
	if st := settle(t, b, p, "run-1", at(300_000)...); !st.Settled {
		t.Fatalf("the owner's settle: %+v; want settled", st)
	}
	wantBudget(t, "after the owner's settle", budgetState(t, b, p, "day"), 300_000, 0, 1_000_000)
	// Settled: nothing left to prove, whatever the secret.
	if st, err := b.BudgetSettle(ctxT(t), governor.SettleRequest{Project: p, Lease: "run-1", Secret: "guess", Actual: at(0), By: "other"}); err != nil || st.Settled {
		t.Fatalf("a settle of a settled reservation: %+v, %v; want nothing settled", st, err)
	}
	// Through a Governor: a reservation carries its secret, which its
	// own settle gives and nothing else knows.
	g := newGovernor(t, s.openFull(t), governor.Options{Project: p})
	res, err := holdSpends(ctxT(t), g, []governor.BudgetSpend{{Budget: governor.SpendBudget{Name: "day", Limit: 1_000_000,
		Window: governor.BudgetWindow{Per: time.Hour}}, Amount: 100}}, governor.BudgetOptions{Lease: "run-3"})
	if err != nil || res.Secret == "" || res.SpendKey() != "run-3."+res.Secret {
		t.Fatalf("ReserveBudgets: %+v, %v; want a reservation with a secret", res, err)
	}
	if _, err := g.SettleBudgets(ctxT(t), "run-3", "", nil); !errors.Is(err, governor.ErrNotOwner) {
		t.Fatalf("SettleBudgets without the secret: %v; want ErrNotOwner", err)
	}
	if st, err := res.Settle(ctxT(t), 50); err != nil || !st.Settled {
		t.Fatalf("the reservation's own settle: %+v, %v", st, err)
	}
}
