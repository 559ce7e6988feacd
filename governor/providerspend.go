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
// the reserve on the rate's (Backend.RateBudgetReserve) when the rate
// allows at once, the settle on the slot's release
// (Backend.ReleaseSettle) when there is a slot (MaxConcurrency), else on
// the token settle (Backend.RateAdjustSettle) when there is one. A call
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
	return p.do(ctx, tokens, spends, o, func(ctx context.Context) (int64, int64, error) {
		used, actual, err := fn(ctx)
		if actual < 0 {
			actual = cost
		}
		return used, actual, err
	})
}

// joinSettle is err with serr, a spend settle's error, when there is one.
func joinSettle(err, serr error) error {
	if serr == nil {
		return err
	}
	return errors.Join(err, fmt.Errorf("the call's cost was not settled (it counts at its estimate): %w", serr))
}

// runAlone runs fn without the call's slot and rate (degraded mode),
// its spends reserved (with o) and settled around it.
func (p *Provider) runAlone(ctx context.Context, spends []BudgetSpend, o BudgetOptions,
	fn func(ctx context.Context) (int64, int64, error)) (int64, error) {
	if len(spends) == 0 {
		used, _, err := fn(ctx)
		return used, err
	}
	r, err := p.g.reserveBudgets(ctx, spends, o)
	if err != nil {
		return 0, err
	}
	used, actual, err := fn(ctx)
	_, serr := r.Settle(ctx, actual)
	return used, joinSettle(err, serr)
}

// tryRateBudgets is tryRate(ctx, req) and one try of ReserveBudgets(ctx,
// spends, o) sent together (RateRequest.Budget: one round trip
// on Redis), for a call that takes both: it returns the rate's decision
// and, when the budgets fit too, their open reservation. A rate denied
// (or failed) leaves no budget reserved: budgets reserved beside it are
// settled at 0 at once (one more round trip, on that path only), so
// that nothing is held while the caller waits for the rate; an error
// there is returned (the estimate then counts). Budgets that do not fit
// at once (refused, windows not current, an error) leave r nil and the
// rate reserved, as a tryRate alone does: the caller then reserves them
// as ever (reserveBudgets), which waits or says why.
func (g *Governor) tryRateBudgets(ctx context.Context, req RateRequest, spends []BudgetSpend, o BudgetOptions) (RateResult,
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
	res, err := g.rates.RateReserve(ctx, req)
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

// settleTokens is SettleTokens after a call of h, with the settle of
// h's spend reservation at actual: asked of h's release when it holds
// the call's slot (Held.SettleOnRelease), else carried by the token
// settle (SettleRequest.Adjust: one round trip on Redis) when there
// is one, else alone at h's release. serr is set to the spend settle's
// error.
func (p *Provider) settleTokens(ctx context.Context, estimate, used int64, h *Held, actual int64, serr *error) error {
	r := h.Spend
	if r == nil {
		return p.SettleTokens(ctx, estimate, used)
	}
	amounts := r.eachAt(actual)
	adjust, err := p.tokensToSettle(estimate, used)
	if adjust && p.g.settleLocalTokens(p.rateRequest(estimate), used-estimate) {
		adjust = false // settled into the tokens' share (caprate.go)
	}
	if !adjust || len(h.Leases) > 0 {
		h.SettleOnRelease(r, amounts, func(_ BudgetSettlement, err error) { *serr = err })
		if adjust {
			return p.SettleTokens(ctx, estimate, used)
		}
		return err
	}
	var st BudgetSettlement
	st, *serr = p.g.budgets.BudgetSettle(ctx, SettleRequest{Project: p.g.project, Lease: r.Lease, Secret: r.Secret,
		Actual: r.evidence(amounts), By: p.g.Identity(),
		Adjust: &RateAdjustment{Key: Key{p.g.project, p.resource}, Tokens: p.limits.Tokens, Delta: used - estimate}})
	return st.AdjustErr
}

// releaseSettle is Release with r's settle (r.SettleEach(actual)) sent
// with it (SettleRequest.Release: one round trip on Redis), for a caller
// whose reservation ends with its slot. The settle happens whatever the
// release finds: a lease lost or released before, whose release sends
// nothing, settles alone. It returns the settlement, with Release's
// error in its ReleaseErr, and the settle's error; a settle that fails
// leaves the estimate counted.
func (l *Lease) releaseSettle(r *BudgetReservation, actual []BudgetAmount) (BudgetSettlement, error) {
	var st BudgetSettlement
	var serr error
	sent := false
	var rerr error
	if r.g == l.g {
		rerr = l.release(func(ctx context.Context, l *Lease) error {
			sent = true
			st, serr = l.g.budgets.BudgetSettle(ctx, SettleRequest{Project: l.key.Project, Lease: r.Lease, Secret: r.Secret,
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
