package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/leasetest"
	"github.com/governor-dev/governor/internal/proctest"
	"github.com/governor-dev/governor/internal/statuspage"
	"github.com/governor-dev/governor/internal/view"
)

// TestBudgetsView: 'governor budgets' shows a budget a reservation made,
// as a table and as JSON; 'governor budget' sets a live limit, pauses,
// and refuses bad input naming it, changing nothing.
func TestBudgetsView(t *testing.T) {
	t.Parallel()
	runTargets(t, "", func(t *testing.T, tg *target) {
		g := tg.governor(t)
		ctx := context.Background()
		day := governor.SpendBudget{Name: "evals-day", Limit: 40 * governor.MicroUnit, Window: governor.BudgetWindow{Calendar: "day"}}
		r, err := leasetest.Reserve(ctx, g, []governor.BudgetSpend{{Budget: day, Amount: 5 * governor.MicroUnit}}, governor.BudgetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Settle(ctx, 3*governor.MicroUnit); err != nil {
			t.Fatal(err)
		}
		code, out, stderr := tg.run(t, "budgets")
		if code != 0 || !strings.Contains(out, "evals-day") || !strings.Contains(out, "7.5%") {
			t.Fatalf("budgets: exit %d, %q, %q", code, out, stderr)
		}
		code, out, stderr = tg.run(t, "--json", "budgets")
		var v struct {
			Budgets []struct {
				Name         string
				Spent, Limit int64
				Reset        time.Time
			}
		}
		if code != 0 || json.Unmarshal([]byte(out), &v) != nil || len(v.Budgets) != 1 || v.Budgets[0].Spent != 3*governor.MicroUnit ||
			v.Budgets[0].Limit != 40*governor.MicroUnit || v.Budgets[0].Reset.IsZero() {
			t.Fatalf("budgets --json: exit %d, %q, %q", code, out, stderr)
		}
		mux := http.NewServeMux()
		statuspage.NewPage(g, statuspage.PageOptions{Timeout: 5 * time.Second}).Register(mux)
		srv := httptest.NewServer(mux)
		defer srv.Close()
		code, page := proctest.Get(t, srv.URL+"/api/v1/budgets?budget=evals-day")
		var api view.Budgets
		if code != 200 || json.Unmarshal([]byte(page), &api) != nil || len(api.Budgets) != 1 || api.Budgets[0].Spent != 3*governor.MicroUnit {
			t.Fatalf("/api/v1/budgets: %d %q", code, page)
		}
		if code, out, stderr := tg.run(t, "budget", "evals-day", "--limit", "12.50", "--by", "ops"); code != 0 || !strings.Contains(out, "12.5 (live)") {
			t.Fatalf("budget --limit 12.50: exit %d, %q, %q", code, out, stderr)
		}
		if code, out, stderr := tg.run(t, "budget", "evals-day", "--pause"); code != 0 || !strings.Contains(out, "PAUSED") {
			t.Fatalf("budget --pause: exit %d, %q, %q", code, out, stderr)
		}
		_, err = leasetest.Reserve(ctx, g, []governor.BudgetSpend{{Budget: day, Amount: 1}}, governor.BudgetOptions{})
		if busy := (*governor.BudgetBusyError)(nil); !errors.As(err, &busy) || busy.Reason != "paused" {
			t.Fatalf("reserve while paused: %v", err)
		}
		for _, bad := range [][]string{{"budget", "evals-day"}, {"budget", "evals-day", "--limit", "lots"}, {"budget", "nope", "--reset"},
			{"budget", "evals-day", "--reset", "--resume"}} {
			if code, _, stderr := tg.run(t, bad...); code != 125 || stderr == "" {
				t.Errorf("%v: exit %d, %q; want 125 naming the problem", bad, code, stderr)
			}
		}
	})
}
