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
// and uses no tokens. With a slot (MaxConcurrency), the settle goes with
// the slot's release (Backend.ReleaseSettle: one round trip on Redis),
// so that the budgets add one round trip to the call, the reserve;
// without one, or when the slot was lost, it goes alone. A settle that
// fails is in the returned error (the estimate then counts).
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
	sp := &spendAfter{}
	err := p.do(ctx, tokens, sp, func(ctx context.Context) (int64, error) {
		r, err := p.g.ReserveBudgets(ctx, spends, o)
		if err != nil {
			return 0, err
		}
		used, actual, err := fn(ctx)
		if actual < 0 {
			actual = cost
		}
		sp.r, sp.actual = r, actual
		return used, err
	})
	if sp.r != nil && !sp.sent {
		_, sp.err = sp.r.Settle(ctx, sp.actual) // no slot to go with
	}
	if sp.err != nil {
		err = errors.Join(err, fmt.Errorf("the call's cost was not settled (it counts at its estimate): %w", sp.err))
	}
	return err
}

// spendAfter is a provider call's open spend reservation (r, nil when
// none) and its actual cost, to settle with the release of the call's
// slot: sent says it went, err is the settle's outcome.
type spendAfter struct {
	r      *BudgetReservation
	actual int64
	sent   bool
	err    error
}

// release releases l, the call's slot, with the settle when there is one.
func (sp *spendAfter) release(l *Lease) {
	if sp == nil || sp.r == nil {
		_ = l.Release()
		return
	}
	sp.sent = true
	_, sp.err, _ = l.ReleaseSettle(sp.r, sp.r.eachAt(sp.actual))
}

// ReleaseSettle is Release with r's settle (r.SettleEach(actual)) sent
// with it (Backend.ReleaseSettle: one round trip on Redis), for a caller
// whose reservation ends with its slot. The settle happens whatever the
// release finds: a lease lost or released before, whose release sends
// nothing, settles alone. It returns the settlement and the settle's
// error, then Release's error; a settle that fails leaves the estimate
// counted.
func (l *Lease) ReleaseSettle(r *BudgetReservation, actual []BudgetAmount) (BudgetSettlement, error, error) {
	var st BudgetSettlement
	var serr error
	sent := false
	var rerr error
	if r.g == l.g {
		rerr = l.release(func(ctx context.Context, l *Lease) error {
			sent = true
			var err error
			st, serr, err = l.g.b.ReleaseSettle(ctx, l.key, l.id, l.secret, r.Lease, r.evidence(actual), l.g.Identity())
			return err
		})
	} else {
		rerr = l.Release() // another Governor's reservation: apart
	}
	if !sent {
		st, serr = r.SettleEach(context.Background(), actual)
	}
	return st, serr, rerr
}
