package conformance

import (
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
)

// budgetDrift: a budget's limit, soft threshold and window in force are
// its state's; a caller whose configuration says otherwise changes none
// of them. A configuration of limit 1000 spent 50 against the fleet's 1
// before; one of `per: 1s` opened a "later window" mid-day, after which
// every settle of the day landed in the carry while the check read a
// frozen spent (10 of 10 runs of 0.9 admitted on 1 a day).
func (s *suite) budgetDrift(t *testing.T) {
	b, p := s.openFull(t), project()
	now := budgetNow(t, b, p)
	start := now.Add(-time.Second)
	reserve(t, b, p, "a", charge("day", 1_000_000, 900_000, start, time.Hour))
	settle(t, b, p, "a", governor.BudgetAmount{Name: "day", Amount: 900_000})
	// Limit 1000 and a soft threshold: the state's limit refuses.
	big := charge("day", 1000*governor.MicroUnit, 900_000, start, time.Hour)
	big.Soft = 10
	res := reserve(t, b, p, "b", big)
	if res.Allowed || res.Reason != "exhausted" {
		t.Fatalf("0.9 more under a caller's limit of 1000: %+v; want refused by the state's limit 1", res)
	}
	st := budgetState(t, b, p, "day")
	wantBudget(t, "after a caller of limit 1000", st, 900_000, 0, 1_000_000)
	if st.Soft != 0 {
		t.Fatalf("soft threshold %d after a caller's 10; want the state's 0", st.Soft)
	}
	// A window of one second that holds now, starting after the day's:
	// the day's stays in force, spent kept.
	for i, lease := range []string{"c", "d"} {
		short := charge("day", 1_000_000, 900_000, budgetNow(t, b, p).Add(-time.Millisecond), time.Second)
		if res := reserve(t, b, p, lease, short); res.Mismatch {
			continue // the second ended between the read and the reserve
		} else if res.Allowed {
			t.Fatalf("try %d: 0.9 more in a caller's later window of 1s: %+v; want refused, the day in force", i, res)
		}
		st = budgetState(t, b, p, "day")
		if !st.Start.Equal(start) || !st.End.Equal(start.Add(time.Hour)) {
			t.Fatalf("window %v..%v after a caller's 1s window; want the day's %v..%v", st.Start, st.End, start, start.Add(time.Hour))
		}
		wantBudget(t, "after a caller's 1s window", st, 900_000, 0, 1_000_000)
	}
	// A settle of the day still lands in its spent.
	reserve(t, b, p, "e", charge("day", 1_000_000, 100_000, start, time.Hour))
	settle(t, b, p, "e", governor.BudgetAmount{Name: "day", Amount: 100_000})
	wantBudget(t, "after a settle in the day", budgetState(t, b, p, "day"), 1_000_000, 0, 1_000_000)
	// The operator's limit changes it, recorded.
	if err := b.BudgetAdmin(ctxT(t), p, "day", governor.BudgetSetLimit, 2_000_000, "op"); err != nil {
		t.Fatal(err)
	}
	if res := reserve(t, b, p, "f", charge("day", 1_000_000, 500_000, start, time.Hour)); !res.Allowed {
		t.Fatalf("0.5 more after the operator's limit 2: %+v; want allowed", res)
	}
	if !hasBudgetEvent(budgetEvents(t, b, p), "day", eventkind.BudgetAdmin) {
		t.Fatalf("no admin event for the operator's limit")
	}
}
