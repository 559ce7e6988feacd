package view

import (
	"context"
	"slices"
	"strings"
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
	Name     string `json:"name"`
	Spent    int64  `json:"spent"`
	Reserved int64  `json:"reserved"`
	Limit    int64  `json:"limit"`
	LimitBy  string `json:"limit_by,omitempty"`
	Soft     int64  `json:"soft,omitempty"`
	// Start and Reset bound the window that holds now; Reset is zero for
	// a budget that is not configured whose window has ended (the next
	// reservation opens the next).
	Start    time.Time `json:"window_start"`
	Reset    time.Time `json:"reset"`
	Open     int64     `json:"open"`
	Overruns int64     `json:"overruns"`
	Paused   string    `json:"paused_by,omitempty"`
	Held     string    `json:"held,omitempty"`
	// Unit and Window are the configuration's ("" when the budget is not
	// configured: made by the library, or no longer configured).
	Unit       string `json:"unit,omitempty"`
	Window     string `json:"window,omitempty"`
	Configured bool   `json:"configured"`
	// Definition is the unit and window kept with the budget's state
	// (governor.BudgetState.Def: the first reservation's, or the last
	// 'governor budget NAME --apply'); "" before any.
	Definition string `json:"definition,omitempty"`
	// BurnRate is what the window has spent so far per hour of it
	// (micro-units per hour): spent / (now − window start).
	BurnRate int64 `json:"burn_rate_per_hour"`
	// Exhausts is when the budget runs out at BurnRate (limit − spent −
	// reserved left, burnt at that rate): absent when that comes at or
	// after the reset, or nothing burns; now when nothing is left.
	Exhausts *time.Time `json:"exhausts_at,omitempty"`
}

// Budgets is the budgets view: the backend's now and every budget.
type Budgets struct {
	Now     time.Time `json:"now"`
	Budgets []Budget  `json:"budgets"`
}

// BudgetConfig is what the configuration says of a budget.
type BudgetConfig struct {
	Limit, Soft int64
	Unit        string
	Window      governor.BudgetWindow
}

// BudgetsOf is the view of sts read at now.
func BudgetsOf(sts []governor.BudgetState, now time.Time) Budgets { return BudgetsWith(sts, now, nil) }

// BudgetsWith is the view of sts read at now, and of every budget of
// configured that has no state yet (nothing spent, its configured limit,
// the window that holds now), ordered by name.
func BudgetsWith(sts []governor.BudgetState, now time.Time, configured map[string]BudgetConfig) Budgets {
	out := Budgets{Now: now.UTC(), Budgets: make([]Budget, 0, max(len(sts), len(configured)))}
	seen := make(map[string]bool, len(sts))
	for _, s := range sts {
		seen[s.Name] = true
		out.Budgets = append(out.Budgets, budgetOf(s, now, configured))
	}
	for name, c := range configured {
		if !seen[name] {
			start, end := c.Window.Bounds(now)
			out.Budgets = append(out.Budgets, budgetOf(governor.BudgetState{Name: name, Limit: c.Limit, Soft: c.Soft, Start: start, End: end}, now, configured))
		}
	}
	if len(out.Budgets) > len(sts) {
		slices.SortFunc(out.Budgets, func(a, b Budget) int { return strings.Compare(a.Name, b.Name) })
	}
	return out
}

func budgetOf(s governor.BudgetState, now time.Time, configured map[string]BudgetConfig) Budget {
	c, ok := configured[s.Name]
	if ok && (s.End.IsZero() || !now.Before(s.End)) {
		// The next window has begun (the backend read it so) or none
		// opened yet: the configuration says which holds now.
		s.Start, s.End = c.Window.Bounds(now)
	}
	b := Budget{Name: s.Name, Spent: s.Spent, Reserved: s.Reserved, Limit: s.Limit, LimitBy: s.LimitBy,
		Soft: s.Soft, Start: s.Start.UTC(), Reset: s.End.UTC(), Open: s.Open, Overruns: s.Overruns, Paused: s.Paused, Held: s.Held, Definition: s.Def}
	if ok {
		b.Unit, b.Window, b.Configured = c.Unit, c.Window.String(), true
	}
	b.BurnRate, b.Exhausts = Burn(s, now)
	return b
}

// Burn is s's burn rate at now, in micro-units per hour: what its window
// has spent so far over the time since the window started (0 before
// any time has passed, or without a window); and when, burning at that
// rate, what is left (limit − spent − reserved) runs out: nil when that
// is at or after the reset or nothing burns, now when nothing is left.
func Burn(s governor.BudgetState, now time.Time) (perHour int64, exhausts *time.Time) {
	end := now
	if !s.End.IsZero() && s.End.Before(end) {
		end = s.End
	}
	if elapsed := end.Sub(s.Start); !s.Start.IsZero() && elapsed > 0 {
		perHour = int64(float64(s.Spent) * float64(time.Hour) / float64(elapsed))
	}
	left := s.Limit - s.Spent - s.Reserved
	switch {
	case left <= 0 && s.Limit > 0:
		t := now.UTC()
		return perHour, &t
	case perHour <= 0:
		return perHour, nil
	}
	d := float64(left) / float64(perHour) * float64(time.Hour)
	if s.End.IsZero() || d >= float64(s.End.Sub(now)) {
		return perHour, nil // compared as floats: a far exhaustion overflows a Duration
	}
	t := now.Add(time.Duration(d)).UTC()
	return perHour, &t
}
