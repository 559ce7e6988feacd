package governor_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/filebackend"
)

// slotsOnly is a backend with the required contract alone: its method
// set is governor.Backend's, so none of the optional capabilities is
// found on it.
type slotsOnly struct{ governor.Backend }

// TestOptionalCapabilities: a backend without rate limits or spend
// budgets still grants slots; what needs a capability it lacks is
// ErrInvalid naming it, never a panic, and its listings are empty.
func TestOptionalCapabilities(t *testing.T) {
	fb, err := filebackend.New(t.TempDir(), filebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b governor.Backend = slotsOnly{fb}
	if _, ok := b.(governor.RateBackend); ok {
		t.Fatal("slotsOnly has rates: the test would prove nothing")
	}
	g, err := governor.New(b, governor.Options{Project: "p"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx := context.Background()

	h, err := g.Hold(ctx, governor.Ask{Wants: []governor.Want{{Resource: "r", AcquireOptions: governor.AcquireOptions{Limit: 2}}}})
	if err != nil {
		t.Fatalf("a slot on a backend with the required part only: %v", err)
	}
	if lost, failed := h.ReleaseWith(nil); len(lost)+len(failed) > 0 {
		t.Fatal(lost, failed)
	}

	rate := governor.RateRequest{Key: governor.Key{Resource: governor.ProviderResource("x")},
		Requests: governor.RateLimit{Rate: 10, Period: time.Second}, NRequests: 1}
	day := governor.SpendBudget{Name: "day", Limit: governor.MicroUnit, Unit: "USD", Window: governor.BudgetWindow{Per: 24 * time.Hour}}
	for _, tc := range []struct {
		what, want string
		ask        governor.Ask
	}{
		{"a rate", "RateBackend", governor.Ask{Rates: []governor.RateRequest{rate}}},
		{"a budget", "BudgetBackend", governor.Ask{Spends: []governor.BudgetSpend{{Budget: day, Amount: 1}}}},
		{"a slot and a rate", "RateBackend", governor.Ask{Wants: []governor.Want{{Resource: "r", AcquireOptions: governor.AcquireOptions{Limit: 2}}}, Rates: []governor.RateRequest{rate}}},
	} {
		if _, err := g.Hold(ctx, tc.ask); !errors.Is(err, governor.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Hold of %s: %v; want ErrInvalid naming %s", tc.what, err, tc.want)
		}
	}
	if err := g.BudgetAdmin(ctx, "day", governor.BudgetPause, 0, ""); !errors.Is(err, governor.ErrInvalid) || !strings.Contains(err.Error(), "BudgetBackend") {
		t.Errorf("BudgetAdmin: %v; want ErrInvalid naming BudgetBackend", err)
	}
	if rs, err := g.Rates(ctx); err != nil || len(rs) != 0 {
		t.Errorf("Rates: %v, %v; want none", rs, err)
	}
	if bs, _, err := g.Budgets(ctx, nil); err != nil || len(bs) != 0 {
		t.Errorf("Budgets: %v, %v; want none", bs, err)
	}
	// Nothing stays held after the refusals: both slots are free.
	for range 2 {
		if _, err := g.Acquire(ctx, "r", governor.AcquireOptions{Limit: 2}); err != nil {
			t.Fatalf("a slot after the refusals: %v", err)
		}
	}
}
