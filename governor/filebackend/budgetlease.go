// Spend reservations renewed with their lease (governor.Ask.BudgetUnderLease).

package filebackend

import (
	"context"
	"time"

	"github.com/governor-dev/governor/governor"
)

// spendRef names a reservation this Backend made: by its project and id.
type spendRef struct{ project, lease string }

// rides says whether the renewal of lease id of key may carry a
// reservation: one this Backend made under that id, or any when it does
// not hold the lease (a handle renewed by another process, `governor
// renew`), as it cannot know.
func (b *Backend) rides(key governor.Key, id string) bool {
	if _, ok := b.spends.Load(spendRef{key.Project, id}); ok {
		return true
	}
	return !b.holds(key, id)
}

// extendSpend renews the reservation named lease of project, when
// secret proves it, to the expiry of the lease of that id, just renewed:
// left from now (the lease's clock is the boot clock, the budgets' the
// wall clock). It reads first without the lock, as most renewals carry
// no reservation. Errors are dropped: a reservation not renewed counts
// at its estimate once its own expiry passes, never less.
func (b *Backend) extendSpend(ctx context.Context, project, lease, secret string, left time.Duration) {
	st, err := b.read(ctx, budgetKey(project))
	if err != nil || st == nil || st.Budgets == nil || st.Budgets.Open[lease] == nil {
		b.spends.Delete(spendRef{project, lease})
		return
	}
	_, _ = budgets(ctx, b, project, func(bk *budgetBook, now int64) (struct{}, error) {
		if !bk.extend(lease, secret, now+left.Milliseconds(), now) {
			b.spends.Delete(spendRef{project, lease})
		}
		return struct{}{}, nil
	})
}

// extend moves the expiry of open reservation lease, when secret proves
// it, to x (ms; never earlier), and says whether it is open. One past
// its expiry was counted first (prune): nothing brings it back. A
// reservation made before secrets is never renewed (budget.lua's twin).
func (bk *budgetBook) extend(lease, secret string, x, now int64) bool {
	bk.prune(now)
	o := bk.Open[lease]
	if o == nil || o.Proof == "" || !o.proven(secret) {
		return false
	}
	o.Expires = max(o.Expires, x)
	return true
}
