package metrics_test

import (
	"context"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/filebackend"
	"github.com/governor-dev/governor/internal/leasetest"
	"github.com/governor-dev/governor/internal/proctest"
	"github.com/governor-dev/governor/metrics"
)

// TestBudgetCollector: a budget's spent, reserved, limit and overruns are
// exposed in units, and the exposition lints clean (promtool too, where
// installed).
func TestBudgetCollector(t *testing.T) {
	b, err := filebackend.New(t.TempDir(), filebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := governor.New(b, governor.Options{Project: "m"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx := context.Background()
	day := governor.SpendBudget{Name: "evals-day", Limit: 40 * governor.MicroUnit, Window: governor.BudgetWindow{Per: 24 * time.Hour}}
	r, err := leasetest.Reserve(ctx, g, []governor.BudgetSpend{{Budget: day, Amount: 2 * governor.MicroUnit}}, governor.BudgetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Settle(ctx, 3*governor.MicroUnit); err != nil {
		t.Fatal(err)
	}
	if _, err := leasetest.Reserve(ctx, g, []governor.BudgetSpend{{Budget: day, Amount: governor.MicroUnit / 2}}, governor.BudgetOptions{}); err != nil {
		t.Fatal(err)
	}
	c := metrics.NewBudgetCollector(g, 0)
	want := `
# HELP governor_budget_spent Settled spend in the budget's window in force, in the budget's unit.
# TYPE governor_budget_spent gauge
governor_budget_spent{budget="evals-day",project="m"} 3
# HELP governor_budget_reserved Estimates reserved and not settled yet, in the budget's unit.
# TYPE governor_budget_reserved gauge
governor_budget_reserved{budget="evals-day",project="m"} 0.5
# HELP governor_budget_limit The budget's limit in force, in its unit.
# TYPE governor_budget_limit gauge
governor_budget_limit{budget="evals-day",project="m"} 40
# HELP governor_budget_overruns_total Calls whose actual cost was above their estimate.
# TYPE governor_budget_overruns_total counter
governor_budget_overruns_total{budget="evals-day",project="m"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "governor_budget_spent", "governor_budget_reserved",
		"governor_budget_limit", "governor_budget_overruns_total"); err != nil {
		t.Fatal(err)
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not found")
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	code, page := proctest.Get(t, srv.URL)
	if code != 200 || !strings.Contains(page, "governor_budget_held") {
		t.Fatalf("page: %d\n%s", code, page)
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(page)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s\n%s", err, out, page)
	}
}

// oneBudget is a BudgetSource with one budget.
type oneBudget struct{}

func (oneBudget) Project() string { return "p" }

func (oneBudget) Budgets(context.Context, []string) ([]governor.BudgetState, time.Time, error) {
	return []governor.BudgetState{{Name: "evals-day", Limit: 40 * governor.MicroUnit, Spent: governor.MicroUnit, End: time.Unix(1e9, 0)}}, time.Unix(1e9, 0), nil
}
