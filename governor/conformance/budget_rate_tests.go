package conformance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
)

// budgetRateReserve: RateReserve with a budget (RateRequest.Budget)
// reserves a rate and budgets
// together, each part deciding alone with its own outcome: a rate
// denied does not stop the budget part, nor a budget refused the rate
// part; bad budget input reserves no budget and still the rate.
func (s *suite) budgetRateReserve(t *testing.T) {
	bo, key := s.open(t, "provider:rates")
	b := asFull(t, bo)
	p := key.Project
	start := budgetNow(t, b, p).Add(-time.Second)
	both := func(lease string, amount int64) (governor.RateResult, error) {
		rate := governor.RateRequest{Key: key, Requests: governor.PerMinute(2), NRequests: 1}
		budget := governor.BudgetRequest{Project: p, Lease: lease, Secret: secretOf(lease), By: "conformance", Charges: []governor.BudgetCharge{charge("day", 100, amount, start, time.Hour)}}
		rate.Budget = &budget
		return b.RateReserve(ctxT(t), rate)
	}
	allowed := func(what string, want int64) {
		t.Helper()
		st, err := b.RateStatus(ctxT(t), key)
		if err != nil || st.Allowed != want {
			t.Fatalf("%s: rate status %+v, %v; want %d allowed", what, st, err, want)
		}
	}
	res, rerr := both("r1", 60)
	bres, berr := res.Budget, res.BudgetErr
	if rerr != nil || berr != nil || !res.Allowed || !bres.Allowed || len(bres.States) != 1 {
		t.Fatalf("RateReserve with a budget: rate %+v, %v, budget %+v, %v; want both allowed", res, rerr, bres, berr)
	}
	allowed("after both allowed", 1)
	wantBudget(t, "after both allowed", budgetState(t, b, p, "day"), 0, 60, 100)
	// The budget refuses: the rate is reserved still.
	res, rerr = both("r2", 60)
	bres, berr = res.Budget, res.BudgetErr
	if rerr != nil || berr != nil || !res.Allowed || bres.Allowed || bres.Reason != "exhausted" || bres.Refused.Name != "day" {
		t.Fatalf("RateReserve with a budget over the budget: rate %+v, %v, budget %+v, %v; want the rate allowed, day exhausted", res, rerr, bres, berr)
	}
	allowed("after a budget refused", 2)
	wantBudget(t, "after a budget refused", budgetState(t, b, p, "day"), 0, 60, 100)
	// The rate denies: the budget is reserved still.
	res, rerr = both("r3", 10)
	bres, berr = res.Budget, res.BudgetErr
	if rerr != nil || berr != nil || res.Allowed || res.RetryAfter <= 0 || !bres.Allowed {
		t.Fatalf("RateReserve with a budget over the rate: rate %+v, %v, budget %+v, %v; want the rate denied, the budget allowed", res, rerr, bres, berr)
	}
	allowed("after a rate denied", 2)
	wantBudget(t, "after a rate denied", budgetState(t, b, p, "day"), 0, 70, 100)
	if st := settle(t, b, p, "r3", governor.BudgetAmount{Amount: 0}); !st.Settled {
		t.Fatalf("settle of r3: %+v", st)
	}
	// Bad budget input reserves no budget; the rate part goes as ever.
	res, rerr = both("r4", -1)
	berr = res.BudgetErr
	if !errors.Is(berr, governor.ErrInvalid) || rerr != nil || res.Allowed {
		t.Fatalf("RateReserve with a budget with a negative estimate: rate %+v, %v, budget %v; want ErrInvalid, the rate decided (denied)", res, rerr, berr)
	}
	wantBudget(t, "after bad budget input", budgetState(t, b, p, "day"), 0, 60, 100)
}

// budgetDoSpendRates: a provider call with rate limits only (no slot)
// and spend budgets reserves them with its rate and settles its actual
// cost; a rate denied leaves no budget reserved while the call waits
// (Hold settles it at 0); a budget refused runs nothing.
func (s *suite) budgetDoSpendRates(t *testing.T) {
	p := project()
	g := newGovernor(t, s.openFull(t), governor.Options{Project: p})
	pr := g.Provider("rates", governor.ProviderLimits{Requests: governor.PerMinute(2)})
	day := governor.SpendBudget{Name: "day", Limit: 100, Window: governor.BudgetWindow{Per: 24 * time.Hour}}
	spent := func(what string, spent, reserved int64) {
		t.Helper()
		sts, _, err := g.Budgets(ctxT(t), []string{"day"})
		if err != nil || len(sts) != 1 {
			t.Fatalf("Budgets: %+v, %v", sts, err)
		}
		wantBudget(t, what, sts[0], spent, reserved, 100)
		if sts[0].Open != 0 {
			t.Fatalf("%s: %d reservations open; want none", what, sts[0].Open)
		}
	}
	if err := pr.DoSpend(ctxT(t), []governor.SpendBudget{day}, 40, 0, governor.BudgetOptions{},
		func(context.Context) (int64, int64, error) { return 0, 25, nil }); err != nil {
		t.Fatal(err)
	}
	spent("after a call of 25 of 40", 25, 0)
	ran := false
	err := pr.DoSpend(ctxT(t), []governor.SpendBudget{day}, 80, 0, governor.BudgetOptions{},
		func(context.Context) (int64, int64, error) { ran = true; return 0, 0, nil })
	var busy *governor.BudgetBusyError
	if !errors.As(err, &busy) || ran {
		t.Fatalf("80 over 25 of 100: %v, ran %v; want a BudgetBusyError and nothing run", err, ran)
	}
	spent("after a refusal", 25, 0)
	// Both requests of the minute are spent: the rate denies, and the
	// budgets reserved beside it are released at once.
	req := governor.RateRequest{Key: governor.Key{Resource: governor.ProviderResource("rates")}, Requests: governor.PerMinute(2), NRequests: 1}
	h, err := g.Hold(ctxT(t), governor.Ask{Rates: []governor.RateRequest{req}, Spends: []governor.BudgetSpend{{Budget: day, Amount: 10}}})
	var denied *governor.RateBusyError
	if !errors.As(err, &denied) || h != nil {
		t.Fatalf("Hold over the rate: %+v, %v; want a RateBusyError, nothing held", h, err)
	}
	spent("after a rate denied", 25, 0)
}

// budgetRateAdjustSettle: BudgetSettle with an adjustment
// (SettleRequest.Adjust) adjusts a rate's tokens and settles a
// reservation together, each part with its own outcome: a
// second call settles nothing and still adjusts; bad settle input
// settles nothing and still adjusts.
func (s *suite) budgetRateAdjustSettle(t *testing.T) {
	bo, key := s.open(t, "provider:tokens")
	b := asFull(t, bo)
	p := key.Project
	tokens := governor.RateLimit{Rate: 100, Period: time.Hour}
	start := budgetNow(t, b, p).Add(-time.Second)
	left := func(what string, want int64) {
		t.Helper()
		st, err := b.RateStatus(ctxT(t), key)
		// A token comes back every 36 s: at most one during the test.
		if err != nil || st.RemainingTokens < want || st.RemainingTokens > want+1 {
			t.Fatalf("%s: rate status %+v, %v; want %d tokens left", what, st, err, want)
		}
	}
	if res, err := b.RateReserve(ctxT(t), governor.RateRequest{Key: key, Tokens: tokens, NTokens: 50}); err != nil || !res.Allowed {
		t.Fatalf("RateReserve of 50 tokens: %+v, %v", res, err)
	}
	reserve(t, b, p, "a1", charge("day", 100, 40, start, time.Hour))
	both := func(delta int64, actual ...governor.BudgetAmount) (governor.BudgetSettlement, error) {
		return b.BudgetSettle(ctxT(t), governor.SettleRequest{Project: p, Lease: "a1", Secret: secretOf("a1"), Actual: actual, By: "conformance",
			Adjust: &governor.RateAdjustment{Key: key, Tokens: tokens, Delta: delta}})
	}
	st, serr := both(-30, governor.BudgetAmount{Name: "day", Amount: 25})
	if serr != nil || st.AdjustErr != nil || !st.Settled {
		t.Fatalf("BudgetSettle with an adjustment: %+v, settle %v, adjust %v; want settled and adjusted", st, serr, st.AdjustErr)
	}
	left("after 30 tokens refunded", 80)
	wantBudget(t, "after a settle of 25 of 40", budgetState(t, b, p, "day"), 25, 0, 100)
	st, serr = both(10, governor.BudgetAmount{Name: "day", Amount: 25})
	if serr != nil || st.AdjustErr != nil || st.Settled {
		t.Fatalf("BudgetSettle with an adjustment again: %+v, settle %v, adjust %v; want nothing settled, adjusted", st, serr, st.AdjustErr)
	}
	left("after 10 tokens charged", 70)
	wantBudget(t, "after a settle again", budgetState(t, b, p, "day"), 25, 0, 100)
	reserve(t, b, p, "a1", charge("day", 100, 10, start, time.Hour))
	st, serr = both(20, governor.BudgetAmount{Name: "day", Amount: -1})
	if !errors.Is(serr, governor.ErrInvalid) || st.AdjustErr != nil || st.Settled {
		t.Fatalf("BudgetSettle with an adjustment with a negative cost: %+v, settle %v, adjust %v; want ErrInvalid, adjusted", st, serr, st.AdjustErr)
	}
	left("after 20 tokens charged", 50)
	wantBudget(t, "after a bad settle", budgetState(t, b, p, "day"), 25, 10, 100)
}

// budgetDoSpendTokens: a provider call with a tokens limit only and
// spend budgets settles its cost with its tokens (SettleRequest.Adjust):
// both the cost and the tokens it reports count.
func (s *suite) budgetDoSpendTokens(t *testing.T) {
	p := project()
	g := newGovernor(t, s.openFull(t), governor.Options{Project: p})
	tokens := governor.RateLimit{Rate: 1000, Period: time.Hour}
	pr := g.Provider("tokens", governor.ProviderLimits{Tokens: tokens})
	day := governor.SpendBudget{Name: "day", Limit: 100, Window: governor.BudgetWindow{Per: 24 * time.Hour}}
	for _, actual := range []int64{25, -1} {
		if err := pr.DoSpend(ctxT(t), []governor.SpendBudget{day}, 40, 300, governor.BudgetOptions{},
			func(context.Context) (int64, int64, error) { return 100, actual, nil }); err != nil {
			t.Fatal(err)
		}
	}
	sts, _, err := g.Budgets(ctxT(t), []string{"day"})
	if err != nil || len(sts) != 1 || sts[0].Open != 0 {
		t.Fatalf("Budgets: %+v, %v; want day, nothing open", sts, err)
	}
	wantBudget(t, "after calls of 25 and at the estimate, 40", sts[0], 65, 0, 100)
	st, err := g.RateStatus(ctxT(t), governor.ProviderResource("tokens"))
	// 100 used by each call; a token comes back every 3.6 s.
	if err != nil || st.RemainingTokens < 800 || st.RemainingTokens > 802 {
		t.Fatalf("tokens after two calls of 100: %+v, %v; want 800 left", st, err)
	}
}
