package governor_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/filebackend"
)

// TestDoSpend: a provider call reserves its estimate, settles the cost
// read from the response's usage, and a call that would pass the budget
// is refused without running.
func TestDoSpend(t *testing.T) {
	b, err := filebackend.New(t.TempDir(), filebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := governor.New(b, governor.Options{Project: "spend"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx := context.Background()
	p := g.Provider("anthropic", governor.ProviderLimits{MaxConcurrency: 2})
	price := governor.Price{Input: 3_000_000, Output: 15_000_000}
	day := governor.SpendBudget{Name: "anthropic-day", Limit: 100_000, Window: governor.BudgetWindow{Per: 24 * time.Hour}}
	est := price.Estimate(1000, 4000) // 63000
	body := []byte(`{"usage":{"input_tokens":1000,"output_tokens":200}}`)
	err = p.DoSpend(ctx, []governor.SpendBudget{day}, est, 5000, governor.BudgetOptions{}, func(ctx context.Context) (int64, int64, error) {
		u, ok := governor.UsageFromJSON(body)
		if !ok {
			return 0, -1, nil
		}
		return u.InputTokens + u.OutputTokens, price.Cost(u), nil
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
