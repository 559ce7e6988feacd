package acquire

import (
	"fmt"
	"slices"
	"strings"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
)

// EnvSpend tells a command run with a cost which reservation it runs
// under, and proves it: "LEASE.SECRET BUDGET..." (the reservation's
// governor.SpendKey; lease ids, secrets and budget names hold no
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
	// Price is the price table's price of the call (prices.PROVIDER/MODEL,
	// else prices.PROVIDER), when Priced: what its usage costs.
	Price  governor.Price
	Priced bool
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
// none is written). It is the one reader of a cost given on the command
// line (run, acquire, settle). An empty cost, an exponent ("2e3": write
// 2000) and anything ParseBudgetAmount or ValidateBudgetUnit refuses is
// an ErrInvalid naming s and what is allowed.
func ParseCost(s string) (int64, string, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return r != '.' && (r < '0' || r > '9') })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.TrimSpace(t[i:])
	}
	switch {
	case t == "":
		return 0, "", fmt.Errorf("%w: empty cost; allowed: %s", governor.ErrInvalid, costForm)
	case governor.IsAmountExponent(unit):
		return 0, "", fmt.Errorf("%w: cost %q has an exponent (%s); allowed: %s (2000, not 2e3)",
			governor.ErrInvalid, s, unit, costForm)
	}
	v, err := governor.ParseBudgetAmount(num)
	if err != nil || (unit != "" && governor.ValidateBudgetUnit(unit) != nil) {
		return 0, "", fmt.Errorf("%w: cost %q; allowed: %s", governor.ErrInvalid, s, costForm)
	}
	return v, unit, nil
}

// costForm says what ParseCost reads, for messages.
const costForm = "an amount in units, 0 or more with at most 6 decimals and no exponent, optionally followed by the budgets' unit: 0.50 or 0.50USD"

// PlanSpend plans r for a call known by scope: the budgets charged (those
// of --budget, then those whose scope holds the call, each once) and the
// estimate. It returns nil when r asks no cost, and an ErrInvalid naming
// the bad value when r does not read: a negative count, --cost with
// --max-tokens, no price for --max-tokens, an unknown budget, budgets of
// different units or a cost in another unit, more than
// governor.MaxBudgetsPerCall budgets. A cost no budget applies to is
// planned with no budgets (nothing to reserve).
func PlanSpend(c config.Config, r SpendRequest, scope config.SpendScope) (*Spend, error) {
	switch {
	case r.MaxTokens < 0 || r.InputTokens < 0:
		return nil, badSpend("--max-tokens %d, --input-tokens %d; allowed: 0 or more", r.MaxTokens, r.InputTokens)
	case r.Cost != "" && (r.MaxTokens > 0 || r.InputTokens > 0):
		return nil, badSpend("--cost %s with --max-tokens or --input-tokens; allowed: one of --cost (an estimate given) or --max-tokens (priced by the price table)", r.Cost)
	case r.Cost == "" && r.MaxTokens == 0:
		if r.InputTokens > 0 || len(r.Budgets) > 0 || r.Model != "" {
			return nil, badSpend("--input-tokens, --model or --budget without a cost; allowed: with --cost N or --max-tokens N")
		}
		return nil, nil
	}
	s := &Spend{}
	s.Price, s.Priced = priceOf(c, scope)
	var unit string
	if r.Cost != "" {
		v, u, err := ParseCost(r.Cost)
		if err != nil {
			return nil, err
		}
		s.Estimate, unit = v, u
	} else {
		v, err := priceEstimate(scope, s.Price, s.Priced, r.InputTokens, r.MaxTokens)
		if err != nil {
			return nil, err
		}
		s.Estimate = v
	}
	var err error
	given := make([]CallBudget, len(r.Budgets))
	for i, n := range r.Budgets {
		given[i] = CallBudget{Name: n}
	}
	if s.Budgets, s.Unit, err = spendBudgets(c, given, scope); err != nil {
		return nil, err
	}
	if unit != "" && s.Unit != "" && unit != s.Unit {
		return nil, badSpend("cost %s is in %s; the budgets that apply (%s) are in %s", r.Cost, unit, strings.Join(s.Names(), ", "), s.Unit)
	}
	return s, nil
}

// CallSpend is what a client's call through the bridge may cost
// (docs/bridge-protocol.md): the budgets it gives, the estimate given
// (nil: none), or MaxTokens and InputTokens priced by the price table.
type CallSpend struct {
	Budgets                []CallBudget
	Estimate               *int64
	MaxTokens, InputTokens int64
}

// CallBudget is a budget a call gives: Inline, or by Name a budget of
// the configuration (budgets.NAME).
type CallBudget struct {
	Name   string
	Inline *governor.SpendBudget
}

// PlanCallSpend plans r for a call known by scope as PlanSpend plans
// 'governor run --provider': the budgets charged are those given, then
// those named, then those whose scope holds the call, each once, in one
// unit, at most governor.MaxBudgetsPerCall; the estimate is the one
// given, else MaxTokens priced by the price table (one provider) when it
// has a price for the call. It returns nil when the call asks no cost:
// no estimate, no price for it and no budget given (as run without
// --cost: nothing is charged). Errors are ErrInvalid naming the bad
// value: PlanSpend's, an estimate out of range, budgets given without an
// estimate or a price, an inline budget named as a configured budget
// that applies.
func PlanCallSpend(c config.Config, r CallSpend, scope config.SpendScope) (*Spend, error) {
	if r.MaxTokens < 0 || r.InputTokens < 0 {
		return nil, badSpend("max_tokens %d, tokens %d; allowed: 0 or more", r.MaxTokens, r.InputTokens)
	}
	s := &Spend{}
	s.Price, s.Priced = priceOf(c, scope)
	given := len(r.Budgets) > 0
	switch {
	case r.Estimate != nil:
		if *r.Estimate < 0 || *r.Estimate > governor.MaxBudgetAmount {
			return nil, badSpend("estimate %d micro-units; allowed: 0 to %d", *r.Estimate, int64(governor.MaxBudgetAmount))
		}
		s.Estimate = *r.Estimate
	case r.MaxTokens > 0 && (s.Priced || given):
		v, err := priceEstimate(scope, s.Price, s.Priced, r.InputTokens, r.MaxTokens)
		if err != nil {
			return nil, err
		}
		s.Estimate = v
	case given:
		return nil, badSpend("budgets without an estimate; allowed: budgets with the call's upper-bound estimate (in their unit), or with max_tokens priced by the price table (prices.PROVIDER or prices.PROVIDER/MODEL)")
	default:
		return nil, nil
	}
	var err error
	if s.Budgets, s.Unit, err = spendBudgets(c, r.Budgets, scope); err != nil {
		return nil, err
	}
	return s, nil
}

func badSpend(format string, args ...any) error {
	return fmt.Errorf("%w: %s", governor.ErrInvalid, fmt.Sprintf(format, args...))
}

// priceOf is the price of the call known by scope (config.PriceFor):
// ok false without one provider or a price for it.
func priceOf(c config.Config, scope config.SpendScope) (governor.Price, bool) {
	if len(scope.Providers) != 1 {
		return governor.Price{}, false
	}
	return c.PriceFor(scope.Providers[0], scope.Model)
}

// priceEstimate is the estimate of a call of maxTokens output and
// inputTokens input at p, the price of the call known by scope (ok
// false: none).
func priceEstimate(scope config.SpendScope, p governor.Price, ok bool, inputTokens, maxTokens int64) (int64, error) {
	if len(scope.Providers) != 1 {
		return 0, badSpend("--max-tokens with %d --provider; allowed: exactly one provider, whose price (prices.PROVIDER or prices.PROVIDER/MODEL) prices the call", len(scope.Providers))
	}
	if !ok {
		return 0, badSpend("no price for provider %q model %q; configure prices.%s or prices.%s/%s, or give --cost",
			scope.Providers[0], scope.Model, scope.Providers[0], scope.Providers[0], scope.Model)
	}
	return p.Estimate(inputTokens, maxTokens)
}

// spendBudgets are the budgets a call known by scope charges: those
// given (inline, or configured ones by name; a name given twice counts
// once), then the configured budgets whose scope holds the call not
// given before, all of one unit (returned), at most
// governor.MaxBudgetsPerCall.
func spendBudgets(c config.Config, given []CallBudget, scope config.SpendScope) ([]governor.SpendBudget, string, error) {
	named := func(n string) bool {
		return slices.ContainsFunc(given, func(b CallBudget) bool { return b.Inline == nil && b.Name == n })
	}
	// An inline budget of a configured budget's name would charge that
	// budget's state under a definition of the caller's own.
	for _, b := range given {
		if _, ok := c.Budgets[inlineName(b)]; ok {
			n := b.Inline.Name
			return nil, "", badSpend("budget %s is given inline and is a configured budget; allowed: its name alone (\"%s\") to charge it, or an inline budget of another name", n, n)
		}
	}
	all := slices.Clone(given)
	for _, n := range c.BudgetsFor(scope) {
		if !named(n) {
			all = append(all, CallBudget{Name: n})
		}
	}
	if len(all) > governor.MaxBudgetsPerCall {
		return nil, "", badSpend("%d budgets apply to this call; allowed: at most %d (narrow the budgets' scopes)", len(all), governor.MaxBudgetsPerCall)
	}
	out := make([]governor.SpendBudget, 0, len(all))
	for i, cb := range all {
		if cb.Inline != nil {
			out = append(out, *cb.Inline)
			continue
		}
		if slices.ContainsFunc(all[:i], func(b CallBudget) bool { return b.Inline == nil && b.Name == cb.Name }) {
			continue // --budget given twice
		}
		b, err := c.SpendBudget(cb.Name)
		if err != nil {
			return nil, "", fmt.Errorf("--budget: %w", err)
		}
		out = append(out, b)
	}
	unit := ""
	for _, b := range out {
		if unit != "" && b.Unit != unit {
			return nil, "", badSpend("budgets %s (%s) and %s (%s) both apply to this call; allowed: budgets of one unit per call (a cost is in one unit)",
				out[0].Name, unit, b.Name, b.Unit)
		}
		unit = b.Unit
	}
	return out, unit, nil
}

// inlineName is b's name when it is given inline, else "".
func inlineName(b CallBudget) string {
	if b.Inline == nil {
		return ""
	}
	return b.Inline.Name
}

// FormatSpend is the value of EnvSpend for reservation r on budgets
// names.
func FormatSpend(r *governor.BudgetReservation, names []string) string {
	return strings.Join(append([]string{r.SpendKey()}, names...), " ")
}

// SpendFromEnv reads EnvSpend from env: the reservation's key
// (governor.ParseSpendKey reads it) and the budgets; ok false when it is
// absent or empty.
func SpendFromEnv(env []string) (key string, names []string, ok bool) {
	f := strings.Fields(Getenv(env, EnvSpend))
	if len(f) < 2 {
		return "", nil, false
	}
	return f[0], f[1:], true
}
