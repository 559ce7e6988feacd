package governor

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DoSpend is Do with spend budgets: once the call holds its slot, it
// reserves cost, the call's upper-bound estimate, on every budget (all
// or none; o.Mode Wait waits, Fail returns the *BudgetBusyError) with
// its rate budget, runs fn, and settles what fn reports it cost — at
// the estimate when fn reports a negative cost (it could not tell), in
// full when above it (an overrun). tokens is Do's token estimate; fn
// reports the tokens it used, as for Do. A refused call runs nothing
// and uses no tokens. The budgets ride on the call's own round trips:
// the reserve on the rate's (RateRequest.Budget) when the rate
// allows at once, the settle on the slot's release
// (SettleRequest.Release) when there is a slot (MaxConcurrency), else on
// the token settle (SettleRequest.Adjust) when there is one. A call
// with neither settles alone, one round trip more, as does one whose
// rate made it wait or whose slot was lost. A settle that fails is in
// the returned error (the estimate then counts).
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
	sp := &spendAfter{spends: spends, o: o}
	err := p.do(ctx, tokens, sp, func(ctx context.Context) (int64, error) {
		r := sp.pending
		if r == nil { // not reserved with the rate
			var err error
			if r, err = p.g.ReserveBudgets(ctx, spends, o); err != nil {
				return 0, err
			}
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

// spendAfter is a provider call's spends (reserved with o) and its open
// reservation: pending once reserved with the call's rate, r (nil when
// none) once the call ran, with its actual cost, to settle with the
// release of the call's slot: sent says it went, err is the settle's
// outcome. A reservation pending that never ran stays open, counted at
// its estimate.
type spendAfter struct {
	spends  []BudgetSpend
	o       BudgetOptions
	pending *BudgetReservation
	r       *BudgetReservation
	actual  int64
	sent    bool
	err     error
}

// reserveWith reserves the call's rate req and its budgets: together
// when the rate allows at once (TryRateBudgets; pending is then the
// reservation, unless the budgets did not fit at once), else the rate
// alone, waiting (DoSpend's fn then reserves the budgets).
func (sp *spendAfter) reserveWith(ctx context.Context, g *Governor, req RateRequest) error {
	res, r, err := g.TryRateBudgets(ctx, req, sp.spends, sp.o)
	if err != nil {
		return err
	}
	if res.Allowed {
		sp.pending = r
		return nil
	}
	return g.waitRateAfter(ctx, req, max(res.RetryAfter, time.Millisecond))
}

// TryRateBudgets is TryRate(ctx, req) and one try of ReserveBudgets(ctx,
// spends, o) sent together (RateRequest.Budget: one round trip
// on Redis), for a call that takes both: it returns the rate's decision
// and, when the budgets fit too, their open reservation. A rate denied
// (or failed) leaves no budget reserved: budgets reserved beside it are
// settled at 0 at once (one more round trip, on that path only), so
// that nothing is held while the caller waits for the rate; an error
// there is returned (the estimate then counts). Budgets that do not fit
// at once (refused, windows not current, an error) leave r nil and the
// rate reserved, as a TryRate alone does: the caller then reserves them
// as ever (ReserveBudgets), which waits or says why.
func (g *Governor) TryRateBudgets(ctx context.Context, req RateRequest, spends []BudgetSpend, o BudgetOptions) (RateResult,
	*BudgetReservation, error) {
	if err := ValidateResource(req.Key.Resource); err != nil {
		return RateResult{}, nil, err
	}
	if req.Key.Project == "" {
		req.Key.Project = g.project
	}
	for _, s := range spends {
		if err := s.Budget.Validate(); err != nil {
			return RateResult{}, nil, err
		}
	}
	lease, secret := budgetLease(o)
	breq := g.budgetRequest(spends, lease, secret, o.TTL, time.Now())
	req.Budget = &breq
	res, err := g.b.RateReserve(ctx, req)
	bres := res.Budget
	var r *BudgetReservation
	if res.BudgetErr == nil {
		g.sawBudgets(bres.States)
		if bres.Allowed {
			r = &BudgetReservation{g: g, Lease: lease, Secret: secret, spends: spends, States: bres.States}
		}
	}
	if err == nil && res.Allowed {
		return res, r, nil
	}
	if r != nil {
		if _, uerr := r.Settle(ctx, 0); uerr != nil { // the call runs nothing now
			err = errors.Join(err, fmt.Errorf("the budgets reserved beside the rate denied were not released (the estimate counts): %w", uerr))
		}
	}
	return res, nil, err
}

// settleTokens is SettleTokens after a call, carrying the call's spend
// settle (SettleRequest.Adjust: one round trip on Redis) when it has
// no slot whose release could carry it.
func (p *Provider) settleTokens(ctx context.Context, estimate, used int64, sp *spendAfter) error {
	if sp == nil || sp.r == nil || sp.r.g != p.g || p.limits.MaxConcurrency > 0 {
		return p.SettleTokens(ctx, estimate, used)
	}
	if adjust, err := p.tokensToSettle(estimate, used); !adjust {
		return err
	}
	sp.sent = true
	var st BudgetSettlement
	st, sp.err = p.g.b.BudgetSettle(ctx, SettleRequest{Project: p.g.project, Lease: sp.r.Lease, Secret: sp.r.Secret,
		Actual: sp.r.evidence(sp.r.eachAt(sp.actual)), By: p.g.Identity(),
		Adjust: &RateAdjustment{Key: Key{p.g.project, p.resource}, Tokens: p.limits.Tokens, Delta: used - estimate}})
	return st.AdjustErr
}

// release releases l, the call's slot, with the settle when there is one.
func (sp *spendAfter) release(l *Lease) {
	if sp == nil || sp.r == nil {
		_ = l.Release()
		return
	}
	sp.sent = true
	_, sp.err = l.ReleaseSettle(sp.r, sp.r.eachAt(sp.actual))
}

// ReleaseSettle is Release with r's settle (r.SettleEach(actual)) sent
// with it (SettleRequest.Release: one round trip on Redis), for a caller
// whose reservation ends with its slot. The settle happens whatever the
// release finds: a lease lost or released before, whose release sends
// nothing, settles alone. It returns the settlement, with Release's
// error in its ReleaseErr, and the settle's error; a settle that fails
// leaves the estimate counted.
func (l *Lease) ReleaseSettle(r *BudgetReservation, actual []BudgetAmount) (BudgetSettlement, error) {
	var st BudgetSettlement
	var serr error
	sent := false
	var rerr error
	if r.g == l.g {
		rerr = l.release(func(ctx context.Context, l *Lease) error {
			sent = true
			st, serr = l.g.b.BudgetSettle(ctx, SettleRequest{Project: l.key.Project, Lease: r.Lease, Secret: r.Secret,
				Actual: r.evidence(actual), By: l.g.Identity(), Release: &Handle{Resource: l.key.Resource, ID: l.id, Secret: l.secret}})
			return st.ReleaseErr
		})
	} else {
		rerr = l.Release() // another Governor's reservation: apart
	}
	if !sent {
		st, serr = r.SettleEach(context.Background(), actual)
	}
	st.ReleaseErr = rerr
	return st, serr
}
