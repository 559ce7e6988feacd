package config_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
)

const sampleBudgets = `providers:
  anthropic: {max_concurrency: 4}
  openai: {}
budgets:
  evals-day:
    limit: 40
    unit: USD
    calendar: day
    tz: Europe/Paris
    soft: 30
    providers: [anthropic]
    fair_keys: [evals]
  opus-hour: {limit: 5.5, unit: USD, per: 1h, models: [claude-opus-4]}
  fleet-month: {limit: 1000, unit: USD, calendar: month}
prices:
  anthropic: {input: 3, output: 15, cached_input: 0.30}
  anthropic/claude-opus-4: {input: 15, output: 75, per_call: "0.001"}
`

func TestBudgetsConfig(t *testing.T) {
	e := newEnv(t)
	l, _, err := e.loadFile(sampleBudgets)
	if err != nil {
		t.Fatal(err)
	}
	c := l.Config
	b, err := c.SpendBudget("evals-day")
	if err != nil {
		t.Fatal(err)
	}
	if b.Limit != 40*governor.MicroUnit || b.Soft != 30*governor.MicroUnit || b.Unit != "USD" ||
		b.Window.Calendar != "day" || b.Window.Location.String() != "Europe/Paris" {
		t.Errorf("evals-day = %+v", b)
	}
	if b, _ := c.SpendBudget("opus-hour"); b.Limit != 5_500_000 || b.Window.Per != time.Hour {
		t.Errorf("opus-hour = %+v", b)
	}
	if _, err := c.SpendBudget("nope"); !errors.Is(err, governor.ErrInvalid) || !strings.Contains(err.Error(), "configured: evals-day, fleet-month, opus-hour") {
		t.Errorf("SpendBudget(nope) = %v; want ErrInvalid listing the configured budgets", err)
	}
	for _, tt := range []struct {
		s    config.SpendScope
		want []string
	}{
		{config.SpendScope{Providers: []string{"anthropic"}, FairKey: "evals"}, []string{"evals-day", "fleet-month"}},
		{config.SpendScope{Providers: []string{"anthropic"}, FairKey: "other"}, []string{"fleet-month"}},
		{config.SpendScope{Providers: []string{"openai", "anthropic"}, FairKey: "evals", Model: "claude-opus-4"}, []string{"evals-day", "fleet-month", "opus-hour"}},
		{config.SpendScope{}, []string{"fleet-month"}},
	} {
		if got := c.BudgetsFor(tt.s); !slices.Equal(got, tt.want) {
			t.Errorf("BudgetsFor(%+v) = %v, want %v", tt.s, got, tt.want)
		}
	}
	p, ok := c.PriceFor("anthropic", "claude-opus-4")
	if !ok || p != (governor.Price{Input: 15_000_000, Output: 75_000_000, PerCall: 1000}) {
		t.Errorf("PriceFor(anthropic, claude-opus-4) = %+v, %v", p, ok)
	}
	if p, ok := c.PriceFor("anthropic", "claude-haiku"); !ok || p.CachedInput != 300_000 {
		t.Errorf("PriceFor(anthropic, claude-haiku) = %+v, %v; want the provider's", p, ok)
	}
	if _, ok := c.PriceFor("openai", ""); ok {
		t.Error("PriceFor(openai) found a price none configures")
	}
	var shown []string
	for _, en := range l.Show() {
		if strings.HasPrefix(en.Key, "budgets.opus-hour.") || strings.HasPrefix(en.Key, "prices.anthropic/") {
			shown = append(shown, en.Key+"="+en.Value)
		}
	}
	want := []string{"budgets.opus-hour.limit=5.5", "budgets.opus-hour.models=claude-opus-4", "budgets.opus-hour.per=1h0m0s",
		"budgets.opus-hour.unit=USD", "prices.anthropic/claude-opus-4.input=15", "prices.anthropic/claude-opus-4.output=75",
		"prices.anthropic/claude-opus-4.per_call=0.001"}
	if !slices.Equal(shown, want) {
		t.Errorf("Show() =\n%v\nwant\n%v", shown, want)
	}
}

func TestBudgetsConfigEnv(t *testing.T) {
	e := newEnv(t)
	e.write(config.DefaultFileName, sampleBudgets)
	l, err := e.load(config.LoadOptions{Env: []string{"GOVERNOR_BUDGETS_EVALS_DAY_LIMIT=35.25"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Config.Budgets["evals-day"].Limit; got != 35_250_000 || l.Sources["budgets.evals-day.limit"] != config.SourceEnv {
		t.Errorf("limit = %v from %v; want 35.25 from env", got, l.Sources["budgets.evals-day.limit"])
	}
	_, err = e.load(config.LoadOptions{Env: []string{"GOVERNOR_BUDGETS_EVALS_DAY_LIMIT=-1"}})
	if err == nil || !strings.Contains(err.Error(), `env GOVERNOR_BUDGETS_EVALS_DAY_LIMIT: budgets.evals-day.limit: amount "-1"; allowed:`) {
		t.Errorf("a negative limit from env: %v", err)
	}
}

func TestBudgetsConfigErrors(t *testing.T) {
	const head = "providers:\n  anthropic: {}\nbudgets:\n"
	amount := "allowed: a number of units from 0 to 1000000000 with at most 6 decimals, e.g. 40, 12.50 or 0.000003"
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"negative limit", head + "  a: {limit: -3, unit: USD, per: 1h}\n", []string{`F:4: budgets.a.limit: amount "-3"; ` + amount}},
		{"too many decimals", head + "  a: {limit: 0.0000001, unit: USD, per: 1h}\n", []string{`F:4: budgets.a.limit: amount "0.0000001"; ` + amount}},
		{"limit missing", head + "  a: {unit: USD, per: 1h}\n", []string{"F:4: budgets.a.limit: missing; a budget needs a limit: an amount in its unit, e.g. 40 or 12.50"}},
		{"bad unit", head + "  a: {limit: 1, unit: 'US D', per: 1h}\n",
			[]string{`F:4: budgets.a.unit: budget unit "US D"; allowed: a currency code such as USD or a cost unit such as tokens: 1 to 16 letters, digits or '_', starting with a letter`}},
		{"unit missing", head + "  a: {limit: 1, per: 1h}\n",
			[]string{"F:4: budgets.a.unit: missing; a budget needs a unit: a currency code such as USD or a cost unit such as tokens"}},
		{"no window", head + "  a: {limit: 1, unit: USD}\n",
			[]string{"F:4: budgets.a.per: a budget needs a window: per (a duration such as 1h or 24h) or calendar (day or month, in tz)"}},
		{"per too long", head + "  a: {limit: 1, unit: USD, per: 10000h}\n",
			[]string{"F:4: budgets.a.per: budget window per 10000h0m0s; allowed: 1s to 8784h0m0s"}},
		{"both windows", head + "  a: {limit: 1, unit: USD, per: 1h, calendar: day}\n",
			[]string{`F:4: budgets.a.calendar: budget window per 1h0m0s and calendar "day"; allowed: one of them`}},
		{"bad calendar", head + "  a: {limit: 1, unit: USD, calendar: week}\n",
			[]string{`F:4: budgets.a.calendar: budget window calendar "week"; allowed: day, month`}},
		{"bad tz", head + "  a: {limit: 1, unit: USD, calendar: day, tz: Mars/Olympus}\n",
			[]string{`F:4: budgets.a.tz: tz "Mars/Olympus" is not an IANA time zone; allowed: a name such as UTC, Europe/Paris or America/New_York`}},
		{"local tz", head + "  a: {limit: 1, unit: USD, calendar: day, tz: Local}\n",
			[]string{`F:4: budgets.a.tz: tz "Local" is not an IANA time zone; allowed: a name such as UTC, Europe/Paris or America/New_York`}},
		{"tz without calendar", head + "  a: {limit: 1, unit: USD, per: 1h, tz: UTC}\n",
			[]string{`F:4: budgets.a.tz: tz "UTC" without calendar; allowed: tz with calendar day or month (a per window is aligned on UTC)`}},
		{"name with a slash", head + "  ../evil: {limit: 1, unit: USD, per: 1h}\n  a/b/c: {limit: 1, unit: USD, per: 1h}\n",
			[]string{`F:4: budgets.../evil: budget name "../evil" has '/'; allowed: 1 to 200 of A-Z a-z 0-9 . _ : -`,
				`F:5: budgets.a/b/c: budget name "a/b/c" has '/'; allowed: 1 to 200 of A-Z a-z 0-9 . _ : -`}},
		{"soft above limit", head + "  a: {limit: 1, soft: 2, unit: USD, per: 1h}\n",
			[]string{"F:4: budgets.a.soft: 2 is above the limit 1; allowed: 0 (none) to the limit"}},
		{"unknown provider", head + "  a: {limit: 1, unit: USD, per: 1h, providers: [antropic]}\n",
			[]string{`F:4: budgets.a.providers[0]: "antropic" is not a configured provider; configured: anthropic (declare it under providers, even as 'NAME: {}')`}},
		{"unknown key", head + "  a: {limit: 1, unit: USD, per: 1h, team: evals}\n",
			[]string{"F:4: budgets.a.team: unknown key (allowed under budgets.a: calendar, fair_keys, limit, models, per, providers, sessions, soft, tz, unit)"}},
		{"price of an unknown provider", "providers:\n  anthropic: {}\nprices:\n  openai: {input: 1}\n",
			[]string{`F:4: prices.openai: "openai" is not a configured provider; configured: anthropic (declare it under providers, even as 'NAME: {}')`}},
		{"empty price", "providers:\n  anthropic: {}\nprices:\n  anthropic/x: {}\n",
			[]string{"F:4: prices.anthropic/x: no price set; allowed keys: input, output, cached_input (per million tokens), per_call"}},
		{"bad price", "providers:\n  anthropic: {}\nprices:\n  anthropic: {input: 1e3}\n",
			[]string{`F:4: prices.anthropic.input: amount "1e3"; ` + amount}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			_, file, err := e.loadFile(tt.yaml)
			if err == nil || !errors.Is(err, config.ErrInvalid) {
				t.Fatalf("err = %v; want ErrInvalid", err)
			}
			if got := errLines(err, file); !slices.Equal(got, tt.want) {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
