package acquire

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/words"
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

// spendAsk is one reservation of spend budgets and how a refusal is
// handled: IfBusy fail and skip refuse at once, wait waits until
// Deadline (zero: no bound; WaitTimeout is the --wait-timeout that set
// it, for the message).
type spendAsk struct {
	Spends      []governor.BudgetSpend
	Options     governor.BudgetOptions
	IfBusy      string
	WaitTimeout time.Duration
	Deadline    time.Time
}

// reserve is the one reservation of spend budgets of 'governor run
// --cost' (Spend.Reserve) and of the pipeline (Plan.Acquire: the bridge,
// the clients): all or none, refused as a busy slot is. Fail (73) and
// skip (75) are a *NotAcquiredError whose message is the
// *governor.BudgetBusyError's (the budget, its spent, reserved, limit,
// this call and the reset time, in the budget's unit); wait waits until
// the budgets fit (others settle below their estimates, or the window
// resets) or the deadline, then tries once more without waiting, so that
// a refusal names the budget. ctx is the caller's own context: once it
// has ended, its error is returned. Nothing is reserved on any error.
func reserve(ctx context.Context, g *governor.Governor, a spendAsk) (*governor.BudgetReservation, error) {
	o := a.Options
	wctx := ctx
	if a.IfBusy == IfBusyWait {
		o.Mode = governor.Wait
		if !a.Deadline.IsZero() {
			var cancel context.CancelFunc
			wctx, cancel = context.WithDeadline(ctx, a.Deadline)
			defer cancel()
		}
	}
	r, err := g.ReserveBudgets(wctx, a.Spends, o)
	timedOut := o.Mode == governor.Wait && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded)
	if timedOut {
		// The wait's error names no budget: once more, not waiting, it
		// may fit now, else the refusal says where each budget stands.
		o.Mode = governor.Fail
		r, err = g.ReserveBudgets(ctx, a.Spends, o)
	}
	var busy *governor.BudgetBusyError
	if !errors.As(err, &busy) {
		return r, err
	}
	na := &NotAcquiredError{Msg: words.Message(busy), Budget: busy}
	switch busy.Reason {
	case "paused":
		na.Msg += fmt.Sprintf(" ('governor budget %s --resume' ends it)", busy.Budget.Name)
	case "held":
		na.Msg += fmt.Sprintf(" ('governor budget %s --confirm' lifts it)", busy.Budget.Name)
	}
	switch {
	case timedOut:
		na.Msg += fmt.Sprintf("; not reserved within --wait-timeout %v", a.WaitTimeout)
	case a.IfBusy == IfBusySkip:
		na.Msg += "; skipped (--if-busy skip)"
		na.Skipped = true
	}
	return nil, na
}

// reserveSpend reserves the plan's cost estimate on every spend budget
// (reserve), once the slots and rate budgets are held (a call waiting
// for a slot holds no budget), under the first lease h took
// (underLease), waiting at most until deadline. It returns nil when the
// plan has no budgets.
func (p *Plan) reserveSpend(ctx context.Context, g *governor.Governor, h *Held, deadline time.Time) (*governor.BudgetReservation, error) {
	ask := h.underLease(p.spendAsk(deadline))
	if ask == nil {
		return nil, nil
	}
	return reserve(ctx, g, *ask)
}

// spendAsk is the reservation of the plan's cost estimate on every
// spend budget (Request.Budgets), waiting at most until deadline; nil
// when the plan has no budgets.
func (p *Plan) spendAsk(deadline time.Time) *spendAsk {
	if len(p.req.Budgets) == 0 {
		return nil
	}
	spends := make([]governor.BudgetSpend, 0, len(p.req.Budgets))
	for _, b := range p.req.Budgets {
		spends = append(spends, governor.BudgetSpend{Budget: b, Amount: p.req.Cost})
	}
	return &spendAsk{Spends: spends, IfBusy: p.ifBusy, WaitTimeout: p.req.WaitTimeout, Deadline: deadline}
}

// underLease is ask with its reservation named after the first lease h
// took (SpendOptions): renewed with the lease, counted
// at its estimate when the lease expires unrenewed (its holder died).
// A call that took no lease (rate limits only, or every lease held by
// an ancestor) keeps ask's own name and TTL.
func (h *Held) underLease(ask *spendAsk) *spendAsk {
	if ask == nil || len(h.leases) == 0 {
		return ask
	}
	a := *ask
	lo := SpendOptions(h.leases[0], "", 0)
	a.Options.Lease, a.Options.Secret, a.Options.TTL = lo.Lease, lo.Secret, lo.TTL
	return &a
}

// SpendOptions is the one rule naming a reservation and setting its
// TTL. One made under lease l (nil: none) is named after it (its id
// the lease's id, its secret the lease's secret) and lives as the
// lease: open for what is left of its TTL, and each renewal of the
// lease (a heartbeat, a batch renewal, 'governor renew' of its handle)
// moves the reservation's expiry to the lease's (the backends'
// renewal), so that a dead holder's estimate counts when its lease
// expires. One under no lease is named id (the secret left to
// governor) and stays open for work that may last runFor (0: not
// known): governor.DefaultBudgetTTL, or runFor and five minutes when
// longer, at most 168h.
func SpendOptions(l *governor.Lease, id string, runFor time.Duration) governor.BudgetOptions {
	if l != nil {
		h := l.Handle()
		return governor.BudgetOptions{Lease: h.ID, Secret: h.Secret, TTL: min(max(time.Until(l.Deadline()), time.Second), 7*24*time.Hour)}
	}
	return governor.BudgetOptions{Lease: id, TTL: min(max(governor.DefaultBudgetTTL, runFor+5*time.Minute), 7*24*time.Hour)}
}

// SpendWithRate has Acquire try to reserve s's estimate on its budgets
// under lease, open for ttl (unless a lease is taken: underLease), together with the plan's last rate
// reservation (governor.Governor.TryRateBudgets: one round trip on
// Redis), so that they cost no round trip of their own. Held.Spend is
// then the reservation; nil when it did not go (the plan reserves no
// rate budget, the rate made it wait, or the budgets did not fit at
// once): reserve them then as ever (Spend.Reserve).
func (p *Plan) SpendWithRate(s *Spend, lease string, ttl time.Duration) {
	p.withRate = nil
	if s == nil || len(s.Budgets) == 0 {
		return
	}
	p.withRate = &spendAsk{Spends: s.spends(), Options: governor.BudgetOptions{Lease: lease, TTL: ttl}}
}

// Spend is the open spend reservation this call made (nil: it asked
// for no budget): settle it after the work (Settle, SettleEach); one
// never settled counts at its estimate once its TTL passes.
func (h *Held) Spend() *governor.BudgetReservation { return h.spend }

// settleOnRelease is a settle to send with a release (SettleOnRelease).
type settleOnRelease struct {
	r      *governor.BudgetReservation
	actual []governor.BudgetAmount
	done   func(governor.BudgetSettlement, error)
}

// with releases l with the settle (governor.Lease.ReleaseSettle).
func (ps *settleOnRelease) with(l *governor.Lease) error {
	st, serr := l.ReleaseSettle(ps.r, ps.actual)
	ps.done(st, serr)
	return st.ReleaseErr
}

// alone sends the settle by itself: no lease went with it.
func (ps *settleOnRelease) alone(ctx context.Context) {
	ps.done(ps.r.SettleEach(ctx, ps.actual))
}

// SettleOnRelease settles r with actual (r.SettleEach) with the next
// ReleaseWith: sent with the release of its first lease
// (governor.Lease.ReleaseSettle: on Redis no round trip of its own), or
// alone when it releases no lease. done is told the outcome; a settle
// that fails leaves the estimate counted.
func (h *Held) SettleOnRelease(r *governor.BudgetReservation, actual []governor.BudgetAmount, done func(governor.BudgetSettlement, error)) {
	h.mu.Lock()
	h.settle = &settleOnRelease{r: r, actual: actual, done: done}
	h.mu.Unlock()
}
