package governor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Ask is one request of the acquire pipeline: the one path by which
// Provider.Do and DoSpend, `governor run`, `governor acquire` and the
// bridge (so both clients) take what a call needs. Governor.Hold takes
// it in this order, into one Held:
//
//  1. Wants: concurrency slots (each with its weight, limit, queue
//     policy and Mode), in the lock order (Options.LockOrder, then
//     name); Slots, when set, takes them instead, for a caller that
//     holds something beside a lease (the tool's mkdir slots);
//  2. Rates: one reservation of each rate budget, in the order given,
//     as Mode says: Wait waits, Fail refuses with a *RateBusyError;
//  3. Spends: each budget's estimate, all or none, under Budget (its
//     Lease, Secret and TTL, or the first lease's: BudgetUnderLease;
//     the TTL by one rule, reservationTTL's; its Mode
//     is the budgets' Wait or Fail, whose refusal is a
//     *BudgetBusyError). The reserve rides on the last rate's first try
//     (Backend.RateBudgetReserve: one round trip on Redis), else goes
//     alone.
//
// A resource of Options.Capacity is granted from this process's
// capacity share in its place in the order (no round trip; see
// Governor.Acquire), the others as always: one Ask may mix them.
//
// A call waiting for a slot holds no rate or budget, and one waiting
// for a rate holds no budget. Rates and budgets wait under the leases'
// context: a lease lost ends the wait with its error. Waits end with
// ctx (its error) or at Deadline: the slots' error is then
// context.DeadlineExceeded, a rate's a *RateBusyError and a budget's a
// *BudgetBusyError, each with TimedOut set (a budget is asked once
// more, not waiting, so that it says where the budget stands; when it
// fits then, it is held). On any error nothing is held.
//
// The Held releases and settles together: ReleaseWith frees the leases
// in reverse acquisition order and sends the settle asked for
// (SettleOnRelease) with the first (Backend.ReleaseSettle: no round
// trip of its own on Redis), or alone when no lease is freed.
type Ask struct {
	Wants  []Want
	Rates  []RateRequest
	Spends []BudgetSpend
	Budget BudgetOptions
	// BudgetUnderLease names the reservation after the first lease
	// taken (its id and secret, instead of Budget's Lease, Secret and
	// TTL): it then lives as the lease, renewed with it, and counts at
	// its estimate when the lease expires unrenewed (its holder died);
	// the lease's handle proves it too. With no lease taken (a grant
	// from a capacity share is none: Options.Capacity), Budget names it.
	BudgetUnderLease bool
	// Within is how long the work may run (0: not known): a reservation
	// on no lease whose Budget.TTL is 0 stays open DefaultBudgetTTL, or
	// Within and five minutes when longer.
	Within time.Duration
	// Mode is how the rates wait: Wait (the zero Mode is Fail).
	Mode     Mode
	Deadline time.Time // zero: no bound but ctx
	// Slots, when set, takes Wants, given in the lock order (Options
	// LockOrder, then name), and returns their leases in acquisition
	// order; on an error it holds nothing. OnRelease, when set, is
	// called just before each lease of the Held is released (what Slots
	// held beside it).
	Slots     func(ctx context.Context, wants []Want) ([]*Lease, error)
	OnRelease func(l *Lease) error
}

// RateBusyError is a rate budget that refused an Ask: Key's rate, and
// its decision (when to retry; a cool-off in force), or, TimedOut, the
// Ask's Deadline that ended the wait for it. It is ErrBusy (errors.Is),
// as a busy slot's *BusyError and a budget's *BudgetBusyError are.
type RateBusyError struct {
	Key      Key
	Result   RateResult
	TimedOut bool
}

func (e *RateBusyError) Error() string {
	switch {
	case e.TimedOut:
		return fmt.Sprintf("governor: rate of %s: not available before the wait's deadline", e.Key.Resource)
	case !e.Result.CoolOff.IsZero():
		return fmt.Sprintf("governor: rate of %s: cooling off until %s", e.Key.Resource, e.Result.CoolOff.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("governor: rate of %s: limit reached; retry after %v", e.Key.Resource, e.Result.RetryAfter.Round(time.Millisecond))
}

// Is makes a rate refusal ErrBusy (errors.Is).
func (e *RateBusyError) Is(target error) bool { return target == ErrBusy }

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
			slots = g.acquireAll
		}
		wants := slices.Clone(a.Wants)
		slices.SortStableFunc(wants, func(a, b Want) int { return g.compare(a.Resource, b.Resource) })
		ls, err := slots(wctx, wants)
		if err != nil {
			return nil, err
		}
		h.Leases = ls
	}
	fail := func(err error) (*Held, error) {
		h.ReleaseWith(nil)
		return nil, err
	}
	lctx, cancel := h.context(wctx)
	defer cancel()
	// budget names the reservation and sets its TTL, the one rule
	// (reservationTTL), as it is sent.
	budget := func() BudgetOptions {
		o := a.Budget
		// A grant from a capacity share has no lease to name.
		if i := slices.IndexFunc(h.Leases, func(l *Lease) bool { return l.local == nil }); a.BudgetUnderLease && i >= 0 {
			l := h.Leases[i]
			o.Lease, o.Secret, o.TTL = l.id, l.secret, reservationTTL(l, 0)
		} else if o.TTL == 0 {
			o.TTL = reservationTTL(nil, a.Within)
		}
		return o
	}
	for i, req := range a.Rates {
		withSpend := len(a.Spends) > 0 && i == len(a.Rates)-1
		r, err := g.takeRate(lctx, req, a.Mode, withSpend, a.Spends, budget())
		if timedOut(err) {
			err = &RateBusyError{Key: req.Key, TimedOut: true}
		}
		if err != nil {
			return fail(err)
		}
		h.Spend = r
	}
	if len(a.Spends) > 0 && h.Spend == nil {
		r, err := g.reserveBudgets(lctx, a.Spends, budget())
		if timedOut(err) {
			// The wait's error names no budget: once more, not waiting,
			// it may fit now, else the refusal says where each stands.
			o := budget()
			o.Mode = Fail
			var busy *BudgetBusyError
			if r, err = g.reserveBudgets(ctx, a.Spends, o); errors.As(err, &busy) {
				busy.TimedOut = true
			}
		}
		if err != nil {
			return fail(err)
		}
		h.Spend = r
	}
	return h, nil
}

// takeRate reserves req once (Fail: a denial is a *RateBusyError) or
// waiting (Wait); withSpend, the first try carries the reservation of
// spends under o (tryRateBudgets), returned when they fitted at once.
func (g *Governor) takeRate(ctx context.Context, req RateRequest, mode Mode, withSpend bool, spends []BudgetSpend,
	o BudgetOptions) (*BudgetReservation, error) {
	if err := ValidateResource(req.Key.Resource); err != nil {
		return nil, err
	}
	if req.Key.Project == "" {
		req.Key.Project = g.project
	}
	if rc, ok := g.caps.leasedRate(req); ok {
		// From the process's rate share (caprate.go): spends, if any,
		// are reserved alone after it.
		return nil, g.takeLocalRate(ctx, req, rc, mode)
	}
	var res RateResult
	var r *BudgetReservation
	var err error
	if withSpend {
		res, r, err = g.tryRateBudgets(ctx, req, spends, o)
	} else if mode != Wait {
		res, err = g.tryRate(ctx, req)
	} else {
		return nil, g.waitRate(ctx, req)
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
