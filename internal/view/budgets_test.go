package view_test

import (
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/view"
)

func TestBurn(t *testing.T) {
	start := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	end := start.Add(24 * time.Hour)
	now := start.Add(4 * time.Hour)
	at := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	for _, tt := range []struct {
		name     string
		s        governor.BudgetState
		rate     int64
		exhausts *time.Time
	}{
		// $8 in 4h: $2/h; $40 − 8 − 2 reserved = $30 left: 15h on.
		{"burning", governor.BudgetState{Limit: 40e6, Spent: 8e6, Reserved: 2e6, Start: start, End: end}, 2e6, at(15 * time.Hour)},
		// $2 in 4h: $0.5/h; $38 left takes 76h, after the reset.
		{"lasts the window", governor.BudgetState{Limit: 40e6, Spent: 2e6, Start: start, End: end}, 500_000, nil},
		{"nothing spent", governor.BudgetState{Limit: 40e6, Start: start, End: end}, 0, nil},
		{"nothing left", governor.BudgetState{Limit: 40e6, Spent: 30e6, Reserved: 10e6, Start: start, End: end}, 7_500_000, at(0)},
		{"no window yet", governor.BudgetState{Limit: 40e6}, 0, nil},
		{"far future", governor.BudgetState{Limit: governor.MaxBudgetAmount, Spent: 1, Start: start, End: start.Add(366 * 24 * time.Hour)}, 0, nil},
	} {
		rate, ex := view.Burn(tt.s, now)
		if rate != tt.rate || (ex == nil) != (tt.exhausts == nil) || (ex != nil && !ex.Equal(*tt.exhausts)) {
			t.Errorf("%s: Burn = %d, %v; want %d, %v", tt.name, rate, ex, tt.rate, tt.exhausts)
		}
	}
}

func TestBudgetsWithConfigured(t *testing.T) {
	now := time.Date(2026, 12, 5, 10, 30, 0, 0, time.UTC)
	v := view.BudgetsWith([]governor.BudgetState{{Name: "b", Limit: 5, Start: now.Add(-time.Hour), End: now.Add(time.Hour)}}, now,
		map[string]view.BudgetConfig{
			"a": {Limit: 7e6, Unit: "USD", Window: governor.BudgetWindow{Per: time.Hour}},
			"b": {Limit: 5, Unit: "tokens", Window: governor.BudgetWindow{Per: 2 * time.Hour}},
		})
	if len(v.Budgets) != 2 || v.Budgets[0].Name != "a" || v.Budgets[1].Name != "b" {
		t.Fatalf("budgets %+v; want a (configured, no state) then b", v.Budgets)
	}
	a := v.Budgets[0]
	if !a.Configured || a.Unit != "USD" || a.Limit != 7e6 || a.Spent != 0 || !a.Reset.Equal(now.Truncate(time.Hour).Add(time.Hour)) || a.Window != "per 1h0m0s" {
		t.Errorf("a = %+v", a)
	}
	if b := v.Budgets[1]; !b.Configured || b.Unit != "tokens" {
		t.Errorf("b = %+v", b)
	}
}

// A budget whose window has ended is read as the next begun (End zero):
// a configured one shows the window that holds now, one that is not
// configured no reset.
func TestBudgetsNextWindow(t *testing.T) {
	now := time.Date(2026, 12, 5, 10, 30, 0, 0, time.UTC)
	sts := []governor.BudgetState{{Name: "a", Limit: 5, Spent: 1, Start: now.Add(-30 * time.Minute)}, {Name: "b", Limit: 5, Start: now.Add(-time.Hour)}}
	v := view.BudgetsWith(sts, now, map[string]view.BudgetConfig{"a": {Limit: 5, Unit: "USD", Window: governor.BudgetWindow{Per: time.Hour}}})
	if a := v.Budgets[0]; !a.Start.Equal(now.Add(-30*time.Minute)) || !a.Reset.Equal(now.Add(30*time.Minute)) || a.Spent != 1 {
		t.Errorf("a = %+v; want the window 10:00..11:00", a)
	}
	if b := v.Budgets[1]; !b.Reset.IsZero() {
		t.Errorf("b = %+v; want no reset", b)
	}
}
