//go:build !governor_noserve

package main

import (
	"encoding/json"
	"syscall"
	"testing"
)

// TestServeBudgets: governor serve reads the budgets through its
// reopening source: /metrics has their series and /api/v1/budgets the
// configured ones too, with unit and burn rate.
func TestServeBudgets(t *testing.T) {
	tg := fileTarget(t, spendConfig)
	if code, _, stderr := tg.run(t, "run", "--provider", "anthropic", "--fair-key", "evals", "--cost", "1.5", "--", "true"); code != 0 {
		t.Fatalf("run --cost 1.5: exit %d, %q", code, stderr)
	}
	p := startServe(t, append(tg.global(), "serve", "--listen", "127.0.0.1:0", "--timeout", "5s")...)
	expectSeries(t, "after a spend", p.scrape(t), map[string]float64{
		`governor_budget_spent{budget="team-day",project="runtest"}`: 1.5,
		`governor_budget_limit{budget="team-day",project="runtest"}`: 2,
		`governor_budget_read_error{project="runtest"}`:              0,
	})
	code, body := p.get(t, "/api/v1/budgets")
	var v struct {
		Budgets []struct {
			Name, Unit string
			Spent      int64
			Burn       int64 `json:"burn_rate_per_hour"`
		}
	}
	if code != 200 || json.Unmarshal([]byte(body), &v) != nil || len(v.Budgets) != 3 {
		t.Fatalf("/api/v1/budgets: %d %s; want the 3 configured budgets", code, body)
	}
	if b := v.Budgets[1]; b.Name != "team-day" || b.Unit != "USD" || b.Spent != 1_500_000 || b.Burn <= 0 {
		t.Errorf("team-day from the API: %+v", b)
	}
	if code, _ := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("serve: exit %d", code)
	}
}
