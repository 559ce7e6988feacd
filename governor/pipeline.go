package governor

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Ask is one request of the acquire pipeline: the one path by which
// Provider.Do and DoSpend, `governor run`, `governor acquire` and the
// bridge (so both clients) take what a call needs. Governor.Hold takes
// it in this order, into one Held:
//
//  1. Wants: concurrency slots (each with its weight, limit, queue
//     policy and Mode), in the lock order (AcquireAll; Slots, when set,
//     takes them instead, for a caller that holds something beside a
//     lease, such as the tool's mkdir slots);
//  2. Rates: one reservation of each rate budget, in the order given,
//     as Mode says: Wait waits, Fail refuses with a *RateBusyError;
//  3. Spends: each budget's estimate, all or none, under Budget (its
//     Lease, Secret and TTL, the TTL by ReservationTTL's rule; its Mode
//     is the budgets' Wait or Fail, whose refusal is a
//     *BudgetBusyError). The reserve rides on the last rate's first try
//     (TryRateBudgets: one round trip on Redis), else goes alone.
//
// A call waiting for a slot holds no rate or budget, and one waiting
// for a rate holds no budget. Rates and budgets wait under the leases'
// context: a lease lost ends the wait with its error. Waits end with
// ctx (its error) or at Deadline: the slots' error is then AcquireAll's
// (context.DeadlineExceeded), a rate's or a budget's a
// *WaitTimeoutError naming what was waited for (a budget is asked once
// more, not waiting, so that it names where the budget stands). On any
// error nothing is held.
//
// The Held releases and settles together: Release frees the leases in
// reverse acquisition order and sends the settle asked for
// (SettleOnRelease) with the first (Backend.ReleaseSettle: no round
// trip of its own on Redis), or alone when no lease is freed.
type Ask struct {
	Wants  []Want
	Rates  []RateRequest
	Spends []BudgetSpend
	Budget BudgetOptions
	// BudgetUnderLease reserves under the first lease's id and secret
	// (a lease that outlives the process: its handle then proves the
	// reservation too), instead of Budget.Lease and Budget.Secret.
	BudgetUnderLease bool
	// Mode is how the rates wait: Wait (the zero Mode is Fail).
	Mode     Mode
	Deadline time.Time // zero: no bound but ctx
	// Slots, when set, takes Wants (in the lock order: see Less) and
	// returns their leases in acquisition order; on an error it holds
	// nothing. OnRelease, when set, is called just before each lease of
	// the Held is released (what Slots held beside it).
	Slots     func(ctx context.Context, wants []Want) ([]*Lease, error)
	OnRelease func(l *Lease) error
}

// RateBusyError is a rate budget that refused an Ask: Key's rate, and
// its decision (when to retry; a cool-off in force). It is ErrBusy.
type RateBusyError struct {
	Key    Key
	Result RateResult
}

func (e *RateBusyError) Error() string {
	if !e.Result.CoolOff.IsZero() {
		return fmt.Sprintf("governor: rate of %s: cooling off until %s", e.Key.Resource, e.Result.CoolOff.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("governor: rate of %s: limit reached; retry after %v", e.Key.Resource, e.Result.RetryAfter.Round(time.Millisecond))
}

// Is makes a RateBusyError match ErrBusy.
func (e *RateBusyError) Is(target error) bool { return target == ErrBusy }

// WaitTimeoutError is a wait of an Ask that its Deadline ended: Err is
// what was waited for (a *RateBusyError, or the *BudgetBusyError of the
// last try). It is context.DeadlineExceeded too.
type WaitTimeoutError struct{ Err error }

func (e *WaitTimeoutError) Error() string { return e.Err.Error() + " (the wait's deadline passed)" }

func (e *WaitTimeoutError) Unwrap() []error { return []error{e.Err, context.DeadlineExceeded} }

// Hold takes a (see Ask) and returns what it holds.
func (g *Governor) Hold(ctx context.Context, a Ask) (*Held, error) {
	h := &Held{g: g, onRelease: a.OnRelease}
	wctx := ctx
	if !a.Deadline.IsZero() {
		var cancel context.CancelFunc
		wctx, cancel = context.WithDeadline(ctx, a.Deadline)
		defer cancel()
	}
	timedOut := func(err error) bool {
		return !a.Deadline.IsZero() && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded)
	}
	if len(a.Wants) > 0 {
		slots := a.Slots
		if slots == nil {
			slots = g.AcquireAll
		}
		ls, err := slots(wctx, a.Wants)
		if err != nil {
			return nil, err
		}
		h.leases = ls
	}
	fail := func(err error) (*Held, error) {
		_ = h.Release()
		return nil, err
	}
	lctx, cancel := h.Context(wctx)
	defer cancel()
	o := a.Budget
	if a.BudgetUnderLease && len(h.leases) > 0 {
		o.Lease, o.Secret = h.leases[0].id, h.leases[0].secret
	}
	for i, req := range a.Rates {
		withSpend := len(a.Spends) > 0 && i == len(a.Rates)-1
		r, err := g.takeRate(lctx, req, a.Mode, withSpend, a.Spends, o)
		if timedOut(err) {
			err = &WaitTimeoutError{Err: &RateBusyError{Key: req.Key}}
		}
		if err != nil {
			return fail(err)
		}
		h.spend = r
	}
	if len(a.Spends) > 0 && h.spend == nil {
		r, err := g.ReserveBudgets(lctx, a.Spends, o)
		if timedOut(err) {
			// The wait's error names no budget: once more, not waiting,
			// it may fit now, else the refusal says where each stands.
			o.Mode = Fail
			if r, err = g.ReserveBudgets(ctx, a.Spends, o); err != nil {
				err = &WaitTimeoutError{Err: err}
			}
		}
		if err != nil {
			return fail(err)
		}
		h.spend = r
	}
	return h, nil
}

// takeRate reserves req once (Fail: a denial is a *RateBusyError) or
// waiting (Wait); withSpend, the first try carries the reservation of
// spends under o (TryRateBudgets), returned when they fitted at once.
func (g *Governor) takeRate(ctx context.Context, req RateRequest, mode Mode, withSpend bool, spends []BudgetSpend,
	o BudgetOptions) (*BudgetReservation, error) {
	if req.Key.Project == "" {
		req.Key.Project = g.project
	}
	var res RateResult
	var r *BudgetReservation
	var err error
	if withSpend {
		res, r, err = g.TryRateBudgets(ctx, req, spends, o)
	} else if mode != Wait {
		res, err = g.TryRate(ctx, req)
	} else {
		return nil, g.WaitRate(ctx, req)
	}
	switch {
	case err != nil:
		return nil, err
	case res.Allowed:
		return r, nil
	case mode == Wait:
		return nil, g.waitRateAfter(ctx, req, max(res.RetryAfter, time.Millisecond))
	}
	return nil, &RateBusyError{Key: req.Key, Result: res}
}
