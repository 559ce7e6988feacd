package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/governor-dev/governor/governor"
)

// TestBridgeBudgetByName: a client names a configured budget (budgets.NAME
// of the bridge's configuration) instead of giving it inline; the
// estimate is reserved on it and settled as an inline budget's. An
// unknown name is bad input naming it and the configured budgets,
// leaving nothing reserved or held.
func TestBridgeBudgetByName(t *testing.T) {
	g := fileGlobal(t, "project: p\nbudgets:\n  evals-day: {limit: 1, unit: USD, per: 24h}\n  opus-hour: {limit: 5, unit: USD, per: 1h, models: [claude-opus-4]}\n")
	budget := func() (spent, reserved int64) { return cliBudget(t, g, "evals-day") }
	b := startBridge(t, g)
	for _, names := range [][]any{{"../evil"}, {map[string]any{"name": "a/b/c", "limit": 1, "unit": "USD", "per": "24h"}}} {
		_, e := b.send("acquire", map[string]any{"resources": []string{"s"}, "limit": 1, "budgets": names, "estimate": 0.3})
		if !strings.Contains(string(e), `has '/'; allowed: 1 to 200 of A-Z a-z 0-9 . _ : -`) || !strings.Contains(string(e), `125`) {
			t.Fatalf("acquire with budgets %v: %s; want a failure naming the name and what is allowed", names, e)
		}
	}
	for _, names := range [][]any{{"nope"}, {"evals-day", "nope"}} {
		_, e := b.send("acquire", map[string]any{"resources": []string{"s"}, "limit": 1, "budgets": names, "estimate": 0.3})
		var fail struct {
			Code    int
			Kind    string
			Message string
		}
		if e == nil || json.Unmarshal(e, &fail) != nil || fail.Kind != "failure" || fail.Code != 125 ||
			!strings.Contains(fail.Message, `"nope"`) || !strings.Contains(fail.Message, "evals-day, opus-hour") {
			t.Fatalf("acquire with budgets %v: %s; want a failure naming nope and the configured budgets", names, e)
		}
	}
	if s, r := budget(); s != 0 || r != 0 {
		t.Fatalf("after the refusals: spent %d reserved %d; want nothing", s, r)
	}
	var got struct {
		Lease   string
		Budgets []struct {
			Name, Unit      string
			Reserved, Limit float64
		}
	}
	res := b.call("acquire", map[string]any{"resources": []string{"s"}, "limit": 1, "if_busy": "fail", "budgets": []any{"evals-day"}, "estimate": 0.3})
	if err := json.Unmarshal(res, &got); err != nil || len(got.Budgets) != 1 || got.Budgets[0].Name != "evals-day" ||
		got.Budgets[0].Unit != "USD" || got.Budgets[0].Reserved != 0.3 || got.Budgets[0].Limit != 1 {
		t.Fatalf("acquire by name: %s", res)
	}
	if s, r := budget(); s != 0 || r != 3*governor.MicroUnit/10 {
		t.Fatalf("reserved: spent %d reserved %d; want 0 and 0.3", s, r)
	}
	b.call("settle", map[string]any{"lease": got.Lease, "cost": 0.2})
	if s, r := budget(); s != 2*governor.MicroUnit/10 || r != 0 {
		t.Fatalf("settled: spent %d reserved %d; want 0.2 and 0", s, r)
	}
	// Beyond what is left: refused by the budget, named.
	_, e := b.send("acquire", map[string]any{"resources": []string{"t"}, "limit": 1, "if_busy": "fail", "budgets": []any{"evals-day"}, "estimate": 0.9})
	if !strings.Contains(string(e), "evals-day") {
		t.Fatalf("acquire beyond the limit: %s", e)
	}
}
