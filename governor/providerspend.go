package governor

import (
	"context"
	"errors"
	"fmt"
)

// DoSpend is Do with spend budgets: once the call holds its slot and
// rate budget, it reserves cost, the call's upper-bound estimate, on
// every budget (all or none; o.Mode Wait waits, Fail returns the
// *BudgetBusyError), runs fn, and settles what fn reports it cost — at
// the estimate when fn reports a negative cost (it could not tell), in
// full when above it (an overrun). tokens is Do's token estimate; fn
// reports the tokens it used, as for Do. A refused call runs nothing
// and uses no tokens.
func (p *Provider) DoSpend(ctx context.Context, budgets []SpendBudget, cost, tokens int64, o BudgetOptions,
	fn func(ctx context.Context) (usedTokens, actualCost int64, err error)) error {
	if cost < 0 {
		return invalid("cost estimate %d; allowed: 0 or more micro-units", cost)
	}
	spends := make([]BudgetSpend, 0, len(budgets))
	for _, b := range budgets {
		if err := b.Validate(); err != nil {
			return err
		}
		spends = append(spends, BudgetSpend{Budget: b, Amount: cost})
	}
	return p.Do(ctx, tokens, func(ctx context.Context) (int64, error) {
		r, err := p.g.ReserveBudgets(ctx, spends, o)
		if err != nil {
			return 0, err
		}
		used, actual, err := fn(ctx)
		if actual < 0 {
			actual = cost
		}
		if _, serr := r.Settle(ctx, actual); serr != nil {
			err = errors.Join(err, fmt.Errorf("the call's cost was not settled (it counts at its estimate): %w", serr))
		}
		return used, err
	})
}
