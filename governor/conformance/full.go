package conformance

import (
	"testing"

	"github.com/governor-dev/governor/governor"
)

// full is a backend with the optional capabilities the rate and budget
// cases check (governor.RateBackend, governor.BudgetBackend).
type full interface {
	governor.Backend
	governor.RateBackend
	governor.BudgetBackend
}

// openFull opens a backend for a case of rates or budgets; a backend
// without them skips the case, as a Governor refuses what needs them.
func (s *suite) openFull(t *testing.T) full {
	t.Helper()
	return asFull(t, s.h.Open(t))
}

// asFull is b with its rates and budgets, or the case skipped.
func asFull(t *testing.T, b governor.Backend) full {
	t.Helper()
	f, ok := b.(full)
	if !ok {
		t.Skipf("backend %T has no rate limits or spend budgets (governor.RateBackend, governor.BudgetBackend): optional capabilities", b)
	}
	return f
}
