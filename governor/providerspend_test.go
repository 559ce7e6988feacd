package governor_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/leasetest"
)

// TestDoSpend: a provider call reserves its estimate, settles the cost
// read from the response's usage, and a call that would pass the budget
// is refused without running.
func TestDoSpend(t *testing.T) {
	g := leasetest.FileGovernor(t, t.TempDir(), governor.Options{Project: "spend"})
	ctx := context.Background()
	p := g.Provider("anthropic", governor.ProviderLimits{MaxConcurrency: 2})
	price := governor.Price{Input: 3_000_000, Output: 15_000_000}
	day := governor.SpendBudget{Name: "anthropic-day", Limit: 100_000, Window: governor.BudgetWindow{Per: 24 * time.Hour}}
	est, _ := price.Estimate(1000, 4000) // 63000
	body := []byte(`{"usage":{"input_tokens":1000,"output_tokens":200}}`)
	err := p.DoSpend(ctx, []governor.SpendBudget{day}, est, 5000, governor.BudgetOptions{}, func(ctx context.Context) (int64, int64, error) {
		u, ok := governor.UsageFromJSON(body)
		if !ok {
			return 0, -1, nil
		}
		cost, err := price.Cost(u)
		return u.InputTokens + u.OutputTokens, cost, err
	})
	if err != nil {
		t.Fatal(err)
	}
	sts, _, err := g.Budgets(ctx, nil)
	if err != nil || len(sts) != 1 || sts[0].Spent != 6000 || sts[0].Reserved != 0 {
		t.Fatalf("after one call: %+v, %v; want 6000 spent", sts, err)
	}
	ran := false
	err = p.DoSpend(ctx, []governor.SpendBudget{day}, 95_000, 5000, governor.BudgetOptions{}, func(ctx context.Context) (int64, int64, error) {
		ran = true
		return 0, 0, nil
	})
	var busy *governor.BudgetBusyError
	if !errors.As(err, &busy) || ran || busy.Budget.Spent != 6000 {
		t.Fatalf("95000 over 6000 of 100000: %v (ran %v); want refused without running", err, ran)
	}
}

// TestDoSpendRateWaits: a provider call without a slot whose rate makes
// it wait holds no budget while it waits (the reservation made with the
// denied rate is settled at 0), then reserves, runs once and settles:
// one reservation open during the call, none after.
func TestDoSpendRateWaits(t *testing.T) {
	g := leasetest.FileGovernor(t, t.TempDir(), governor.Options{Project: "spend"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := g.Provider("limited", governor.ProviderLimits{Requests: governor.RateLimit{Rate: 1, Period: 200 * time.Millisecond}})
	day := governor.SpendBudget{Name: "day", Limit: 1000, Window: governor.BudgetWindow{Per: 24 * time.Hour}}
	state := func() governor.BudgetState {
		sts, _, err := g.Budgets(ctx, []string{"day"})
		if err != nil || len(sts) != 1 {
			t.Fatalf("Budgets: %+v, %v", sts, err)
		}
		return sts[0]
	}
	for i := range 3 { // the first passes at once, the others wait for the rate
		runs := 0
		err := p.DoSpend(ctx, []governor.SpendBudget{day}, 40, 0, governor.BudgetOptions{Mode: governor.Wait},
			func(context.Context) (int64, int64, error) {
				runs++
				if st := state(); st.Reserved != 40 || st.Open != 1 {
					t.Errorf("call %d during the call: %+v; want its 40 reserved, once", i, st)
				}
				return 0, 10, nil
			})
		if err != nil || runs != 1 {
			t.Fatalf("call %d: %v, ran %d times", i, err, runs)
		}
	}
	if st := state(); st.Spent != 30 || st.Reserved != 0 || st.Open != 0 {
		t.Fatalf("after three calls of 10: %+v; want 30 spent, nothing reserved", st)
	}
}
