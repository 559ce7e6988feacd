package governor

import (
	"context"
	"fmt"
	"strings"

	"github.com/governor-dev/governor/governor/internal/policyrule"
)

// whyRefused returns the busy error of a refusal: with Paused set when
// the resource had room but is paused, else the Rule that refused it
// (refusalRule) — a refusal's status says neither, so a refusal despite
// room reads the resource again; one that lacked room, or in a cool-off
// (the status says it: Status.CoolingOff), does not.
func (g *Governor) whyRefused(ctx context.Context, req Request, st Status) *BusyError {
	e := &BusyError{Resource: req.Key.Resource, Status: st}
	if st.Used+req.Weight > st.Limit {
		return e
	}
	if e.Status.CoolingOff() != "" {
		return e // Error says it
	}
	if full, err := g.b.Status(ctx, req.Key); err == nil {
		e.Status.Paused = full.Paused
		if full.Paused == nil && full.CoolingOff() == "" {
			e.Rule = refusalRule(req, full)
		}
	}
	return e
}

// refusalRule names the rule that refused req although st had room for
// it: the one place that tells, by the rules of Policy (policy.go), in
// the order a backend applies them: the class's cap, the fair key's
// fair_cap, the reserves of the classes above, waiters queued ahead.
// "" when none applies (the state changed since).
func refusalRule(req Request, st Status) string {
	p, r, u := st.Policy, st.Policy.Rules(), st.policyUse()
	c := r.ClassOf(req.Priority)
	switch r.Admit(u, c, req.FairKey, req.Weight) {
	case policyrule.Capped:
		cl := p.Classes[c]
		return fmt.Sprintf("the cap of class %s: it holds %d of its cap %d", cl.Name, u.Classes[c], cl.Cap)
	case policyrule.FairCapped:
		return fmt.Sprintf("fair_cap: fair key %s holds %d of its fair_cap %d", req.FairKey, u.Keys[req.FairKey], p.FairCap)
	case policyrule.Reserved:
		var above []string
		unused := r.UnusedReserves(u, c)
		for j, r := range unused {
			if r > 0 {
				above = append(above, fmt.Sprintf("%s %d", p.Classes[j].Name, r))
			}
		}
		return fmt.Sprintf("the reserve of the classes above %s: %d free, %d of them reserved (%s)",
			p.Classes[c].Name, u.Limit-u.Used, policyrule.Sum(unused), strings.Join(above, ", "))
	case policyrule.Full:
		return "" // the state changed since: no room now
	}
	if n := st.QueueLen(); n > 0 {
		return fmt.Sprintf("the queue: %d waiting ahead", n)
	}
	return ""
}
