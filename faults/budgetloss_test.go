package faults_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/internal/leasetest"
	"github.com/governor-dev/governor/internal/redistest"
)

// Redis restarted without persistence while a process held an open
// budget reservation of $30 of a $100 day. A fresh budget must not be
// handed out silently: the process that saw the budget born holds it at
// its next reservation (and at its settle), every process then finds it
// held, and an operator's confirm lifts the hold.
func TestRedisLossHoldsBudget(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	project := uniq("budgetloss")
	a := newGovernor(t, s.Addr, governor.Options{Project: project, Session: "a"})
	day := governor.SpendBudget{Name: "evals-day", Limit: 100 * governor.MicroUnit, Window: governor.BudgetWindow{Calendar: "day"}}
	spend := func(n int64) []governor.BudgetSpend {
		return []governor.BudgetSpend{{Budget: day, Amount: n * governor.MicroUnit}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	open, err := leasetest.Reserve(ctx, a, spend(30), governor.BudgetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	// The client reconnects: retry while the server comes back.
	var busy *governor.BudgetBusyError
	for {
		_, err = leasetest.Reserve(ctx, a, spend(10), governor.BudgetOptions{})
		if err == nil || errors.As(err, &busy) || ctx.Err() != nil {
			break
		}
	}
	if busy == nil || busy.Reason != "held" {
		t.Fatalf("a's reservation after the loss: %v; want held", err)
	}
	t.Logf("after the loss: %v", err)
	c := newGovernor(t, s.Addr, governor.Options{Project: project, Session: "c"})
	if _, err := leasetest.Reserve(ctx, c, spend(10), governor.BudgetOptions{}); !errors.As(err, &busy) || busy.Reason != "held" {
		t.Fatalf("a newcomer's reservation after the evidence: %v; want held", err)
	}
	if got, err := open.Settle(ctx, 25*governor.MicroUnit); err != nil || got.Settled {
		t.Fatalf("settle of the lost reservation: %+v, %v; want nothing to settle", got, err)
	}
	if err := c.BudgetAdmin(ctx, day.Name, governor.BudgetConfirm, 0, "oncall"); err != nil {
		t.Fatal(err)
	}
	r, err := leasetest.Reserve(ctx, c, spend(10), governor.BudgetOptions{})
	if err != nil {
		t.Fatalf("after the operator confirmed: %v", err)
	}
	if st := r.States[0]; st.Spent != 25*governor.MicroUnit {
		t.Fatalf("spent after the confirm %d; want the lost reservation's settled 25 counted", st.Spent)
	}
	evs, err := c.BudgetEvents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var held, confirm bool
	for _, e := range evs {
		held = held || e.Kind == eventkind.BudgetHeld
		confirm = confirm || e.Kind == eventkind.BudgetAdmin && e.Detail == "confirm"
	}
	if !held || !confirm {
		t.Fatalf("events %+v; want held and the confirm", evs)
	}
}
