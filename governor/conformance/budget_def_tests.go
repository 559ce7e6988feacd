package conformance

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/naming"
)

// budgetDefinition: a budget's definition (unit and window) lives with
// its state. The first reservation that states one sets it; one that
// states another (a configuration with per: 1s, or another unit) is
// refused ("drift", naming the state's), changing nothing; only an
// operator's define changes it, with the limit (replacing a live one),
// recorded as an admin event: the window in force then runs to its end
// with its spent, and the next, computed from the new definition,
// starts no earlier than that end. (A caller's limit never changes the
// state's: budgetDrift.)
func (s *suite) budgetDefinition(t *testing.T) {
	b, p := s.openFull(t), project()
	length := time.Hour
	if s.h.RealTime {
		length = 1500 * time.Millisecond
	}
	start := budgetNow(t, b, p).Add(-time.Millisecond)
	hour, second, tokens, paris := "USD per 1h0m0s", "USD per 1s", "tokens per 1h0m0s", "USD calendar day in Europe/Paris"
	day := func(amount int64, def string) governor.BudgetCharge {
		c := charge("day", 100, amount, start, length)
		c.Def = def
		return c
	}
	if res := reserve(t, b, p, "a", day(30, hour)); !res.Allowed {
		t.Fatalf("first reservation: %+v", res)
	}
	settle(t, b, p, "a", governor.BudgetAmount{Name: "day", Amount: 30})
	if st := budgetState(t, b, p, "day"); st.Def != hour {
		t.Fatalf("definition %q after the first reservation; want %q", st.Def, hour)
	}
	for _, bad := range []struct {
		def   string
		limit int64
	}{{"", 100}, {"USD\nper 1s", 100}, {strings.Repeat("x", naming.MaxNameLen+1), 100}, {second, -1}} {
		if err := b.BudgetAdmin(ctxT(t), p, "day", governor.BudgetDefine(bad.def), bad.limit, "op"); !errors.Is(err, governor.ErrInvalid) {
			t.Fatalf("define %q limit %d: %v; want ErrInvalid", bad.def, bad.limit, err)
		}
	}
	if st := budgetState(t, b, p, "day"); st.Def != hour || st.Limit != 100 {
		t.Fatalf("after bad defines: %+v; want it unchanged", st)
	}
	for _, def := range []string{second, tokens} {
		c := day(10, def)
		if def == second {
			now := budgetNow(t, b, p)
			c.Start, c.End = now.Add(-time.Millisecond), now.Add(time.Second)
		}
		res := reserve(t, b, p, "b", c)
		if res.Mismatch {
			continue // the second ended between the read and the reserve
		}
		if res.Allowed || res.Reason != "drift" || res.Refused.Name != "day" || res.Refused.Def != hour {
			t.Fatalf("a reservation defined %q: %+v; want refused as drift, naming the state's %q", def, res, hour)
		}
		st := budgetState(t, b, p, "day")
		wantBudget(t, "after a refused "+def, st, 30, 0, 100)
		if st.Def != hour || !st.Start.Equal(start) || !st.End.Equal(start.Add(length)) {
			t.Fatalf("after a reservation defined %q: %+v; want the state's definition and window", def, st)
		}
	}
	if res := reserve(t, b, p, "c", day(10, "")); !res.Allowed {
		t.Fatalf("a reservation that states no definition: %+v; want allowed", res)
	}
	settle(t, b, p, "c", governor.BudgetAmount{Name: "day", Amount: 10})
	// The operator applies a calendar day in Paris, limit 200, over a
	// live limit of 50: the window in force stays, spent kept, and the
	// applied limit is the one in force.
	if err := b.BudgetAdmin(ctxT(t), p, "day", governor.BudgetSetLimit, 50, "op"); err != nil {
		t.Fatal(err)
	}
	if err := b.BudgetAdmin(ctxT(t), p, "day", governor.BudgetDefine(paris), 200, "op"); err != nil {
		t.Fatal(err)
	}
	st := budgetState(t, b, p, "day")
	wantBudget(t, "after the define", st, 40, 0, 200)
	if st.Def != paris || st.LimitBy != "" || !st.Start.Equal(start) || !st.End.Equal(start.Add(length)) {
		t.Fatalf("after the define: %+v; want %q, its limit in force, the window in force kept", st, paris)
	}
	found := false
	for _, e := range budgetEvents(t, b, p) {
		found = found || e.Kind == eventkind.BudgetAdmin && e.Budget == "day" && e.By == "op" &&
			strings.Contains(e.Detail, "define "+paris+" (was "+hour+"), limit 200 (was 50)")
	}
	if !found {
		t.Fatalf("no admin event for the define: %+v", budgetEvents(t, b, p))
	}
	if res := reserve(t, b, p, "d", day(10, hour)); res.Allowed || res.Reason != "drift" || res.Refused.Def != paris {
		t.Fatalf("the old definition after the define: %+v; want drift naming %q", res, paris)
	}
	if res := reserve(t, b, p, "e", day(10, paris)); !res.Allowed {
		t.Fatalf("the new definition in the window in force: %+v; want allowed", res)
	}
	settle(t, b, p, "e", governor.BudgetAmount{Name: "day", Amount: 10})
	// Once the window in force ends, the new definition's window (here
	// one that began before that end) opens from the end: nothing
	// settled before it counts twice, nothing is reset mid-window.
	s.h.Advance(t, length)
	next := day(5, paris)
	next.Start, next.End = start.Add(length/2), start.Add(length/2+2*length)
	if res := reserve(t, b, p, "f", next); !res.Allowed {
		t.Fatalf("the first reservation of the new definition's window: %+v; want allowed", res)
	}
	st = budgetState(t, b, p, "day")
	wantBudget(t, "in the new definition's first window", st, 0, 5, 200)
	if !st.Start.Equal(start.Add(length)) || !st.End.Equal(next.End) {
		t.Fatalf("the new definition's first window %v..%v; want from the old end %v to %v", st.Start, st.End, start.Add(length), next.End)
	}
}
