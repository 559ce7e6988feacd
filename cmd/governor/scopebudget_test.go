package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/governor-dev/governor/internal/redistest"
)

// scopeConfig has a budget scoped on a provider, one on a model, and
// prices for both.
const scopeConfig = `project: p
providers:
  anthropic: {max_concurrency: 4}
  openai: {max_concurrency: 4}
budgets:
  anthropic-day: {limit: 1, unit: USD, per: 24h, providers: [anthropic]}
  opus-hour: {limit: 5, unit: USD, per: 1h, models: [claude-opus-4]}
prices:
  anthropic: {input: 3, output: 15}
  anthropic/claude-opus-4: {input: 15, output: 75}
`

// cliBudget is what 'governor budgets --json' says of budget name, in
// micro-units.
func cliBudget(t *testing.T, g []string, name string) (spent, reserved int64) {
	t.Helper()
	code, out, errs := cli(t, append(g, "--json", "budgets")...)
	var v struct {
		Budgets []struct {
			Name            string
			Spent, Reserved int64
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
		t.Fatalf("budgets --json: exit %d, %q, %q", code, out, errs)
	}
	for _, b := range v.Budgets {
		if b.Name == name {
			return b.Spent, b.Reserved
		}
	}
	return 0, 0
}

// gateResult is the part of a provider_acquire's result a budget test
// reads.
type gateResult struct {
	Lease   string
	Notes   []string
	Budgets []struct {
		Name     string
		Reserved float64
	}
}

func (r gateResult) names() string {
	var n []string
	for _, b := range r.Budgets {
		n = append(n, b.Name)
	}
	return strings.Join(n, ",")
}

// TestBridgeScopedBudgets: a configured budget whose scope holds a
// client's provider gate call is charged though the client names no
// budget, as 'governor run --provider --cost' charges it: the estimate
// is the client's, else max_tokens priced by the configuration's prices
// (PROVIDER/MODEL, else PROVIDER); a call that does not fit is refused
// naming it; the report's usage settles it at the configured price, a
// cost given (a price in code) wins. A call with no estimate and no
// price charges nothing (run without --cost); a budget both named and in
// scope is reserved once. On the file backend and Redis.
func TestBridgeScopedBudgets(t *testing.T) {
	for _, bk := range []string{"file", "redis"} {
		t.Run(bk, func(t *testing.T) {
			g := []string{"--config", configFile(t, scopeConfig), "--backend", "file", "--dir", filepath.Join(t.TempDir(), "state")}
			if bk == "redis" {
				g = []string{"--config", g[1], "--backend", "redis", "--redis-url", redistest.Start(t).URL()}
			}
			scopedBudgets(t, g)
		})
	}
}

func scopedBudgets(t *testing.T, g []string) {
	b := startBridge(t, g)
	acquire := func(op string, args map[string]any) gateResult {
		t.Helper()
		var r gateResult
		if err := json.Unmarshal(b.call(op, args), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	const micro = 1_000_000
	// Priced from the configuration: 1000 input at 3 and 10000 output at
	// 15 per million tokens, 0.153 USD.
	r := acquire("provider_acquire", map[string]any{"provider": "anthropic", "tokens": 1000, "max_tokens": 10000, "model": "claude-sonnet-4-5"})
	if r.names() != "anthropic-day" || r.Budgets[0].Reserved != 0.153 {
		t.Fatalf("a gate call naming no budget: %+v; want anthropic-day reserved 0.153", r)
	}
	if s, res := cliBudget(t, g, "anthropic-day"); s != 0 || res != 153_000 {
		t.Fatalf("reserved: spent %d reserved %d; want 0 and 0.153", s, res)
	}
	// Settled from the usage at the configured price: 1000 × 3 + 2000 × 15
	// per million, 0.033.
	var rep struct{ Settled bool }
	if err := json.Unmarshal(b.call("provider_report", map[string]any{"lease": r.Lease, "outcome": "ok", "release": true,
		"usage": map[string]any{"input_tokens": 1000, "output_tokens": 2000}}), &rep); err != nil || !rep.Settled {
		t.Fatalf("report with usage: settled %v (%v)", rep.Settled, err)
	}
	if s, res := cliBudget(t, g, "anthropic-day"); s != 33_000 || res != 0 {
		t.Fatalf("settled from usage: spent %d reserved %d; want 0.033 and 0", s, res)
	}
	// A call that does not fit is refused, naming the budget it never named.
	_, e := b.send("provider_acquire", map[string]any{"provider": "anthropic", "if_busy": "fail", "estimate": 0.99})
	var refused struct {
		Code    int
		Message string
		Budget  struct{ Name string }
	}
	if json.Unmarshal(e, &refused) != nil || refused.Code != 73 || refused.Budget.Name != "anthropic-day" ||
		!strings.Contains(refused.Message, "budget anthropic-day exhausted") {
		t.Fatalf("a call beyond the provider's budget: %s; want busy naming anthropic-day", e)
	}
	// Another provider: out of the scope, nothing reserved, said.
	r = acquire("provider_acquire", map[string]any{"provider": "openai", "estimate": 0.99})
	if len(r.Budgets) != 0 || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "no spend budget applies") {
		t.Fatalf("openai: %+v; want no budget, a note", r)
	}
	b.call("release", map[string]any{"lease": r.Lease})
	// The model's price and the model's budget; a cost given wins over the
	// usage (a price in code).
	r = acquire("provider_acquire", map[string]any{"provider": "anthropic", "max_tokens": 1000, "model": "claude-opus-4"})
	if r.names() != "anthropic-day,opus-hour" || r.Budgets[0].Reserved != 0.075 {
		t.Fatalf("opus: %+v; want anthropic-day and opus-hour, 0.075 each", r)
	}
	b.call("provider_report", map[string]any{"lease": r.Lease, "outcome": "ok", "release": true, "cost": 0.01,
		"usage": map[string]any{"input_tokens": 1000, "output_tokens": 1000}})
	if s, _ := cliBudget(t, g, "opus-hour"); s != micro/100 {
		t.Fatalf("opus settled: spent %d; want 0.01 (the cost given)", s)
	}
	// Named and in scope: reserved once. Named alone with no estimate:
	// priced by the configuration.
	r = acquire("provider_acquire", map[string]any{"provider": "anthropic", "budgets": []any{"anthropic-day"}, "max_tokens": 100})
	if r.names() != "anthropic-day" || r.Budgets[0].Reserved != 0.0015 {
		t.Fatalf("named and in scope: %+v; want anthropic-day once, 0.0015", r)
	}
	b.call("release", map[string]any{"lease": r.Lease})
	// No estimate and no price: nothing charged, as run --provider
	// without --cost.
	r = acquire("provider_acquire", map[string]any{"provider": "anthropic"})
	if len(r.Budgets) != 0 || len(r.Notes) != 0 {
		t.Fatalf("no estimate: %+v; want nothing reserved", r)
	}
	b.call("release", map[string]any{"lease": r.Lease})
	// acquire with providers and an estimate: as run --provider --cost.
	r = acquire("acquire", map[string]any{"providers": []string{"anthropic"}, "estimate": 0.2})
	if r.names() != "anthropic-day" || r.Budgets[0].Reserved != 0.2 {
		t.Fatalf("acquire with providers: %+v; want anthropic-day reserved 0.2", r)
	}
	b.call("release", map[string]any{"lease": r.Lease})
	if s, res := cliBudget(t, g, "anthropic-day"); s != 33_000+10_000+1_500+200_000 || res != 0 {
		t.Fatalf("at the end: spent %d reserved %d; want 0.2445 and 0", s, res)
	}
	// Counts whose cost passes int64 are bad input naming them: they
	// wrapped to an estimate of 0 (admitted on an exhausted budget) and
	// to a settle at 0.
	if _, e := b.send("provider_acquire", map[string]any{"provider": "anthropic", "max_tokens": 1229782938247303441}); !strings.Contains(string(e), "1229782938247303441 output tokens") {
		t.Fatalf("max_tokens 1229782938247303441: %s; want bad input naming it", e)
	}
	r = acquire("provider_acquire", map[string]any{"provider": "anthropic", "max_tokens": 1000})
	if _, e := b.send("provider_report", map[string]any{"lease": r.Lease, "outcome": "ok", "usage": map[string]any{"input_tokens": 1 << 62, "output_tokens": 0}}); !strings.Contains(string(e), "the cost of 4611686018427387904 input") {
		t.Fatalf("a usage of 2^62 tokens: %s; want bad input naming it", e)
	}
	b.call("release", map[string]any{"lease": r.Lease}) // unsettled: at its estimate, 0.015
	if s, res := cliBudget(t, g, "anthropic-day"); s != 33_000+10_000+1_500+200_000+15_000 || res != 0 {
		t.Fatalf("after the overflows: spent %d reserved %d; want 0.2595 and 0", s, res)
	}
}
