package governor_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
)

func TestParseBudgetAmount(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64 // -1: invalid
	}{
		{"40", 40_000_000}, {"12.50", 12_500_000}, {"0.000003", 3}, {".5", 500_000}, {"5.", 5_000_000},
		{" 7 ", 7_000_000}, {"0", 0}, {"1000000000", governor.MaxBudgetAmount},
		{"", -1}, {".", -1}, {"-1", -1}, {"+1", -1}, {"1e3", -1}, {"0.0000001", -1}, {"1000000000.000001", -1},
		{"NaN", -1}, {"1,5", -1}, {"10000000000", -1},
	} {
		got, err := governor.ParseBudgetAmount(tt.in)
		switch {
		case tt.want < 0 && !errors.Is(err, governor.ErrInvalid):
			t.Errorf("ParseBudgetAmount(%q) = %d, %v; want ErrInvalid", tt.in, got, err)
		case tt.want >= 0 && (err != nil || got != tt.want):
			t.Errorf("ParseBudgetAmount(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestValidateBudgetUnit(t *testing.T) {
	for _, u := range []string{"USD", "tokens", "eur_cents", "credits2"} {
		if err := governor.ValidateBudgetUnit(u); err != nil {
			t.Errorf("ValidateBudgetUnit(%q) = %v", u, err)
		}
	}
	for _, u := range []string{"", "US D", "2USD", "$", "_x", "abcdefghijklmnopq", "e3", "E10"} {
		if err := governor.ValidateBudgetUnit(u); !errors.Is(err, governor.ErrInvalid) {
			t.Errorf("ValidateBudgetUnit(%q) = %v; want ErrInvalid", u, err)
		}
	}
}

// A budget's name is what docs/budgets.md says, in every way in: the
// library's budget, a reservation, a settle, an admin action.
func TestValidateBudgetName(t *testing.T) {
	for _, n := range []string{"evals-day", "a.b_c:d-e", "X9", strings.Repeat("n", 200)} {
		if err := governor.ValidateBudgetName(n); err != nil {
			t.Errorf("ValidateBudgetName(%q) = %v", n, err)
		}
	}
	day := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	for _, n := range []string{"../evil", "a/b/c", "", "a b", "é", "a{b}", strings.Repeat("n", 201)} {
		err := governor.ValidateBudgetName(n)
		if !errors.Is(err, governor.ErrInvalid) || !strings.Contains(err.Error(), "allowed: 1 to 200 of A-Z a-z 0-9 . _ : -") {
			t.Errorf("ValidateBudgetName(%q) = %v; want ErrInvalid saying what is allowed", n, err)
		}
		b := governor.SpendBudget{Name: n, Limit: 1, Window: governor.BudgetWindow{Per: time.Hour}}
		req := governor.BudgetRequest{Project: "p", Lease: "l", Secret: "s", Charges: []governor.BudgetCharge{{Name: n, Limit: 1, Start: day, End: day.Add(time.Hour)}}}
		for what, err := range map[string]error{
			"SpendBudget.Validate":  b.Validate(),
			"ValidateBudgetRequest": governor.ValidateBudgetRequest(req),
			"ValidateBudgetSettle":  governor.ValidateBudgetSettle("p", "l", []governor.BudgetAmount{{Name: n}}),
			"ValidateBudgetAdmin":   governor.ValidateBudgetAdmin("p", n, governor.BudgetPause, 0),
		} {
			if n != "" && !errors.Is(err, governor.ErrInvalid) || n != "" && !strings.Contains(err.Error(), "budget name") {
				t.Errorf("%s of %q: %v; want ErrInvalid naming the budget name", what, n, err)
			}
		}
	}
}

func TestFormatBudgetAmount(t *testing.T) {
	for _, tt := range []struct {
		in   int64
		want string
	}{
		{40_000_000, "40"}, {12_500_000, "12.5"}, {3, "0.000003"}, {0, "0"}, {-700_000, "-0.7"},
		{governor.MaxBudgetAmount, "1000000000"},
	} {
		if got := governor.FormatBudgetAmount(tt.in); got != tt.want {
			t.Errorf("FormatBudgetAmount(%d) = %q; want %q", tt.in, got, tt.want)
		}
		if tt.in >= 0 {
			if back, err := governor.ParseBudgetAmount(tt.want); err != nil || back != tt.in {
				t.Errorf("ParseBudgetAmount(FormatBudgetAmount(%d)) = %d, %v", tt.in, back, err)
			}
		}
	}
}

// A refusal tells the amounts in the budget's unit: the message the
// CLI, the bridge and the library print alike.
func TestBudgetBusyErrorInUnits(t *testing.T) {
	now := time.Date(2026, 12, 5, 4, 0, 0, 0, time.UTC)
	st := governor.BudgetState{Name: "evals-day", Spent: 39_700_000, Limit: 40_000_000, End: now.Add(19*time.Hour + 58*time.Minute)}
	for _, tt := range []struct {
		err  governor.BudgetBusyError
		want string
	}{
		{governor.BudgetBusyError{Budget: st, Reason: "exhausted", Unit: "USD", Estimate: 500_000, Now: now},
			"governor: budget evals-day exhausted: spent 39.7 USD, reserved 0 USD, limit 40 USD, this call 0.5 USD; resets at 2026-12-05T23:58:00Z (in 19h58m0s)"},
		{governor.BudgetBusyError{Budget: st, Reason: "exhausted", Estimate: 500_000, Now: now},
			"governor: budget evals-day exhausted: spent 39.7, reserved 0, limit 40, this call 0.5; resets at 2026-12-05T23:58:00Z (in 19h58m0s)"},
	} {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
		if !errors.Is(&tt.err, governor.ErrBusy) {
			t.Errorf("%v is not ErrBusy", &tt.err)
		}
	}
	paused := st
	paused.Paused = "ops\x1b[31m"
	e := &governor.BudgetBusyError{Budget: paused, Reason: "paused", Unit: "USD", Now: now}
	if got := e.Error(); !strings.HasSuffix(got, "; paused by ops\\x1b[31m") {
		t.Errorf("paused: %s", got)
	}
}
