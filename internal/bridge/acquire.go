package bridge

import (
	"context"
	"errors"
	"os"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/acquire"
	"github.com/governor-dev/governor/internal/words"
)

// AcquirePipeline is the CLI's acquire pipeline (internal/acquire) for
// the resources of cat: heartbeating leases (not Detached), mkdir slots
// held by the bridge itself (a live process), nesting by a.Env.
func AcquirePipeline(cat *config.Catalog) Pipeline {
	return func(ctx context.Context, g *governor.Governor, a AcquireArgs, ev Events) (Held, error) {
		var budgets []governor.SpendBudget
		var cost int64
		if a.spend != nil && len(a.spend.Budgets) > 0 {
			budgets, cost = a.spend.Budgets, a.spend.Estimate
		}
		p, err := acquire.NewPlan(cat, acquire.Request{
			Resources: a.Resources, Providers: a.Providers, Weight: a.Weight, Limit: a.Limit, Exclusive: a.Exclusive,
			Shareable: a.Shareable, Join: a.Join, ExecRun: a.ExecRun, IfBusy: a.IfBusy, WaitTimeout: a.WaitTimeout.D(),
			TTL: a.TTL.D(), ProgressTimeout: a.ProgressTimeout.D(), Priority: a.Priority, FairKey: a.FairKey,
			Supersede: a.Supersede, CancelInProgress: a.CancelInProgress, Tokens: int64(a.Tokens), Budgets: budgets, Cost: cost,
			Env: a.EnvList(), HolderPID: os.Getpid(), Command: "governor bridge",
		})
		if err != nil {
			// NewPlan touches nothing: its every error is bad input
			// (a weight, a limit, a policy), never the backend's.
			return nil, badRequest("%s", words.Message(err))
		}
		h, err := p.Acquire(ctx, g, acquire.Events{OnQueued: ev.OnQueued, OnNote: ev.OnNote})
		var order *acquire.OrderError
		if errors.As(err, &order) {
			// Out of the lock order: bad input, as NewPlan's.
			return nil, badRequest("%s", words.Message(err))
		}
		if err != nil {
			return nil, err
		}
		return h, nil
	}
}
