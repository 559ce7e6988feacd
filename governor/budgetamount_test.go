package governor_test

import (
	"errors"
	"testing"

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
	for _, u := range []string{"", "US D", "2USD", "$", "_x", "abcdefghijklmnopq"} {
		if err := governor.ValidateBudgetUnit(u); !errors.Is(err, governor.ErrInvalid) {
			t.Errorf("ValidateBudgetUnit(%q) = %v; want ErrInvalid", u, err)
		}
	}
}
