package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/leasetest"
	"github.com/governor-dev/governor/internal/proctest"
	"github.com/governor-dev/governor/internal/statuspage"
)

// spendConfig configures spend budgets for the run tests: team-day
// ($2 a calendar day in Paris, anthropic calls of fair key evals),
// fleet-hour ($100 an hour, every call with a cost), tokens-day (a
// budget in another unit, for model tok-model) and anthropic's price.
const spendConfig = `providers:
  anthropic: {max_concurrency: 2, fair: true}
  openai: {requests_per_minute: 6000}
budgets:
  team-day: {limit: 2, unit: USD, calendar: day, tz: Europe/Paris, providers: [anthropic], fair_keys: [evals]}
  fleet-hour: {limit: 100, unit: USD, per: 1h}
  tokens-day: {limit: 1000000, unit: tokens, per: 24h, models: [tok-model]}
prices:
  anthropic: {input: 3, output: 15}
`

// budgetState reads budget name as tg's backend keeps it (zero when it
// has no state).
func budgetState(t *testing.T, g *governor.Governor, name string) governor.BudgetState {
	t.Helper()
	sts, _, err := g.Budgets(context.Background(), []string{name})
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) == 0 {
		return governor.BudgetState{}
	}
	return sts[0]
}

// settleLine is a shell command that runs 'governor settle' with tg's
// global flags and args.
func (tg *target) settleLine(args ...string) string {
	return strings.Join(append(append([]string{tg.bin}, tg.global()...), append([]string{"settle"}, args...)...), " ")
}

// TestRunCost: 'governor run --cost' reserves on every budget whose scope
// holds the run, all or none, once the slot is held; the command settles
// its actual with 'governor settle' (a second settle changes nothing),
// else the run settles the estimate; a cost that does not fit fails 73
// naming the budget, spent, reserved, limit and reset, skips 75, or
// waits up to --wait-timeout, leaving nothing reserved or held.
func TestRunCost(t *testing.T) {
	t.Parallel()
	runTargets(t, spendConfig, func(t *testing.T, tg *target) {
		g := tg.governor(t)
		call := []string{"run", "--provider", "anthropic", "--fair-key", "evals"}
		code, out, stderr := tg.run(t, append(call, "--cost", "0.50", "--",
			"sh", "-c", `echo "$GOVERNOR_SPEND"; `+tg.settleLine("--cost", "0.2USD")+"; "+tg.settleLine("--cost", "0.3"))...)
		if code != 0 || !strings.Contains(out, " fleet-hour team-day\n") || !strings.Contains(out, "settled ") ||
			!strings.Contains(out, "nothing to settle") {
			t.Fatalf("run --cost 0.50 settling 0.2: exit %d, %q, %q", code, out, stderr)
		}
		for _, name := range []string{"team-day", "fleet-hour"} {
			if st := budgetState(t, g, name); st.Spent != 200_000 || st.Reserved != 0 || st.Open != 0 {
				t.Fatalf("%s after a settle of 0.2: %+v", name, st)
			}
		}
		if st := budgetState(t, g, "tokens-day"); !st.Born.IsZero() {
			t.Fatalf("tokens-day, whose scope the run is out of, was charged: %+v", st)
		}
		if code, _, stderr := tg.run(t, append(call, "--cost", "0.5", "--", "true")...); code != 0 {
			t.Fatalf("run --cost 0.5: exit %d, %q", code, stderr)
		}
		if st := budgetState(t, g, "team-day"); st.Spent != 700_000 || st.Reserved != 0 {
			t.Fatalf("team-day after a run settled at its estimate: %+v", st)
		}
		want := "budget team-day exhausted: spent 0.7 USD, reserved 0 USD, limit 2 USD, this call 1.5 USD; resets at "
		code, _, stderr = tg.run(t, append(call, "--cost", "1.5", "--", "true")...)
		if code != 73 || !strings.Contains(stderr, want) {
			t.Fatalf("run --cost 1.5 over the limit: exit %d, %q; want 73 with %q", code, stderr, want)
		}
		code, _, stderr = tg.run(t, append(call, "--if-busy", "skip", "--cost", "1.5", "--", "true")...)
		if code != 75 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "skipped (--if-busy skip)") {
			t.Fatalf("run --if-busy skip over the limit: exit %d, %q", code, stderr)
		}
		// 1000 input tokens at $3/M and 100000 output at $15/M: $1.503.
		code, _, stderr = tg.run(t, append(call, "--max-tokens", "100000", "--input-tokens", "1000", "--", "true")...)
		if code != 73 || !strings.Contains(stderr, "this call 1.503 USD") {
			t.Fatalf("run --max-tokens over the limit: exit %d, %q", code, stderr)
		}
		code, _, stderr = tg.run(t, append(call, "--wait-timeout", "300ms", "--cost", "1.5", "--", "true")...)
		if code != 73 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "; not reserved within --wait-timeout 300ms") {
			t.Fatalf("run --wait-timeout over the limit: exit %d, %q", code, stderr)
		}
		// All or none: the refusals charged fleet-hour nothing, and the
		// slot is free.
		if st := budgetState(t, g, "fleet-hour"); st.Spent != 700_000 || st.Reserved != 0 || st.Open != 0 {
			t.Fatalf("fleet-hour after refusals on team-day: %+v", st)
		}
		if st := tg.status(t, g, "provider:anthropic"); st.Used != 0 {
			t.Fatalf("provider:anthropic after refusals: %d in use", st.Used)
		}
		// A library reservation settled from the shell, by name.
		day := governor.SpendBudget{Name: "lib-day", Limit: 10 * governor.MicroUnit, Window: governor.BudgetWindow{Per: 24 * time.Hour}}
		lib, err := leasetest.Reserve(context.Background(), g, []governor.BudgetSpend{{Budget: day, Amount: governor.MicroUnit}},
			governor.BudgetOptions{Lease: "lib-lease"})
		if err != nil {
			t.Fatal(err)
		}
		code, out, stderr = tg.run(t, "settle", "--lease", lib.SpendKey(), "--budget", "lib-day", "--cost", "1.25")
		if code != 0 || !strings.Contains(out, "overrun on lib-day") {
			t.Fatalf("settle --lease above the estimate: exit %d, %q, %q", code, out, stderr)
		}
		if st := budgetState(t, g, "lib-day"); st.Spent != 1_250_000 || st.Overruns != 1 {
			t.Fatalf("lib-day after an overrun: %+v", st)
		}
	})
}

// TestRunCostWaits: a run whose cost does not fit waits, holding its
// slot, until another run settles below its estimate.
func TestRunCostWaits(t *testing.T) {
	tg := fileTarget(t, spendConfig)
	g := tg.governor(t)
	gate := filepath.Join(t.TempDir(), "gate")
	first := tg.command("run", "--provider", "anthropic", "--fair-key", "evals", "--cost", "1.5", "--",
		"sh", "-c", "while [ ! -e "+gate+" ]; do sleep 0.05; done; "+tg.settleLine("--cost", "0.1"))
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the first run's reservation", func() bool { return budgetState(t, g, "team-day").Reserved == 1_500_000 })
	second := tg.command("run", "--provider", "anthropic", "--fair-key", "evals", "--cost", "0.6", "--if-busy", "wait", "--", "true")
	done := make(chan int, 1)
	go func() { code, _, _ := execCode(t, second); done <- code }()
	eventually(t, 20*time.Second, "the second run holding its slot while it waits", func() bool {
		return tg.status(t, g, "provider:anthropic").Used == 2
	})
	select {
	case code := <-done:
		t.Fatalf("the second run ended (exit %d) before the first settled", code)
	default:
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := first.Wait(); err != nil {
		t.Fatalf("first run: %v", err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("second run: exit %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the second run still waits after the first settled below its estimate")
	}
	if st := budgetState(t, g, "team-day"); st.Spent != 700_000 || st.Reserved != 0 {
		t.Fatalf("team-day after 0.1 and 0.6: %+v", st)
	}
}

// TestRunCostBadValues: bad spend flags exit 125 naming the value and
// what is allowed, before anything is held or reserved.
func TestRunCostBadValues(t *testing.T) {
	t.Parallel()
	tg := fileTarget(t, spendConfig)
	g := tg.governor(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--provider", "anthropic", "--cost", "-1"}, `cost "-1"; allowed: an amount in units, 0 or more`},
		{[]string{"--provider", "anthropic", "--cost", "lots"}, `cost "lots"; allowed:`},
		{[]string{"--provider", "anthropic", "--cost", ""}, `empty cost; allowed: an amount in units`},
		{[]string{"--provider", "anthropic", "--cost", "2e3"}, `cost "2e3" has an exponent (e3); allowed:`},
		{[]string{"--provider", "anthropic", "--cost", "2E-1USD"}, `cost "2E-1USD"; allowed:`},
		{[]string{"--provider", "anthropic", "--cost", "1EUR"}, "cost 1EUR is in EUR; the budgets that apply (fleet-hour) are in USD"},
		{[]string{"--provider", "anthropic", "--cost", "1", "--budget", "../evil"}, `budget name "../evil" has '/'; allowed: 1 to 200 of A-Z a-z 0-9 . _ : -`},
		{[]string{"--provider", "anthropic", "--cost", "1", "--budget", "nope"}, `budget "nope" is not configured; configured: fleet-hour, team-day, tokens-day`},
		{[]string{"--provider", "anthropic", "--cost", "1", "--model", "tok-model"}, "budgets fleet-hour (USD) and tokens-day (tokens) both apply to this call"},
		{[]string{"--provider", "anthropic", "--cost", "1", "--max-tokens", "10"}, "allowed: one of --cost (an estimate given) or --max-tokens"},
		{[]string{"--provider", "openai", "--max-tokens", "10"}, `no price for provider "openai" model ""; configure prices.openai`},
		{[]string{"--provider", "anthropic", "--max-tokens", "-5"}, "--max-tokens -5, --input-tokens 0; allowed: 0 or more"},
		// 1229782938247303441 × $15 per million wrapped int64 to an estimate of 0.
		{[]string{"--provider", "anthropic", "--max-tokens", "1229782938247303441"}, "the cost of 0 input, 0 cached input and 1229782938247303441 output tokens"},
		{[]string{"--provider", "anthropic", "--input-tokens", "5"}, "--input-tokens, --model or --budget without a cost"},
		{[]string{"--provider", "anthropic", "--model", "claude-opus-4"}, "--input-tokens, --model or --budget without a cost"},
	} {
		code, _, stderr := tg.run(t, append(append([]string{"run"}, tt.args...), "--", "true")...)
		if code != 125 || !strings.Contains(stderr, tt.want) {
			t.Errorf("run %v: exit %d, %q; want 125 with %q", tt.args, code, stderr, tt.want)
		}
		if tt.args[0] == "--provider" && tt.args[1] == "anthropic" && len(tt.args) == 4 {
			code, _, stderr := tg.run(t, append([]string{"acquire", "provider:anthropic"}, tt.args[2:]...)...)
			if code != 125 || !strings.Contains(stderr, tt.want) {
				t.Errorf("acquire %v: exit %d, %q; want 125 with %q", tt.args[2:], code, stderr, tt.want)
			}
		}
	}
	settle := func(env []string, args ...string) (int, string) {
		c := tg.command(append([]string{"settle"}, args...)...)
		c.Env = append(c.Env, env...)
		code, _, stderr := execCode(t, c)
		return code, stderr
	}
	for _, tt := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"--cost", "1"}, "no reservation to settle: neither $GOVERNOR_SPEND"},
		{[]string{"GOVERNOR_SPEND=x team-day"}, []string{"--cost", "-1"}, `cost "-1"; allowed:`},
		{[]string{"GOVERNOR_SPEND=x team-day"}, []string{}, "--cost missing"},
		{[]string{"GOVERNOR_SPEND=x.s team-day"}, []string{"--cost", "1EUR"}, "cost in EUR; budget team-day is in USD"},
		{[]string{"GOVERNOR_SPEND=x team-day"}, []string{"--cost", ""}, "empty cost"},
		{[]string{"GOVERNOR_SPEND=x team-day"}, []string{"--cost", "2e3"}, `cost "2e3" has an exponent`},
		{nil, []string{"--cost", "0.3EUR", "--lease", "x.s"}, "cost in EUR; budget fleet-hour is in USD"},
		{nil, []string{"--cost", "0.3EUR", "--lease", "x.s", "--budget", "inline-day"}, "cost in EUR; budget inline-day is not configured: its unit cannot be checked"},
		// A reservation's id alone proves nothing: its secret is needed.
		{[]string{"GOVERNOR_SPEND=x team-day"}, []string{"--cost", "1"}, `spend reservation "x" has no secret; allowed: RESERVATION.SECRET`},
		{nil, []string{"--cost", "1", "--lease", "x"}, `spend reservation "x" has no secret`},
		{[]string{"GOVERNOR_LEASE=provider:anthropic@" + strings.Repeat("a", 40)}, []string{"--cost", "1"}, "without its secret; allowed: its handle RESOURCE@LEASE_ID.SECRET"},
		{nil, []string{"--cost", "1", "--budget", "team-day"}, "--budget without --lease"},
		{[]string{"GOVERNOR_LEASE=no-handle"}, []string{"--cost", "1"}, "no-handle"},
		{nil, []string{"--cost", "1", "--lease", "x.s", "--budget", "a b"}, "budget name"},
		{nil, []string{"--cost", "1", "--lease", "x.s", "--budget", "a/b/c"}, `budget name "a/b/c" has '/'; allowed: 1 to 200 of A-Z a-z 0-9 . _ : -`},
	} {
		if code, stderr := settle(tt.env, tt.args...); code != 125 || !strings.Contains(stderr, tt.want) {
			t.Errorf("settle %v %v: exit %d, %q; want 125 with %q", tt.env, tt.args, code, stderr, tt.want)
		}
	}
	sts, _, err := g.Budgets(context.Background(), nil)
	if err != nil || len(sts) != 0 {
		t.Fatalf("budgets after bad values only: %+v, %v; want none with state", sts, err)
	}
	if st := tg.status(t, g, "provider:anthropic"); st.Used != 0 {
		t.Fatalf("provider:anthropic after bad values: %d in use", st.Used)
	}
}

// TestBudgetsViewConfigured: 'governor budgets' lists the configured
// budgets before anything is spent, in their unit, and after a spend
// its burn rate (spent over the window so far, per hour) and, as JSON,
// the unit, window and burn rate.
func TestBudgetsViewConfigured(t *testing.T) {
	tg := fileTarget(t, spendConfig)
	code, out, stderr := tg.run(t, "budgets")
	if code != 0 || !strings.Contains(out, "BURN/H") || !strings.Contains(out, "fleet-hour") ||
		!strings.Contains(out, "0 USD") || !strings.Contains(out, "1000000 tokens") {
		t.Fatalf("budgets before any spend: exit %d, %q, %q", code, out, stderr)
	}
	if code, _, stderr := tg.run(t, "run", "--provider", "anthropic", "--fair-key", "evals", "--cost", "1.5", "--", "true"); code != 0 {
		t.Fatalf("run --cost 1.5: exit %d, %q", code, stderr)
	}
	code, out, stderr = tg.run(t, "--json", "budgets", "team-day")
	var v struct {
		Budgets []struct {
			Name, Unit, Window string
			Configured         bool
			Spent              int64
			Burn               int64      `json:"burn_rate_per_hour"`
			Exhausts           *time.Time `json:"exhausts_at"`
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || len(v.Budgets) != 1 {
		t.Fatalf("budgets --json team-day: exit %d, %q, %q", code, out, stderr)
	}
	b := v.Budgets[0]
	if b.Name != "team-day" || b.Unit != "USD" || b.Window != "calendar day in Europe/Paris" || !b.Configured || b.Spent != 1_500_000 || b.Burn < 1_500_000/25 {
		t.Errorf("team-day as JSON: %+v", b)
	}
}

// TestRunCostConcurrent: 8 runs at once (room for all 8 in their
// resource), each $0.50 on team-day ($2, by --budget) and fleet-hour
// ($100, every call): exactly 4 run, 4 are refused (73), and both
// budgets end at $2: never over the limit, never one charged without
// the other.
func TestRunCostConcurrent(t *testing.T) {
	t.Parallel()
	runTargets(t, spendConfig, func(t *testing.T, tg *target) {
		g := tg.governor(t)
		codes := make(chan int, 8)
		for range 8 {
			go func() {
				code, _, _ := execCode(t, tg.command("run", "--resource", "bulk", "--limit", "8", "--budget", "team-day", "--cost", "0.5", "--", "true"))
				codes <- code
			}()
		}
		count := map[int]int{}
		for range 8 {
			count[<-codes]++
		}
		if count[0] != 4 || count[73] != 4 {
			t.Fatalf("exit codes %v; want 4 runs (0) and 4 refusals (73)", count)
		}
		for _, name := range []string{"team-day", "fleet-hour"} {
			if st := budgetState(t, g, name); st.Spent != 2*governor.MicroUnit || st.Reserved != 0 || st.Open != 0 {
				t.Errorf("%s after 4 runs of 0.5: %+v", name, st)
			}
		}
	})
}

// TestBudgetAdminConfiguredUnused: an operator acts on a configured
// budget nothing has used yet (it exists by configuration): paused, it
// refuses the first run; a name neither configured nor with state is
// refused, naming it and the configured budgets, making nothing.
func TestBudgetAdminConfiguredUnused(t *testing.T) {
	tg := fileTarget(t, spendConfig)
	for _, args := range [][]string{{"--pause"}, {"--limit", "3"}} {
		if code, out, stderr := tg.run(t, append([]string{"budget", "team-day"}, args...)...); code != 0 || !strings.Contains(out, "team-day") {
			t.Fatalf("budget team-day %v before any use: exit %d, %q, %q", args, code, out, stderr)
		}
	}
	code, _, stderr := tg.run(t, "run", "--provider", "anthropic", "--fair-key", "evals", "--cost", "0.5", "--", "true")
	if code != 73 || !strings.Contains(stderr, "budget team-day paused") {
		t.Fatalf("run on the paused budget: exit %d, %q; want 73, paused", code, stderr)
	}
	code, _, stderr = tg.run(t, "budget", "team-dya", "--pause")
	if code != 125 || !strings.Contains(stderr, `"team-dya" is neither configured nor with state; configured: [fleet-hour, team-day, tokens-day]`) {
		t.Fatalf("budget team-dya --pause: exit %d, %q; want 125 naming it", code, stderr)
	}
	g := tg.governor(t)
	if st := budgetState(t, g, "team-dya"); st.Name != "" {
		t.Fatalf("the typo has state: %+v", st)
	}
	// The budget events are listed with the resources' (CLI, JSON, API).
	if code, out, stderr := tg.run(t, "events"); code != 0 || !strings.Contains(out, "budget:team-day") || !strings.Contains(out, "admin") ||
		!strings.Contains(out, "pause; by ") || !strings.Contains(out, "limit 3000000") {
		t.Fatalf("events: exit %d, %q, %q; want the budget's admin actions", code, out, stderr)
	}
	code, out, stderr := tg.run(t, "--json", "events", "budget:team-day")
	var rows []struct{ Resource, Kind, Detail, By string }
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil || len(rows) < 2 || rows[0].Resource != "budget:team-day" ||
		rows[0].Kind != "admin" || rows[0].Detail != "pause" || rows[0].By == "" {
		t.Fatalf("events --json budget:team-day: exit %d, %q, %q", code, out, stderr)
	}
	mux := http.NewServeMux()
	statuspage.NewPage(g, statuspage.PageOptions{Timeout: 5 * time.Second}).Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	if code, page := proctest.Get(t, srv.URL+"/api/v1/events?resource=budget:team-day"); code != 200 || !strings.Contains(page, `"budget:team-day"`) {
		t.Fatalf("/api/v1/events: %d %q", code, page)
	}
}

// TestBudgetsReadNow: 'governor budgets' shows what holds now: a
// reservation past its TTL counts at its estimate at once, with no
// write in between.
func TestBudgetsReadNow(t *testing.T) {
	tg := fileTarget(t, spendConfig)
	g := tg.governor(t)
	ctx := context.Background()
	hour := governor.SpendBudget{Name: "fleet-hour", Limit: 100 * governor.MicroUnit, Window: governor.BudgetWindow{Per: time.Hour}}
	if _, err := leasetest.Reserve(ctx, g, []governor.BudgetSpend{{Budget: hour, Amount: 5 * governor.MicroUnit}},
		governor.BudgetOptions{TTL: 300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond) // past the reservation's TTL: nothing is written after it
	code, out, stderr := tg.run(t, "--json", "budgets", "fleet-hour")
	var v struct {
		Budgets []struct {
			Spent, Reserved, Open int64
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || len(v.Budgets) != 1 ||
		v.Budgets[0].Spent != 5*governor.MicroUnit || v.Budgets[0].Reserved != 0 || v.Budgets[0].Open != 0 {
		t.Fatalf("budgets past the TTL: exit %d, %q, %q; want 5 spent, nothing reserved or open", code, out, stderr)
	}
}
