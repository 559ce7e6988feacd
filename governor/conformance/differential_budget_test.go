package conformance

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/governor-dev/governor/governor"
)

// diffBudgetT is the middle of the budget window of every differential
// step: every store's clock lies within two days of it for a whole run.
var diffBudgetT = time.Now()

// diffDefs are the definitions a differential reservation states ("":
// none) and an operator's define sets.
var diffDefs = []string{"", "USD per 96h0m0s", "tokens per 96h0m0s"}

// budgetOp draws a spend-budget step one time in seven: a reservation
// of one or two budgets (sometimes in a window not holding now), a
// settle (of a lease reserved, or a ghost), a renewal of a lease named
// after a reservation, or an admin action.
func budgetOp(rng *rand.Rand, i int, sent map[string][]string, clocked bool) (diffOp, bool) {
	if rng.IntN(7) != 0 {
		return diffOp{}, false
	}
	op := diffOp{resource: "r1"}
	names := []string{"b1", "b2", "b3"}
	switch k := rng.IntN(10); {
	case k < 5:
		op.kind, op.id = "breserve", fmt.Sprintf("bl%02d", i)
		sent["~budgets"] = append(sent["~budgets"], op.id)
		op.ids = []string{names[rng.IntN(2)]}
		if rng.IntN(3) == 0 {
			op.ids = []string{"b1", "b2"}
		}
		op.n = int64(rng.IntN(60))
		op.wait = rng.IntN(15) == 0 // a window behind now: a mismatch
		if clocked && rng.IntN(2) == 0 {
			op.ttl = 5 * time.Minute
		}
		if rng.IntN(3) == 0 {
			// With a rate reservation of n tokens (RateRequest.Budget).
			op.kind = "ratebudget"
		}
		op.prio = diffDefs[rng.IntN(len(diffDefs))] // the definition stated (BudgetCharge.Def)
	case k < 8:
		op.kind, op.id = "bsettle", "ghost"
		if ids := sent["~budgets"]; len(ids) > 0 && rng.IntN(8) != 0 {
			op.id = ids[rng.IntN(len(ids))]
		}
		op.n = int64(rng.IntN(80))
		op.ids = names[:rng.IntN(3)]
		if rng.IntN(4) == 0 {
			op.ids = append(op.ids, "") // every budget not named
		}
	case k < 9:
		// A lease named after a reservation (or a ghost), taken on a
		// resource of its own the first time, renewed with the
		// reservation's secret: the reservation lives as the lease.
		op.kind, op.id, op.ttl = "brenew", "ghost", 10*time.Minute
		if ids := sent["~budgets"]; len(ids) > 0 && rng.IntN(8) != 0 {
			op.id = ids[rng.IntN(len(ids))]
		}
		op.wait = !slices.Contains(sent["~brenew"], op.id)
		sent["~brenew"] = append(sent["~brenew"], op.id)
		if clocked && rng.IntN(2) == 0 {
			op.ttl = 2 * time.Minute
		}
	default:
		op.kind, op.prio = "badmin", []string{"limit", "reset", "pause", "resume", "confirm", "define"}[rng.IntN(6)]
		op.ids, op.limit = []string{names[rng.IntN(3)]}, rng.IntN(3)*40
		if op.prio == "define" {
			op.prio = string(governor.BudgetDefine(diffDefs[1+rng.IntN(len(diffDefs)-1)]))
		}
	}
	return op, true
}

// budgetStep runs a spend-budget step and says what the store answered,
// with its budgets and budget events after it.
func (r *diffRun) budgetStep(ctx context.Context, o diffOp) string {
	start, end := diffBudgetT.Add(-48*time.Hour), diffBudgetT.Add(48*time.Hour)
	if o.wait {
		start, end = diffBudgetT.Add(-96*time.Hour), start
	}
	var out string
	switch o.kind {
	case "breserve", "ratebudget":
		req := governor.BudgetRequest{Project: r.project, Lease: o.id, Secret: "s-" + o.id, TTL: o.ttl, By: "diff"}
		for _, n := range o.ids {
			req.Charges = append(req.Charges, governor.BudgetCharge{Name: n, Limit: 100, Soft: 70, Start: start, End: end, Amount: o.n, Def: o.prio})
		}
		var res governor.BudgetResult
		var err error
		if o.kind == "ratebudget" {
			key := r.key(o.resource)
			rr := governor.RateRequest{Key: key, Requests: diffRequests, Tokens: diffTokens, NRequests: 1, NTokens: o.n, Budget: &req}
			rres, rerr := r.b.RateReserve(ctx, rr)
			res, err = rres.Budget, rres.BudgetErr
			rs, serr := r.b.RateStatus(ctx, key)
			out = fmt.Sprintf("rate %s allowed %v retry %v remaining %d %d | status %s %d %d remaining %d %d | ", errClass(rerr), rres.Allowed,
				rres.RetryAfter > 0, rres.RemainingRequests, rres.RemainingTokens, errClass(serr), rs.Allowed, rs.Limited, rs.RemainingRequests,
				rs.RemainingTokens)
		} else {
			res, err = r.b.BudgetReserve(ctx, req)
		}
		out += fmt.Sprintf("%s allowed %v mismatch %v reason %q refused %s", errClass(err), res.Allowed, res.Mismatch, res.Reason, res.Refused.Name)
	case "bsettle":
		var actual []governor.BudgetAmount
		for _, n := range o.ids {
			actual = append(actual, governor.BudgetAmount{Name: n, Amount: o.n})
		}
		s, err := r.b.BudgetSettle(ctx, governor.SettleRequest{Project: r.project, Lease: o.id, Secret: "s-" + o.id, Actual: actual, By: "diff"})
		out = fmt.Sprintf("%s settled %v overruns %v", errClass(err), s.Settled, s.Overruns)
	case "brenew":
		key := r.key("rb-" + o.id)
		if o.wait {
			res, err := r.b.Acquire(ctx, governor.Request{Key: key, ID: o.id, Secret: "s-" + o.id, Limit: 1, Weight: 1, TTL: o.ttl,
				Mode: governor.Fail, Declaration: governor.Declaration{Session: "diff", Host: "diff"}})
			out = fmt.Sprintf("acquire %s %v | ", errClass(err), res.Outcome)
		}
		_, err := r.b.Renew(ctx, governor.Renewal{Key: key, ID: o.id, Secret: "s-" + o.id, TTL: o.ttl})
		out += "renew " + errClass(err)
	case "badmin":
		out = errClass(r.b.BudgetAdmin(ctx, r.project, o.ids[0], governor.BudgetOp(o.prio), int64(o.limit), "diff"))
	}
	sts, _, err := r.b.Budgets(ctx, r.project, nil)
	out += " | budgets " + errClass(err)
	for _, s := range sts {
		out += fmt.Sprintf(" %s:%d/%d/%d open %d overruns %d paused %q held %v by %q window %v def %q", s.Name, s.Spent, s.Reserved, s.Limit, s.Open,
			s.Overruns, s.Paused, s.Held != "", s.LimitBy, s.End.Sub(s.Start), s.Def)
	}
	evs, err := r.b.BudgetEvents(ctx, r.project)
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Kind+":"+e.Budget+":"+e.Lease+":"+e.By+":"+e.Detail)
	}
	return out + " | budget events " + errClass(err) + " " + strings.Join(kinds, " ")
}
