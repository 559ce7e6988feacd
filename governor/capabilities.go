package governor

import (
	"context"
	"time"
)

// ratesOf is b's RateBackend, else one that refuses by name: rate limits
// are an optional capability of a backend (see Backend).
func ratesOf(b Backend) RateBackend {
	if r, ok := b.(RateBackend); ok {
		return r
	}
	return noRates{}
}

// budgetsOf is b's BudgetBackend, else one that refuses by name.
func budgetsOf(b Backend) BudgetBackend {
	if r, ok := b.(BudgetBackend); ok {
		return r
	}
	return noBudgets{}
}

// lacks is the refusal of a call that needs capability iface.
func lacks(what, iface string) error {
	return invalid("this backend has no %s: it does not implement governor.%s", what, iface)
}

// noRates stands in for a backend without rate limits: reserving or
// adjusting a rate is refused, and there are none to list.
type noRates struct{}

func (noRates) RateReserve(context.Context, RateRequest) (RateResult, error) {
	return RateResult{}, lacks("rate limits", "RateBackend")
}

func (noRates) RateAdjust(context.Context, RateAdjustment) error {
	return lacks("rate limits", "RateBackend")
}

func (noRates) RateStatus(context.Context, Key) (RateStatus, error) {
	return RateStatus{}, lacks("rate limits", "RateBackend")
}

func (noRates) Rates(context.Context, string) ([]string, error) { return nil, nil }

// noBudgets stands in for a backend without spend budgets.
type noBudgets struct{}

func (noBudgets) BudgetReserve(context.Context, BudgetRequest) (BudgetResult, error) {
	return BudgetResult{}, lacks("spend budgets", "BudgetBackend")
}

func (noBudgets) BudgetSettle(context.Context, SettleRequest) (BudgetSettlement, error) {
	return BudgetSettlement{}, lacks("spend budgets", "BudgetBackend")
}

func (noBudgets) Budgets(context.Context, string, []string) ([]BudgetState, time.Time, error) {
	return nil, time.Time{}, nil
}

func (noBudgets) BudgetAdmin(context.Context, string, string, BudgetOp, int64, string) error {
	return lacks("spend budgets", "BudgetBackend")
}

func (noBudgets) BudgetEvents(context.Context, string) ([]BudgetEvent, error) { return nil, nil }
