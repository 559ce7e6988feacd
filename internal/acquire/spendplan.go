package acquire

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
)

// EnvSpend tells a command run with a cost which reservation it runs
// under: "LEASE BUDGET..." (lease ids and budget names hold no
// whitespace). 'governor settle' reads it.
const EnvSpend = "GOVERNOR_SPEND"

// SpendRequest is what a call may cost (docs/budgets.md): --cost, or
// --max-tokens and --input-tokens priced by the price table for --model;
// and --budget, budgets charged by name besides those whose scope holds
// the call. The zero value costs nothing and reserves nothing.
type SpendRequest struct {
	// Cost is an amount in units, optionally followed by the unit:
	// "0.50", "0.50USD", "0.50 USD".
	Cost                   string
	Model                  string
	MaxTokens, InputTokens int64
	Budgets                []string
}

// Spend is a SpendRequest planned against the configuration: the
// budgets it charges, all in Unit, and its estimate.
type Spend struct {
	Budgets  []governor.SpendBudget
	Estimate int64
	Unit     string
}

// Names are the names of the budgets s charges.
func (s *Spend) Names() []string {
	out := make([]string, len(s.Budgets))
	for i, b := range s.Budgets {
		out[i] = b.Name
	}
	return out
}

// ParseCost reads a cost in units with an optional unit after it
// ("0.50", "0.50USD", "0.50 USD"): micro-units and the unit ("" when
// none is written). Its errors name s and what is allowed.
func ParseCost(s string) (int64, string, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return r != '.' && (r < '0' || r > '9') })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.TrimSpace(t[i:])
	}
	v, err := governor.ParseBudgetAmount(num)
	if err != nil || (unit != "" && governor.ValidateBudgetUnit(unit) != nil) {
		return 0, "", fmt.Errorf("%w: cost %q; allowed: an amount in units, 0 or more with at most 6 decimals, optionally followed by the budgets' unit: 0.50 or 0.50USD",
			governor.ErrInvalid, s)
	}
	return v, unit, nil
}

// PlanSpend plans r for a call known by scope: the budgets charged (those
// of --budget, then those whose scope holds the call, each once) and the
// estimate. It returns nil when r asks no cost, and an ErrInvalid naming
// the bad value when r does not read: a negative count, --cost with
// --max-tokens, no price for --max-tokens, an unknown budget, budgets of
// different units or a cost in another unit, more than
// governor.MaxBudgetsPerCall budgets. A cost no budget applies to is
// planned with no budgets (nothing to reserve).
func PlanSpend(c config.Config, r SpendRequest, scope config.SpendScope) (*Spend, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", governor.ErrInvalid, fmt.Sprintf(format, args...))
	}
	switch {
	case r.MaxTokens < 0 || r.InputTokens < 0:
		return nil, bad("--max-tokens %d, --input-tokens %d; allowed: 0 or more", r.MaxTokens, r.InputTokens)
	case r.Cost != "" && (r.MaxTokens > 0 || r.InputTokens > 0):
		return nil, bad("--cost %s with --max-tokens or --input-tokens; allowed: one of --cost (an estimate given) or --max-tokens (priced by the price table)", r.Cost)
	case r.Cost == "" && r.MaxTokens == 0:
		if r.InputTokens > 0 || len(r.Budgets) > 0 || r.Model != "" {
			return nil, bad("--input-tokens, --model or --budget without a cost; allowed: with --cost N or --max-tokens N")
		}
		return nil, nil
	}
	s := &Spend{}
	var unit string
	if r.Cost != "" {
		v, u, err := ParseCost(r.Cost)
		if err != nil {
			return nil, err
		}
		s.Estimate, unit = v, u
	} else {
		if len(scope.Providers) != 1 {
			return nil, bad("--max-tokens with %d --provider; allowed: exactly one provider, whose price (prices.PROVIDER or prices.PROVIDER/MODEL) prices the call", len(scope.Providers))
		}
		p, ok := c.PriceFor(scope.Providers[0], scope.Model)
		if !ok {
			return nil, bad("no price for provider %q model %q; configure prices.%s or prices.%s/%s, or give --cost",
				scope.Providers[0], scope.Model, scope.Providers[0], scope.Providers[0], scope.Model)
		}
		s.Estimate = p.Estimate(r.InputTokens, r.MaxTokens)
		if s.Estimate > governor.MaxBudgetAmount {
			return nil, bad("estimate %d micro-units; allowed: at most %d", s.Estimate, int64(governor.MaxBudgetAmount))
		}
	}
	names := slices.Clone(r.Budgets)
	for _, n := range c.BudgetsFor(scope) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) > governor.MaxBudgetsPerCall {
		return nil, bad("%d budgets apply to this call; allowed: at most %d (narrow the budgets' scopes)", len(names), governor.MaxBudgetsPerCall)
	}
	for i, n := range names {
		if slices.Contains(names[:i], n) {
			continue // --budget given twice
		}
		b, err := c.SpendBudget(n)
		if err != nil {
			return nil, fmt.Errorf("--budget: %w", err)
		}
		if s.Unit != "" && b.Unit != s.Unit {
			return nil, bad("budgets %s (%s) and %s (%s) both apply to this call; allowed: budgets of one unit per call (a cost is in one unit)",
				s.Budgets[0].Name, s.Unit, b.Name, b.Unit)
		}
		s.Unit = b.Unit
		s.Budgets = append(s.Budgets, b)
	}
	if unit != "" && s.Unit != "" && unit != s.Unit {
		return nil, bad("cost %s is in %s; the budgets that apply (%s) are in %s", r.Cost, unit, strings.Join(s.Names(), ", "), s.Unit)
	}
	return s, nil
}

// Reserve reserves s's estimate on every budget, all or none, under
// lease, open for ttl (0: governor's default), as ifBusy says (reserve:
// fail 73 and skip 75 name the budget; wait waits until deadline, zero
// for no bound, set by --wait-timeout waitTimeout). It returns nil, nil
// when s charges no budget. Nothing is reserved on any error.
func (s *Spend) Reserve(ctx context.Context, g *governor.Governor, lease string, ttl time.Duration, ifBusy string,
	waitTimeout time.Duration, deadline time.Time) (*governor.BudgetReservation, error) {
	if len(s.Budgets) == 0 {
		return nil, nil
	}
	return reserve(ctx, g, spendAsk{Spends: s.spends(), Options: governor.BudgetOptions{Lease: lease, TTL: ttl},
		IfBusy: ifBusy, WaitTimeout: waitTimeout, Deadline: deadline})
}

// spends is s's estimate on each of its budgets.
func (s *Spend) spends() []governor.BudgetSpend {
	spends := make([]governor.BudgetSpend, len(s.Budgets))
	for i, b := range s.Budgets {
		spends[i] = governor.BudgetSpend{Budget: b, Amount: s.Estimate}
	}
	return spends
}

// FormatSpend is the value of EnvSpend for a reservation under lease on
// budgets names.
func FormatSpend(lease string, names []string) string {
	return strings.Join(append([]string{lease}, names...), " ")
}

// SpendFromEnv reads EnvSpend from env: the lease and the budgets; ok
// false when it is absent or empty.
func SpendFromEnv(env []string) (lease string, names []string, ok bool) {
	f := strings.Fields(Getenv(env, EnvSpend))
	if len(f) < 2 {
		return "", nil, false
	}
	return f[0], f[1:], true
}
