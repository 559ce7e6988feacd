package acquire_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/acquire"
)

// TestPlanCallSpend: a client's call is planned as 'governor run
// --provider' is: the budgets it gives in its order, then the configured
// budgets whose scope holds it, each once, of one unit, at most 32; the
// estimate given, else max_tokens at the configured price; nothing when
// it has neither an estimate nor a price.
func TestPlanCallSpend(t *testing.T) {
	c := config.Config{
		Budgets: map[string]config.Budget{
			"anthropic-day": {Limit: 1e6, Unit: "USD", Per: 24 * time.Hour, Providers: []string{"anthropic"}},
			"opus-hour":     {Limit: 1e6, Unit: "USD", Per: time.Hour, Models: []string{"opus"}},
			"tokens-day":    {Limit: 1e6, Unit: "tokens", Per: 24 * time.Hour, Models: []string{"tok"}},
			"evals":         {Limit: 1e6, Unit: "USD", Per: time.Hour, FairKeys: []string{"evals"}},
		},
		Prices: map[string]config.Price{"anthropic": {Input: 3e6, Output: 15e6}, "anthropic/opus": {Output: 75e6}},
	}
	est := func(v int64) *int64 { return &v }
	inline := &governor.SpendBudget{Name: "mine", Unit: "USD", Limit: 1, Window: governor.BudgetWindow{Per: time.Hour}}
	named := func(n string) acquire.CallBudget { return acquire.CallBudget{Name: n} }
	for _, tc := range []struct {
		name     string
		r        acquire.CallSpend
		scope    config.SpendScope
		budgets  string // names, or "nil" for no plan
		estimate int64
		err      string
	}{
		{"scoped, estimate given", acquire.CallSpend{Estimate: est(5)}, config.SpendScope{Providers: []string{"anthropic"}}, "anthropic-day", 5, ""},
		{"priced by the provider", acquire.CallSpend{MaxTokens: 1000, InputTokens: 1000}, config.SpendScope{Providers: []string{"anthropic"}}, "anthropic-day", 18000, ""},
		{"priced by the model", acquire.CallSpend{MaxTokens: 1000}, config.SpendScope{Providers: []string{"anthropic"}, Model: "opus"}, "anthropic-day,opus-hour", 75000, ""},
		{"no estimate, no price", acquire.CallSpend{MaxTokens: 1000}, config.SpendScope{Providers: []string{"openai"}}, "nil", 0, ""},
		{"nothing asked", acquire.CallSpend{}, config.SpendScope{Providers: []string{"anthropic"}}, "nil", 0, ""},
		{"an estimate nothing applies to", acquire.CallSpend{Estimate: est(1)}, config.SpendScope{Providers: []string{"openai"}}, "", 1, ""},
		{"given first, in order, each once", acquire.CallSpend{Budgets: []acquire.CallBudget{named("anthropic-day"), {Inline: inline}, named("evals"), named("evals")}, Estimate: est(0)},
			config.SpendScope{Providers: []string{"anthropic"}}, "anthropic-day,mine,evals", 0, ""},
		{"inline as a configured one in scope", acquire.CallSpend{Budgets: []acquire.CallBudget{{Inline: &governor.SpendBudget{Name: "anthropic-day"}}}, Estimate: est(1)},
			config.SpendScope{Providers: []string{"anthropic"}}, "", 0, "given inline and is a configured budget"},
		// Through the bridge, an inline budget named as a configured one
		// on an unrelated call was accepted.
		{"inline as a configured one out of scope", acquire.CallSpend{Budgets: []acquire.CallBudget{{Inline: &governor.SpendBudget{Name: "evals", Unit: "USD", Limit: 1000}}}, Estimate: est(1)},
			config.SpendScope{Providers: []string{"other"}}, "", 0, "budget evals is given inline and is a configured budget"},
		{"two units", acquire.CallSpend{Estimate: est(1)}, config.SpendScope{Providers: []string{"anthropic"}, Model: "tok"}, "", 0, "both apply to this call"},
		{"unknown name", acquire.CallSpend{Budgets: []acquire.CallBudget{named("nope")}, Estimate: est(1)}, config.SpendScope{}, "", 0, `budget "nope" is not configured`},
		{"budgets without an estimate", acquire.CallSpend{Budgets: []acquire.CallBudget{named("evals")}}, config.SpendScope{}, "", 0, "without an estimate"},
		{"budgets, max_tokens, no price", acquire.CallSpend{Budgets: []acquire.CallBudget{named("evals")}, MaxTokens: 5}, config.SpendScope{Providers: []string{"openai"}}, "", 0, `no price for provider "openai"`},
		{"estimate out of range", acquire.CallSpend{Estimate: est(-1)}, config.SpendScope{}, "", 0, "estimate -1"},
		{"max_tokens whose cost passes int64", acquire.CallSpend{MaxTokens: 1229782938247303441}, config.SpendScope{Providers: []string{"anthropic"}}, "", 0,
			"1229782938247303441 output tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := acquire.PlanCallSpend(c, tc.r, tc.scope)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v; want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := "nil"
			if s != nil {
				got = strings.Join(s.Names(), ",")
				if s.Estimate != tc.estimate {
					t.Errorf("estimate %d; want %d", s.Estimate, tc.estimate)
				}
			}
			if got != tc.budgets {
				t.Errorf("budgets %q; want %q", got, tc.budgets)
			}
		})
	}
	t.Run("at most 32", func(t *testing.T) {
		var bs []acquire.CallBudget
		for i := range governor.MaxBudgetsPerCall {
			bs = append(bs, acquire.CallBudget{Inline: &governor.SpendBudget{Name: fmt.Sprint("b", i), Unit: "USD"}})
		}
		_, err := acquire.PlanCallSpend(c, acquire.CallSpend{Budgets: bs, Estimate: est(1)}, config.SpendScope{Providers: []string{"anthropic"}})
		if err == nil || !strings.Contains(err.Error(), "33 budgets apply to this call; allowed: at most 32") {
			t.Fatalf("err %v; want 33 refused", err)
		}
	})
}
