package filebackend

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/governor-dev/governor/governor"
)

// budgetResource names the pseudo-resource that holds a project's spend
// budgets: all of them in one state file, so that one transaction
// checks and charges several.
const budgetResource = "{budgets}"

func budgetKey(project string) governor.Key {
	return governor.Key{Project: project, Resource: budgetResource}
}

// budgets runs work on project's budget book at the wall clock's now
// (ms), and writes the book back.
func budgets[T any](ctx context.Context, b *Backend, project string, work func(bk *budgetBook, now int64) (T, error)) (T, error) {
	return within(ctx, b, budgetKey(project), section{create: true}, func(t *tx) (T, error) {
		if t.st.Budgets == nil {
			t.st.Budgets = newBudgetBook()
		}
		bk := t.st.Budgets
		if bk.Budgets == nil {
			bk.Budgets = map[string]*budgetRec{}
		}
		if bk.Open == nil {
			bk.Open = map[string]*budgetRes{}
		}
		v, err := work(bk, b.wall().UnixMilli())
		if err != nil {
			var zero T
			return zero, err
		}
		t.dirty = true
		return v, t.commit()
	})
}

// BudgetReserve implements governor.BudgetBackend.
func (b *Backend) BudgetReserve(ctx context.Context, req governor.BudgetRequest) (governor.BudgetResult, error) {
	if err := governor.ValidateBudgetRequest(req); err != nil {
		return governor.BudgetResult{}, err
	}
	res, err := budgets(ctx, b, req.Project, func(bk *budgetBook, now int64) (governor.BudgetResult, error) {
		return bk.reserve(req, now)
	})
	if err == nil && res.Allowed {
		b.spends.Store(spendRef{req.Project, req.Lease}, struct{}{})
	}
	return res, err
}

// BudgetSettle implements governor.BudgetBackend: the release and the
// adjustment sent with it (req.Release, req.Adjust) first, then the
// settle, each under its own lock (nothing here costs a round trip).
func (b *Backend) BudgetSettle(ctx context.Context, req governor.SettleRequest) (governor.BudgetSettlement, error) {
	var out governor.BudgetSettlement
	var rerr, aerr error
	if r := req.Release; r != nil {
		rerr = b.Release(ctx, governor.Key{Project: req.Project, Resource: r.Resource}, r.ID, r.Secret)
	}
	if req.Adjust != nil {
		aerr = b.RateAdjust(ctx, *req.Adjust)
	}
	err := governor.ValidateBudgetSettle(req.Project, req.Lease, req.Actual)
	if err == nil {
		b.spends.Delete(spendRef{req.Project, req.Lease}) // settled: nothing left to renew
		out, err = budgets(ctx, b, req.Project, func(bk *budgetBook, now int64) (governor.BudgetSettlement, error) {
			return bk.settle(req.Project, req.Lease, req.Secret, req.Actual, req.By, now)
		})
	}
	out.ReleaseErr, out.AdjustErr = rerr, aerr
	return out, err
}

// BudgetAdmin implements governor.BudgetBackend.
func (b *Backend) BudgetAdmin(ctx context.Context, project, name string, op governor.BudgetOp, value int64, by string) error {
	if err := governor.ValidateBudgetAdmin(project, name, op, value); err != nil {
		return err
	}
	_, err := budgets(ctx, b, project, func(bk *budgetBook, now int64) (struct{}, error) {
		return struct{}{}, bk.admin(name, op, value, by, now)
	})
	return err
}

// Budgets implements governor.BudgetBackend. It reads without locking:
// the state file is replaced atomically.
func (b *Backend) Budgets(ctx context.Context, project string, names []string) ([]governor.BudgetState, time.Time, error) {
	if err := governor.ValidateProject(project); err != nil {
		return nil, time.Time{}, err
	}
	st, err := b.read(ctx, budgetKey(project))
	now := time.UnixMilli(b.wall().UnixMilli())
	if err != nil || st == nil || st.Budgets == nil {
		return nil, now, err
	}
	// The state as it holds now, as the next write would leave it; st is
	// this read's own copy, never written.
	st.Budgets.prune(now.UnixMilli())
	var out []governor.BudgetState
	for name, r := range st.Budgets.Budgets {
		if names == nil || slices.Contains(names, name) {
			r.ended(now.UnixMilli())
			out = append(out, st.Budgets.state(name, r))
		}
	}
	slices.SortFunc(out, func(a, b governor.BudgetState) int { return strings.Compare(a.Name, b.Name) })
	return out, now, nil
}

// BudgetEvents implements governor.BudgetBackend.
func (b *Backend) BudgetEvents(ctx context.Context, project string) ([]governor.BudgetEvent, error) {
	if err := governor.ValidateProject(project); err != nil {
		return nil, err
	}
	st, err := b.read(ctx, budgetKey(project))
	if err != nil || st == nil || st.Budgets == nil {
		return nil, err
	}
	out := make([]governor.BudgetEvent, 0, len(st.Budgets.Events))
	for _, e := range st.Budgets.Events {
		out = append(out, governor.BudgetEvent{At: time.UnixMilli(e.At), Budget: e.Budget, Kind: e.Kind, By: e.By, Lease: e.Lease, Detail: e.Detail})
	}
	return out, nil
}
