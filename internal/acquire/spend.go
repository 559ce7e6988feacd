package acquire

import (
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

// budgetRefused is the NotAcquiredError of a spend budget that refused,
// as a busy slot is: fail (73) and skip (75) say the
// *governor.BudgetBusyError's message (the budget, its spent, reserved,
// limit, this call and the reset time, in the budget's unit), and so
// does a wait that --wait-timeout ended (governor.Ask: its last try).
func (p *Plan) budgetRefused(busy *governor.BudgetBusyError) error {
	na := &NotAcquiredError{Msg: words.Message(busy), Budget: busy}
	switch busy.Reason {
	case "paused":
		na.Msg += fmt.Sprintf(" ('governor budget %s --resume' ends it)", busy.Budget.Name)
	case "held":
		na.Msg += fmt.Sprintf(" ('governor budget %s --confirm' lifts it)", busy.Budget.Name)
	}
	switch {
	case busy.TimedOut:
		na.Msg += fmt.Sprintf("; not reserved within --wait-timeout %v", p.req.WaitTimeout)
	case p.ifBusy == IfBusySkip:
		na.Msg += "; skipped (--if-busy skip)"
		na.Skipped = true
	}
	return na
}

// spends are the plan's cost estimate on every spend budget
// (Request.Budgets), reserved once the slots and rate budgets are held
// (a call waiting for a slot holds no budget).
func (p *Plan) spends() []governor.BudgetSpend {
	spends := make([]governor.BudgetSpend, 0, len(p.req.Budgets))
	for _, b := range p.req.Budgets {
		spends = append(spends, governor.BudgetSpend{Budget: b, Amount: p.req.Cost})
	}
	return spends
}

// SetSpend has Acquire reserve s's estimate on its budgets (nil, or no
// budget: none), as Request.Budgets and Cost would. The reservation is
// named after the first lease taken (governor.Ask.BudgetUnderLease):
// it lives as the lease, renewed with it ('governor renew' of its
// handle too; 'governor settle' proves it by the handle), and counts
// at its estimate when the lease expires unrenewed. A call that takes
// no lease (rate limits only, or every lease held by an ancestor)
// names it lease (empty: a fresh random one), open for work that runs
// within that long (0: not known; governor.Ask.Within). Held.Spend is
// then the reservation.
func (p *Plan) SetSpend(s *Spend, lease string, within time.Duration) error {
	req := p.req
	req.Budgets, req.Cost = nil, 0
	if s != nil && len(s.Budgets) > 0 {
		req.Budgets, req.Cost = s.Budgets, s.Estimate
	}
	if err := validSpend(req); err != nil {
		return err
	}
	p.req, p.budget, p.within = req, governor.BudgetOptions{Lease: lease}, within
	return nil
}
