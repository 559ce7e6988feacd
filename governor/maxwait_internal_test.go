package governor

import (
	"testing"
	"time"
)

// A waiter under max_wait re-checks at its deadline, not at the next
// re-check (issue 25.10), and soon after while the backend has not yet
// dropped it.
func TestNextRecheck(t *testing.T) {
	for _, tc := range []struct {
		recheck, maxWait, waited, want time.Duration
	}{
		{2500 * time.Millisecond, 0, 0, 2500 * time.Millisecond},
		{2500 * time.Millisecond, time.Second, 0, time.Second + time.Millisecond},
		{2500 * time.Millisecond, time.Second, 400 * time.Millisecond, 601 * time.Millisecond},
		{2500 * time.Millisecond, time.Second, time.Second, maxWaitLate},
		{2500 * time.Millisecond, time.Minute, 0, 2500 * time.Millisecond},
		{10 * time.Millisecond, time.Second, 2 * time.Second, 10 * time.Millisecond},
	} {
		if got := nextRecheck(tc.recheck, tc.maxWait, tc.waited); got != tc.want {
			t.Errorf("nextRecheck(%v, %v, %v) = %v, want %v", tc.recheck, tc.maxWait, tc.waited, got, tc.want)
		}
	}
	if got := requestMaxWait(Request{Policy: Policy{MaxWait: time.Second}.Encode()}); got != time.Second {
		t.Errorf("requestMaxWait of a policy with max_wait 1s = %v", got)
	}
}
