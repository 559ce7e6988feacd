package governor_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
)

// TestHoldRateWaitEndsWithLostLease: a rate wait under a slot ends
// when the slot's lease is lost (its error), not at ctx's end, and
// nothing stays held: the slot is free again.
func TestHoldRateWaitEndsWithLostLease(t *testing.T) {
	g := newFileGovernor(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	perDay := governor.RateLimit{Rate: 1, Period: 24 * time.Hour}
	rate := governor.RateRequest{Key: governor.Key{Resource: governor.ProviderResource("p")}, Requests: perDay, NRequests: 1}
	if _, err := g.Hold(ctx, governor.Ask{Rates: []governor.RateRequest{rate}}); err != nil {
		t.Fatal(err) // the day's one request
	}
	// A lease that does not heartbeat is lost at its deadline, while
	// the rate waits for the next day.
	slot := governor.Want{Resource: "r", AcquireOptions: governor.AcquireOptions{Limit: 1, TTL: 200 * time.Millisecond, NoHeartbeat: true}}
	_, err := g.Hold(ctx, governor.Ask{Wants: []governor.Want{slot}, Rates: []governor.RateRequest{rate}, Mode: governor.Wait})
	if !errors.Is(err, governor.ErrLeaseLost) {
		t.Fatalf("Hold = %v; want the lost lease's error (ctx: %v)", err, ctx.Err())
	}
	// The lost lease is freed in the background (Lease.lose), or at its
	// expiry: a waiter gets the slot.
	l, err := g.Acquire(ctx, "r", governor.AcquireOptions{Limit: 1, Mode: governor.Wait})
	if err != nil {
		t.Fatalf("the slot was not freed after a failed Hold: %v", err)
	}
	_ = l.Release()
}

// TestHoldRefusedHoldsNothing: a rate refused (Fail) after the slot was
// taken releases the slot: on any error nothing is held.
func TestHoldRefusedHoldsNothing(t *testing.T) {
	g := newFileGovernor(t)
	ctx := context.Background()
	perDay := governor.RateLimit{Rate: 1, Period: 24 * time.Hour}
	rate := governor.RateRequest{Key: governor.Key{Resource: governor.ProviderResource("p")}, Requests: perDay, NRequests: 1}
	slot := governor.Want{Resource: "r", AcquireOptions: governor.AcquireOptions{Limit: 1}}
	h, err := g.Hold(ctx, governor.Ask{Wants: []governor.Want{slot}, Rates: []governor.RateRequest{rate}})
	if err != nil {
		t.Fatal(err)
	}
	if lost, failed := h.ReleaseWith(nil); len(lost)+len(failed) > 0 {
		t.Fatal(lost, failed)
	}
	_, err = g.Hold(ctx, governor.Ask{Wants: []governor.Want{slot}, Rates: []governor.RateRequest{rate}})
	var busy *governor.RateBusyError
	if !errors.As(err, &busy) || !errors.Is(err, governor.ErrBusy) {
		t.Fatalf("Hold over the rate = %v; want a *RateBusyError, ErrBusy", err)
	}
	l, err := g.Acquire(ctx, "r", governor.AcquireOptions{Limit: 1})
	if err != nil {
		t.Fatalf("the slot is still held after a refused Hold: %v", err)
	}
	_ = l.Release()
}
