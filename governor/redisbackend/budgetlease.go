// Spend reservations renewed with their lease (governor.Ask.BudgetUnderLease).

package redisbackend

import (
	"context"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/internal/backendkit"
)

// spendRef names a reservation this backend made: by its project and id.
type spendRef struct{ project, lease string }

// reserved notes that req's reservation is open, so that the renewals
// of a lease of the same id renew it too (extendSpends).
func (b *Backend) reserved(req governor.BudgetRequest) {
	b.spends.Store(spendRef{req.Project, req.Lease}, struct{}{})
}

// spendRenewal is a renewed lease whose reservation of the same id, if
// its secret proves it, is renewed to the lease's expiry.
type spendRenewal struct {
	project, lease, secret string
	expires                time.Time
}

// rides says whether the renewal of lease id of key may carry a
// reservation: one this backend made under that id, or any when the
// lease was not granted here (a handle renewed by another process,
// `governor renew`), as this backend cannot know.
func (b *Backend) rides(key governor.Key, id string) bool {
	if _, ok := b.spends.Load(spendRef{key.Project, id}); ok {
		return true
	}
	_, granted := b.resource(key).held.Load(id)
	return !granted
}

// extendSpends renews each reservation of rs to its lease's expiry
// (budget.lua extend): one call per project (a process renews the
// leases of one project, as a rule). A
// reservation not open (settled, counted, made under another secret) is
// forgotten. Errors are dropped: a reservation not renewed counts at
// its estimate once its own expiry passes, never less.
func (b *Backend) extendSpends(ctx context.Context, rs []spendRenewal) {
	if len(rs) == 0 {
		return
	}
	byProject := map[string][]spendRenewal{}
	var order []string
	for _, r := range rs {
		if _, ok := byProject[r.project]; !ok {
			order = append(order, r.project)
		}
		byProject[r.project] = append(byProject[r.project], r)
	}
	for _, project := range order {
		group := byProject[project]
		args := []any{"extend", backendkit.MaxBudgetEvents, len(group)}
		for _, r := range group {
			args = append(args, r.lease, r.secret, r.expires.UnixMilli())
		}
		v, err := budgetScript.Run(ctx, b.rdb, BudgetKeys(project), args...).Slice()
		for j, r := range group {
			if err == nil && j < len(v) && v[j] == int64(0) {
				b.spends.Delete(spendRef{project, r.lease})
			}
		}
	}
}
