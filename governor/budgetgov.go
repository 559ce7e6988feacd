package governor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/governor-dev/governor/governor/safetext"
)

// SpendBudget is a spend budget as configured (see docs/budgets.md).
type SpendBudget struct {
	Name  string
	Limit int64 // micro-units
	Soft  int64 // 0: none
	// Unit names what is counted ("USD", "tokens"); for display.
	Unit   string
	Window BudgetWindow
}

// Validate says what is wrong with b, naming the bad value.
func (b SpendBudget) Validate() error {
	if err := ValidateBudgetName(b.Name); err != nil {
		return err
	}
	if err := validAmount("budget "+b.Name+" limit", b.Limit); err != nil {
		return err
	}
	if b.Soft < 0 || b.Soft > b.Limit {
		return invalid("budget %s soft threshold %d; allowed: 0 (none) to the limit %d", b.Name, b.Soft, b.Limit)
	}
	if err := b.Window.Validate(); err != nil {
		return fmt.Errorf("budget %s: %w", b.Name, err)
	}
	return nil
}

// Definition is what a budget's state keeps of b besides its limit: its
// unit and window ("USD calendar day in Europe/Paris", "tokens per
// 1h0m0s"). See BudgetCharge.Def.
func (b SpendBudget) Definition() string {
	return strings.TrimSpace(b.Unit + " " + b.Window.String())
}

// driftError is the refusal of a reservation whose budget's definition
// differs from the one its state keeps: it names both.
func driftError(st BudgetState, def string) error {
	return invalid("budget %s is defined in its state as %q; this call's definition is %q: refused, nothing reserved "+
		"(an operator applies a change with 'governor budget %s --apply', recorded as an event; docs/budgets.md)",
		st.Name, st.Def, def, st.Name)
}

// BudgetSpend is an amount charged to a budget.
type BudgetSpend struct {
	Budget SpendBudget
	Amount int64
}

// BudgetOptions configure a reservation. The zero value reserves once,
// failing when it does not fit, under a fresh lease, open for
// DefaultBudgetTTL.
type BudgetOptions struct {
	// Lease names the reservation (empty: a fresh random one).
	Lease string
	// Secret proves the reservation to its settle (empty: a fresh
	// random one; see BudgetRequest.Secret).
	Secret string
	// TTL: see BudgetRequest.TTL.
	TTL time.Duration
	// Mode Wait waits while a budget refuses (until others settle below
	// their estimates or the window resets), until ctx ends; Fail
	// (default) returns the *BudgetBusyError at once.
	Mode Mode
}

// reservationTTL is the one rule for how long a spend reservation
// stays open unsettled (Governor.Hold). One named after lease l (its
// id and secret the lease's: Ask.BudgetUnderLease) lives as the lease:
// open for what is left of its TTL, and each renewal of the lease (a
// heartbeat, a batch renewal, a handle's renewal) moves its expiry to
// the lease's (the backends' renewal), so that a dead holder's
// estimate counts when its lease expires. One under no lease (l nil)
// stays open for work that may last within (0: not known):
// DefaultBudgetTTL, or within and five minutes when longer, at most
// 168h. A reservation that outlives its TTL unsettled counts at its
// estimate (never less).
func reservationTTL(l *Lease, within time.Duration) time.Duration {
	if l != nil {
		return min(max(time.Until(l.Deadline()), time.Second), maxBudgetTTL)
	}
	return min(max(DefaultBudgetTTL, within+reservationMargin), maxBudgetTTL)
}

// reservationMargin is how long a reservation on no lease outlives the
// work it covers (reservationTTL).
const reservationMargin = 5 * time.Minute

// BudgetBusyError is a reservation refused: Budget is the budget that
// refused, Reason why ("exhausted", "paused", "held"), Unit the budget's
// unit and Estimate what this call asked of it (micro-units). It is
// ErrBusy. Its message tells the amounts in the unit: the one message
// the CLI, the bridge and the library print.
type BudgetBusyError struct {
	Budget   BudgetState
	Reason   string
	Unit     string
	Estimate int64
	Now      time.Time
	// TimedOut: the refusal of the last try of a wait that an Ask's
	// Deadline ended (Governor.Hold).
	TimedOut bool
}

func (e *BudgetBusyError) Error() string {
	b := e.Budget
	u := func(v int64) string {
		if e.Unit == "" {
			return FormatBudgetAmount(v)
		}
		return FormatBudgetAmount(v) + " " + e.Unit
	}
	s := fmt.Sprintf("governor: budget %s %s: spent %s, reserved %s, limit %s, this call %s; resets at %s (in %v)",
		b.Name, e.Reason, u(b.Spent), u(b.Reserved), u(b.Limit), u(e.Estimate),
		b.End.UTC().Format(time.RFC3339), max(b.End.Sub(e.Now), 0).Round(time.Second))
	switch e.Reason {
	case "paused":
		s += "; paused by " + safetext.Escape(b.Paused)
	case "held":
		s += "; " + safetext.Escape(b.Held)
	}
	return s
}

// Is makes a BudgetBusyError match ErrBusy.
func (e *BudgetBusyError) Is(target error) bool { return target == ErrBusy }

// BudgetReservation is an open reservation; Settle closes it.
type BudgetReservation struct {
	g     *Governor
	Lease string
	// Secret proves the reservation: a settle in another process needs
	// it with Lease (SpendKey). Never show it to other users.
	Secret string
	spends []BudgetSpend
	// States are the budgets as the reservation left them.
	States []BudgetState
}

// born is when this Governor last saw budget name's state born: the
// evidence of lost data (BudgetCharge.Born); zero when never.
func (g *Governor) born(name string) time.Time {
	if v, ok := g.budgetBorn.Load(name); ok {
		return v.(time.Time)
	}
	return time.Time{}
}

func (g *Governor) sawBudgets(states []BudgetState) {
	for _, s := range states {
		g.budgetBorn.Store(s.Name, s.Born)
	}
}

// budgetLease is o's lease, else a fresh random one, and o's secret,
// else a fresh random one.
func budgetLease(o BudgetOptions) (lease, secret string) {
	lease, secret = o.Lease, o.Secret
	if lease == "" {
		var b [12]byte
		_, _ = rand.Read(b[:])
		lease = "b-" + hex.EncodeToString(b[:])
	}
	if secret == "" {
		secret, _ = newSecret()
	}
	return lease, secret
}

// budgetPoll is how often a waiting reservation asks again while others
// may settle below their estimates.
const budgetPoll = 500 * time.Millisecond

// reserveBudgets reserves every spend's amount on its budget, all or
// none. It returns the open reservation; a refusal is a *BudgetBusyError
// (Mode Fail), or is waited out (Mode Wait) until ctx ends, which
// returns ctx's error. Nothing is reserved on any error.
func (g *Governor) reserveBudgets(ctx context.Context, spends []BudgetSpend, o BudgetOptions) (*BudgetReservation, error) {
	for _, s := range spends {
		if err := s.Budget.Validate(); err != nil {
			return nil, err
		}
	}
	lease, secret := budgetLease(o)
	now := time.Now()
	for {
		res, err := g.tryBudgets(ctx, spends, lease, secret, o.TTL, now)
		if err != nil {
			return nil, err
		}
		g.sawBudgets(res.States)
		if res.Allowed {
			return &BudgetReservation{g: g, Lease: lease, Secret: secret, spends: spends, States: res.States}, nil
		}
		if res.Reason == "drift" {
			for _, s := range spends {
				if s.Budget.Name == res.Refused.Name {
					return nil, driftError(res.Refused, s.Budget.Definition())
				}
			}
		}
		busy := &BudgetBusyError{Budget: res.Refused, Reason: res.Reason, Now: res.Now}
		for _, s := range spends {
			if s.Budget.Name == res.Refused.Name {
				busy.Unit, busy.Estimate = s.Budget.Unit, s.Amount
			}
		}
		if o.Mode != Wait {
			return nil, busy
		}
		wait := budgetPoll
		if d := res.Refused.End.Sub(res.Now); res.Reason != "paused" && d < wait {
			wait = max(d, time.Millisecond)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w (waiting for %v)", ctx.Err(), busy)
		case <-t.C:
		}
		now = res.Now.Add(wait)
	}
}

// tryBudgets asks once, computing the windows at now and again at the
// backend's now when it finds them not current.
func (g *Governor) tryBudgets(ctx context.Context, spends []BudgetSpend, lease, secret string, ttl time.Duration, now time.Time) (BudgetResult, error) {
	for range 3 {
		res, err := g.budgets.BudgetReserve(ctx, g.budgetRequest(spends, lease, secret, ttl, now))
		if err != nil || !res.Mismatch {
			return res, err
		}
		now = res.Now
	}
	return BudgetResult{}, fmt.Errorf("%w: the backend's clock left each budget window computed for it", ErrBackend)
}

// budgetRequest reserves spends under lease, proven by secret, in their
// windows at now.
func (g *Governor) budgetRequest(spends []BudgetSpend, lease, secret string, ttl time.Duration, now time.Time) BudgetRequest {
	req := BudgetRequest{Project: g.project, Lease: lease, Secret: secret, TTL: ttl, By: g.Identity()}
	for _, s := range spends {
		start, end := s.Budget.Window.Bounds(now)
		req.Charges = append(req.Charges, BudgetCharge{Name: s.Budget.Name, Limit: s.Budget.Limit, Soft: s.Budget.Soft,
			Start: start, End: end, Amount: s.Amount, Born: g.born(s.Budget.Name), Def: s.Budget.Definition()})
	}
	return req
}

// Settle closes the reservation with actual charged to every budget
// (all in one unit; see SettleEach otherwise). A second Settle changes
// nothing and returns Settled false.
func (r *BudgetReservation) Settle(ctx context.Context, actual int64) (BudgetSettlement, error) {
	return r.SettleEach(ctx, r.eachAt(actual))
}

// SettleEach closes the reservation with an actual per budget; a budget
// not named is settled at its estimate.
func (r *BudgetReservation) SettleEach(ctx context.Context, actual []BudgetAmount) (BudgetSettlement, error) {
	return r.g.SettleBudgets(ctx, r.Lease, r.Secret, r.evidence(actual))
}

// evidence is a copy of actual with the births seen at reserve, the
// evidence that a state born since lost this reservation, else those
// this process saw last. Each budget of r that actual does not name
// (and no ” amount covers) is named at its estimate, which is what a
// budget not named is settled at: so that its birth goes too, and a
// settle that finds the reservation lost counts the estimate.
func (r *BudgetReservation) evidence(actual []BudgetAmount) []BudgetAmount {
	actual = append([]BudgetAmount(nil), actual...)
	named := func(name string) bool {
		return slices.ContainsFunc(actual, func(a BudgetAmount) bool { return a.Name == name || a.Name == "" })
	}
	for _, s := range r.spends {
		if !named(s.Budget.Name) {
			actual = append(actual, BudgetAmount{Name: s.Budget.Name, Amount: s.Amount})
		}
	}
	for i := range actual {
		for _, st := range r.States {
			if st.Name == actual[i].Name && actual[i].Born.IsZero() {
				actual[i].Born = st.Born
			}
		}
	}
	return r.g.evidence(actual)
}

// evidence fills in the births this process saw where actual has none.
func (g *Governor) evidence(actual []BudgetAmount) []BudgetAmount {
	for i := range actual {
		if actual[i].Born.IsZero() {
			actual[i].Born = g.born(actual[i].Name)
		}
	}
	return actual
}

// eachAt is actual charged to every budget of r.
func (r *BudgetReservation) eachAt(actual int64) []BudgetAmount {
	amounts := make([]BudgetAmount, 0, len(r.spends))
	for _, s := range r.spends {
		amounts = append(amounts, BudgetAmount{Name: s.Budget.Name, Amount: actual})
	}
	return amounts
}

// SettleBudgets closes reservation lease, proven by secret (see
// BudgetBackend.BudgetSettle: ErrNotOwner when secret does not prove
// it), giving as loss evidence the births this process saw.
func (g *Governor) SettleBudgets(ctx context.Context, lease, secret string, actual []BudgetAmount) (BudgetSettlement, error) {
	actual = g.evidence(actual)
	// A settle runs even when the caller's context has ended: the spend
	// happened, and an unsettled estimate would only count in full later.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultReleaseTimeout)
	defer cancel()
	return g.budgets.BudgetSettle(sctx, SettleRequest{Project: g.project, Lease: lease, Secret: secret, Actual: actual, By: g.Identity()})
}

// Budgets reads the project's budgets (names nil: all) and the
// backend's now.
func (g *Governor) Budgets(ctx context.Context, names []string) ([]BudgetState, time.Time, error) {
	for _, n := range names {
		if err := ValidateBudgetName(n); err != nil {
			return nil, time.Time{}, err
		}
	}
	return g.budgets.Budgets(ctx, g.project, names)
}

// BudgetEvents lists the project's budget events, oldest first.
func (g *Governor) BudgetEvents(ctx context.Context) ([]BudgetEvent, error) {
	return g.budgets.BudgetEvents(ctx, g.project)
}

// BudgetAdmin applies op to budget name, recorded with this Governor's
// Identity and by (a label, "" for none) as the actor.
func (g *Governor) BudgetAdmin(ctx context.Context, name string, op BudgetOp, value int64, by string) error {
	actor, err := g.actor(by)
	if err != nil {
		return err
	}
	return g.budgets.BudgetAdmin(ctx, g.project, name, op, value, actor)
}
