package main

import (
	"encoding/json"
	"strings"
	"testing"
)

const defConfig = `providers:
  anthropic: {max_concurrency: 2}
budgets:
  day: {limit: 10, unit: USD, per: 24h, providers: [anthropic]}
`

// TestBudgetDefinitionKept: a budget's definition (unit, window) and
// limit live with its state. A second configuration of the same budget
// with per: 1s, or another unit, is refused (125) naming both
// definitions, reserving nothing; one with limit: 1000 is held to the
// state's 10. 'governor budget NAME --apply' with the per: 1s one makes
// it the state's, an event 'governor events budget:NAME' shows, after
// which the first configuration is the one refused; an apply of another
// limit makes it the one in force. docs/budgets.md, "The definition is
// the state's".
func TestBudgetDefinitionKept(t *testing.T) {
	t.Parallel()
	runTargets(t, defConfig, func(t *testing.T, tg *target) {
		g := tg.governor(t)
		run := func(tg *target) (int, string) {
			code, _, stderr := tg.run(t, "run", "--provider", "anthropic", "--cost", "1", "--", "true")
			return code, stderr
		}
		if code, stderr := run(tg); code != 0 {
			t.Fatalf("run --cost 1: exit %d, %q", code, stderr)
		}
		second, tokens := *tg, *tg
		second.config = writeRunConfig(t, strings.Replace(defConfig, "per: 24h", "per: 1s", 1))
		tokens.config = writeRunConfig(t, strings.Replace(defConfig, "unit: USD", "unit: tokens", 1))
		for _, x := range []struct {
			tg  *target
			def string
		}{{&second, "USD per 1s"}, {&tokens, "tokens per 24h0m0s"}} {
			code, stderr := run(x.tg)
			if code != 125 || !strings.Contains(stderr, `"USD per 24h0m0s"`) || !strings.Contains(stderr, `"`+x.def+`"`) {
				t.Fatalf("run --cost 1 with the budget defined %s: exit %d, %q; want 125 naming both definitions", x.def, code, stderr)
			}
		}
		big := *tg
		big.config = writeRunConfig(t, strings.Replace(defConfig, "limit: 10", "limit: 1000", 1))
		if code, _, stderr := big.run(t, "run", "--provider", "anthropic", "--cost", "20", "--", "true"); code != 73 ||
			!strings.Contains(stderr, "limit 10 USD") {
			t.Fatalf("run --cost 20 with the budget's limit 1000: exit %d, %q; want 73, held to the state's limit 10", code, stderr)
		}
		if st := budgetState(t, g, "day"); st.Spent != 1_000_000 || st.Reserved != 0 || st.Limit != 10_000_000 || st.Def != "USD per 24h0m0s" {
			t.Fatalf("day after the refused runs: %+v", st)
		}
		// Everyone sees the state's, whatever their configuration says.
		var shown struct {
			Budgets []struct {
				Limit      int64  `json:"limit"`
				Definition string `json:"definition"`
			} `json:"budgets"`
		}
		code, out, stderr := big.run(t, "budgets", "--json")
		if err := json.Unmarshal([]byte(out), &shown); code != 0 || err != nil || len(shown.Budgets) != 1 ||
			shown.Budgets[0].Limit != 10_000_000 || shown.Budgets[0].Definition != "USD per 24h0m0s" {
			t.Fatalf("budgets --json with limit 1000 configured: exit %d, %v, %q, %q; want the state's limit and definition", code, err, out, stderr)
		}
		if code, _, stderr := second.run(t, "budget", "day", "--apply"); code != 0 {
			t.Fatalf("budget day --apply: exit %d, %q", code, stderr)
		}
		code, out, stderr = tg.run(t, "events", "budget:day")
		if code != 0 || !strings.Contains(out, "define USD per 1s (was USD per 24h0m0s)") {
			t.Fatalf("events budget:day: exit %d, %q, %q; want the define", code, out, stderr)
		}
		if code, stderr := run(tg); code != 125 || !strings.Contains(stderr, `"USD per 1s"`) {
			t.Fatalf("run --cost 1 with the old definition after --apply: exit %d, %q; want 125", code, stderr)
		}
		if code, stderr := run(&second); code != 0 {
			t.Fatalf("run --cost 1 with the applied definition: exit %d, %q", code, stderr)
		}
		// The window in force ran on, spent kept: 2 of 10.
		if st := budgetState(t, g, "day"); st.Spent != 2_000_000 || st.Def != "USD per 1s" {
			t.Fatalf("day after the apply and a run: %+v", st)
		}
		more := *tg
		more.config = writeRunConfig(t, strings.NewReplacer("per: 24h", "per: 1s", "limit: 10", "limit: 20").Replace(defConfig))
		if code, _, stderr := more.run(t, "budget", "day", "--apply"); code != 0 {
			t.Fatalf("budget day --apply of limit 20: exit %d, %q", code, stderr)
		}
		if st := budgetState(t, g, "day"); st.Limit != 20_000_000 || st.Spent != 2_000_000 {
			t.Fatalf("day after the apply of limit 20: %+v", st)
		}
	})
}
