package acquire

import (
	"context"
	"errors"
	"fmt"

	"github.com/governor-dev/governor/governor"
)

// validSpend checks the spend budgets of req (Request.Budgets): each
// budget valid and named once, an estimate in range, and an estimate only
// with budgets to charge it to.
func validSpend(req Request) error {
	if req.Cost < 0 || req.Cost > governor.MaxBudgetAmount {
		return fmt.Errorf("%w: cost estimate %d micro-units; allowed: 0 to %d", governor.ErrInvalid, req.Cost, int64(governor.MaxBudgetAmount))
	}
	if len(req.Budgets) == 0 {
		if req.Cost != 0 {
			return fmt.Errorf("%w: a cost estimate (%d micro-units) with no spend budget; give the budgets it is charged to", governor.ErrInvalid, req.Cost)
		}
		return nil
	}
	if len(req.Budgets) > governor.MaxBudgetsPerCall {
		return fmt.Errorf("%w: %d spend budgets; allowed: 1 to %d", governor.ErrInvalid, len(req.Budgets), governor.MaxBudgetsPerCall)
	}
	seen := map[string]bool{}
	for _, b := range req.Budgets {
		if err := b.Validate(); err != nil {
			return err
		}
		if seen[b.Name] {
			return fmt.Errorf("%w: spend budget %s is given twice; give each budget once", governor.ErrInvalid, b.Name)
		}
		seen[b.Name] = true
	}
	return nil
}

// reserveSpend reserves the plan's cost estimate on every spend budget,
// all or none, once the slots and rate budgets are held (a call waiting
// for a slot holds no budget). A refusal is handled as a busy slot: fail
// 73 and skip 75 name the budget, its spent, reserved, limit and reset
// time; wait waits until the budget fits (others settle below their
// estimates, or the window resets) or --wait-timeout passes. It returns
// nil when the plan has no budgets; on error nothing is reserved.
func (p *Plan) reserveSpend(ctx context.Context, g *governor.Governor, mode governor.Mode) (*governor.BudgetReservation, error) {
	if len(p.req.Budgets) == 0 {
		return nil, nil
	}
	spends := make([]governor.BudgetSpend, 0, len(p.req.Budgets))
	for _, b := range p.req.Budgets {
		spends = append(spends, governor.BudgetSpend{Budget: b, Amount: p.req.Cost})
	}
	r, err := g.ReserveBudgets(ctx, spends, governor.BudgetOptions{Mode: mode})
	if mode == governor.Wait && err != nil && errors.Is(err, context.DeadlineExceeded) && p.req.WaitTimeout > 0 {
		// The wait's error names no budget: one last try, with a fresh
		// context, says which refuses now (or gets the reservation).
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), governor.DefaultReleaseTimeout)
		defer cancel()
		r, err = g.ReserveBudgets(tctx, spends, governor.BudgetOptions{})
		var busy *governor.BudgetBusyError
		if errors.As(err, &busy) {
			return nil, &NotAcquiredError{Msg: fmt.Sprintf("%v; not available within --wait-timeout %v", busy, p.req.WaitTimeout), Budget: busy}
		}
	}
	var busy *governor.BudgetBusyError
	if errors.As(err, &busy) {
		na := &NotAcquiredError{Msg: busy.Error(), Budget: busy}
		if p.ifBusy == IfBusySkip {
			na.Msg += "; skipped (--if-busy skip)"
			na.Skipped = true
		}
		return nil, na
	}
	return r, err
}

// Spend is the open spend reservation this call made (nil: it asked
// for no budget): settle it after the work (Settle, SettleEach); one
// never settled counts at its estimate once its TTL passes.
func (h *Held) Spend() *governor.BudgetReservation { return h.spend }
