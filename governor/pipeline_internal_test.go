package governor

import (
	"testing"
	"time"
)

// reservationTTL, the one rule: on no lease an hour, or the work's
// bound and five minutes when longer, at most 168h; under a lease what
// is left of the lease's TTL.
func TestReservationTTL(t *testing.T) {
	for _, tc := range []struct {
		within, want time.Duration
	}{
		{0, DefaultBudgetTTL},
		{10 * time.Minute, DefaultBudgetTTL},
		{2 * time.Hour, 2*time.Hour + 5*time.Minute},
		{200 * time.Hour, 168 * time.Hour},
	} {
		if got := reservationTTL(nil, tc.within); got != tc.want {
			t.Errorf("reservationTTL(nil, %v) = %v, want %v", tc.within, got, tc.want)
		}
	}
	for _, tc := range []struct {
		left, want time.Duration
	}{
		{200 * time.Hour, 168 * time.Hour}, // at most 168h
		{-time.Minute, time.Second},        // past its deadline: at least a second
	} {
		l := &Lease{deadline: time.Now().Add(tc.left)}
		if got := reservationTTL(l, 3*time.Hour); got != tc.want {
			t.Errorf("reservationTTL of a lease with %v left = %v, want %v", tc.left, got, tc.want)
		}
	}
}
