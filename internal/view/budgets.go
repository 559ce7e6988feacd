package view

import (
	"context"
	"time"

	"github.com/governor-dev/governor/governor"
)

// BudgetSource reads a project's spend budgets; a *governor.Governor is
// one.
type BudgetSource interface {
	Budgets(ctx context.Context, names []string) ([]governor.BudgetState, time.Time, error)
}

// Budget is a spend budget in 'governor budgets --json' and
// /api/v1/budgets: amounts in micro-units.
type Budget struct {
	Name     string    `json:"name"`
	Spent    int64     `json:"spent"`
	Reserved int64     `json:"reserved"`
	Limit    int64     `json:"limit"`
	LimitBy  string    `json:"limit_by,omitempty"`
	Soft     int64     `json:"soft,omitempty"`
	Start    time.Time `json:"window_start"`
	Reset    time.Time `json:"reset"`
	Open     int64     `json:"open"`
	Overruns int64     `json:"overruns"`
	Paused   string    `json:"paused_by,omitempty"`
	Held     string    `json:"held,omitempty"`
}

// Budgets is the budgets view: the backend's now and every budget.
type Budgets struct {
	Now     time.Time `json:"now"`
	Budgets []Budget  `json:"budgets"`
}

// BudgetsOf is the view of sts read at now.
func BudgetsOf(sts []governor.BudgetState, now time.Time) Budgets {
	out := Budgets{Now: now.UTC(), Budgets: make([]Budget, 0, len(sts))}
	for _, s := range sts {
		out.Budgets = append(out.Budgets, Budget{Name: s.Name, Spent: s.Spent, Reserved: s.Reserved, Limit: s.Limit, LimitBy: s.LimitBy,
			Soft: s.Soft, Start: s.Start.UTC(), Reset: s.End.UTC(), Open: s.Open, Overruns: s.Overruns, Paused: s.Paused, Held: s.Held})
	}
	return out
}
