package governor

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/governor-dev/governor/governor/naming"
)

// amountForm says what ParseBudgetAmount takes, for messages.
const amountForm = "a number of units from 0 to 1000000000 with at most 6 decimals, e.g. 40, 12.50 or 0.000003"

// ParseBudgetAmount reads an amount written in units ("40", "12.50",
// "0.000003") as micro-units, exactly (no float rounding). A sign, an
// exponent, more than six decimals or more than MaxBudgetAmount is an
// ErrInvalid naming s.
func ParseBudgetAmount(s string) (int64, error) {
	t := strings.TrimSpace(s)
	whole, frac, dot := strings.Cut(t, ".")
	digits := func(d string) bool {
		for _, c := range d {
			if c < '0' || c > '9' {
				return false
			}
		}
		return true
	}
	if (whole == "" && frac == "") || (dot && frac == "" && whole == "") || !digits(whole) || !digits(frac) ||
		len(frac) > 6 || len(whole) > 10 {
		return 0, invalid("amount %q; allowed: %s", s, amountForm)
	}
	w, _ := strconv.ParseInt("0"+whole, 10, 64)
	f, _ := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	v := w*MicroUnit + f
	if v > MaxBudgetAmount {
		return 0, invalid("amount %q; allowed: %s", s, amountForm)
	}
	return v, nil
}

// FormatBudgetAmount writes v micro-units in units, as
// ParseBudgetAmount reads them: 40, 12.5, 0.000003 (a negative v with
// its sign).
func FormatBudgetAmount(v int64) string {
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	s := strings.TrimRight(fmt.Sprintf("%d.%06d", v/MicroUnit, v%MicroUnit), "0")
	return sign + strings.TrimSuffix(s, ".")
}

// ValidateBudgetUnit checks a budget's unit: a currency code (USD) or
// any cost unit (tokens, credits), 1 to 16 ASCII letters, digits or '_',
// starting with a letter.
func ValidateBudgetUnit(u string) error {
	ok := len(u) >= 1 && len(u) <= 16
	for i, c := range u {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '_')) {
			ok = false
		}
	}
	if !ok {
		return invalid("budget unit %q; allowed: a currency code such as USD or a cost unit such as tokens: 1 to 16 letters, digits or '_', starting with a letter", u)
	}
	if IsAmountExponent(u) {
		return invalid("budget unit %q reads as an exponent after an amount (2%s); allowed: a unit that is not e or E followed by digits only", u, u)
	}
	return nil
}

// IsAmountExponent says whether s, written after an amount, reads as an
// exponent (e3, E-6, e+2): amounts are written in full, never with an
// exponent, and no unit is written so.
func IsAmountExponent(s string) bool {
	if len(s) < 2 || (s[0] != 'e' && s[0] != 'E') {
		return false
	}
	d := strings.TrimLeft(s[1:], "+-")
	if len(d) == 0 || len(s)-len(d) > 2 {
		return false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// budgetNameRule says what ValidateBudgetName allows, for messages.
const budgetNameRule = "1 to 200 of A-Z a-z 0-9 . _ : -"

// ValidateBudgetName checks a budget's name: 1 to naming.MaxNameLen bytes of
// ASCII letters, digits, '.', '_', ':' and '-' (docs/budgets.md). The
// error is an ErrInvalid naming the name and what is allowed.
func ValidateBudgetName(name string) error {
	if name == "" || len(name) > naming.MaxNameLen {
		return invalid("budget name %q; allowed: %s", naming.Truncate(name, 64), budgetNameRule)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return invalid("budget name %q has %q; allowed: %s", name, c, budgetNameRule)
		}
	}
	return nil
}
