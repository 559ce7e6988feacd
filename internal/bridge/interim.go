package bridge

// Until internal/acquire (the one acquire pipeline) is on main, the
// bridge takes plain resources with Governor.AcquireAll: no mkdir slots,
// no provider budgets. This file goes when it lands.

import (
	"context"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/runner"
)

// InterimPipeline takes a's resources with g.AcquireAll, nesting those
// GOVERNOR_HELD in a.Env names.
// A resource bound to a mkdir slot (resources.NAME.mkdir_lock) nests
// under HEAVY_LOCK_HELD and is refused otherwise: taking the lease
// without the slot would let the with-heavy-lock wrapper run beside it.
func InterimPipeline(cat *config.Catalog, limitFor func(resource string, flag int) (int, string, error)) Pipeline {
	return func(ctx context.Context, g *governor.Governor, a AcquireArgs, ev Events) (Held, error) {
		ifBusy, err := runner.ResolveIfBusy(a.IfBusy, a.WaitTimeout.D())
		if err != nil {
			return nil, badRequest("if_busy: %v", err)
		}
		if len(a.Providers) > 0 {
			return nil, badRequest("providers need internal/acquire (not on this build)")
		}
		anc, _ := runner.HeldFromEnv(a.EnvList())
		held := &leaseSet{lost: make(chan struct{}), anc: anc}
		var wants []governor.Want
		for _, spec := range a.Resources {
			r, err := runner.ParseResource(spec, nil)
			if err != nil {
				return nil, badRequest("%v", err)
			}
			if def, ok := cat.Resource(r.Name); ok && def.MkdirLock != "" {
				if !runner.HeavyLockHeld(a.EnvList()) {
					return nil, badRequest("resource %s is bound to the mkdir slot in %s (resources.%s.mkdir_lock): this bridge cannot take it yet (internal/acquire); run inside with-heavy-lock or 'governor run --resource %s'", r.Name, def.MkdirLock, r.Name, r.Name)
				}
				held.nested = append(held.nested, r.Name)
				continue
			}
			if nestedIn(anc, g.Project(), r.Name) {
				held.nested = append(held.nested, r.Name)
				continue
			}
			limit, _, err := limitFor(r.Name, a.Limit)
			if err != nil {
				return nil, err
			}
			w := r.Weight
			if w == 0 {
				w = a.Weight
			}
			o := governor.AcquireOptions{Limit: limit, Weight: w, Exclusive: a.Exclusive, TTL: a.TTL.D(), ProgressTimeout: a.ProgressTimeout.D(),
				Priority: a.Priority, FairKey: a.FairKey, Supersede: a.Supersede, CancelInProgress: a.CancelInProgress}
			if ifBusy == "wait" {
				o.Mode = governor.Wait
				name := r.Name
				o.OnQueued = func(res governor.Result) { ev.OnQueued(name, res) }
			}
			wants = append(wants, governor.Want{Resource: r.Name, AcquireOptions: o})
		}
		wctx, cancel := ctx, context.CancelFunc(func() {})
		if a.WaitTimeout > 0 {
			wctx, cancel = context.WithTimeout(ctx, a.WaitTimeout.D())
		}
		defer cancel()
		ls, err := g.AcquireAll(wctx, wants)
		if err != nil {
			waiting := ""
			if len(wants) > 0 {
				waiting = wants[len(wants)-1].Resource
			}
			return nil, runner.AcquireFailed(ctx, g, err, ifBusy == "skip", a.WaitTimeout.D(), waiting)
		}
		held.leases = ls
		held.watch()
		return held, nil
	}
}

func nestedIn(anc []runner.HeldLease, project, resource string) bool {
	for _, h := range anc {
		if h.Key.Project == project && h.Key.Resource == resource {
			return true
		}
	}
	return false
}
