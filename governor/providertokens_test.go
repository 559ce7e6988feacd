package governor_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
)

// TestProviderSettleTokens: a token reservation settled below its
// estimate gives the rest back (a reservation that did not fit then
// fits), once settled above it charges the difference, and a negative
// count is refused changing nothing.
func TestProviderSettleTokens(t *testing.T) {
	g, ctx := newFileGovernor(t), context.Background()
	// A day's period: what refills while the test runs is far below one token.
	tpd := governor.RateLimit{Rate: 1000, Period: 24 * time.Hour}
	p := g.Provider("anthropic", governor.ProviderLimits{Tokens: tpd})
	req := func(n int64) governor.RateRequest {
		return governor.RateRequest{Key: governor.Key{Resource: governor.ProviderResource("anthropic")}, Tokens: tpd, NTokens: n}
	}
	fits := func(n int64) bool {
		t.Helper()
		_, err := g.Hold(ctx, governor.Ask{Rates: []governor.RateRequest{req(n)}})
		var denied *governor.RateBusyError
		if err != nil && (!errors.As(err, &denied) || !errors.Is(err, governor.ErrBusy)) {
			t.Fatalf("%v; want a *RateBusyError, ErrBusy", err)
		}
		return err == nil
	}
	if !fits(800) || fits(800) {
		t.Fatal("a second 800 of 1000 tokens fitted before the first was settled")
	}
	if err := p.SettleTokens(ctx, 800, 100); err != nil {
		t.Fatal(err)
	}
	if !fits(800) { // 100 + 800 of 1000
		t.Fatal("800 tokens did not fit once the first call settled at 100")
	}
	if err := p.SettleTokens(ctx, 0, 50); err != nil { // 950: charged above its estimate
		t.Fatal(err)
	}
	if fits(51) || !fits(50) {
		t.Fatal("a call settled 50 above its estimate was not charged 50")
	}
	if err := p.SettleTokens(ctx, 100, -1); !errors.Is(err, governor.ErrInvalid) {
		t.Fatalf("used -1: %v; want ErrInvalid", err)
	}
	if fits(1) {
		t.Fatal("a refused settlement refunded tokens")
	}
}
