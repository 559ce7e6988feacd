package view_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/view"
)

func TestExpectedWait(t *testing.T) {
	holds := func(ds ...time.Duration) []time.Duration { return ds }
	ws := []governor.Waiter{{ID: "a", Weight: 1}, {ID: "b", Weight: 2}, {ID: "c", Weight: 1}}
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	holders := func(ages ...time.Duration) []governor.Holder {
		var hs []governor.Holder
		for _, a := range ages {
			hs = append(hs, governor.Holder{Weight: 1, AcquiredAt: now.Add(-a)})
		}
		return hs
	}
	tests := []struct {
		name  string
		st    governor.Status
		place int
		want  string
		wait  time.Duration
	}{
		{"no history", governor.Status{Limit: 1, Used: 1, Waiters: ws[:1]}, 1, "unknown (no hold history yet)", 0},
		{"fits at once", governor.Status{Limit: 2, Used: 1}, 0, "now", 0},
		{"fits at once without history", governor.Status{Limit: 3, Used: 1, Waiters: ws[:1]}, 1, "now", 0},
		{"paused", governor.Status{Limit: 2, Paused: &governor.Paused{By: "x"}, Holds: holds(time.Second)}, 0, "unknown (paused)", 0},
		// limit 1 held, first in queue: one mean hold.
		{"head", governor.Status{Limit: 1, Used: 1, Waiters: ws[:1], Holds: holds(10*time.Second, 30*time.Second)}, 1,
			"~20s (from the last 2 holds)", 20 * time.Second},
		// limit 2, used 2 by holders not listed (as if just granted),
		// waiters a(1), b(2): b needs 2+1+2-2 = 3 slots: 2 free at 10s,
		// the 3rd a mean later.
		{"weight ahead", governor.Status{Limit: 2, Used: 2, Waiters: ws, Holds: holds(10 * time.Second)}, 2,
			"~20s (from the last 1 hold)", 20 * time.Second},
		// The resource's own: a newcomer behind everyone: 2+4+1-2 = 5 slots.
		{"newcomer", governor.Status{Limit: 2, Used: 2, Waiters: ws, Holds: holds(10 * time.Second)}, 0,
			"~30s (from the last 1 hold)", 30 * time.Second},
		// Holders' ages count: held 8s of a 10s mean, 2s are left.
		{"held a while", governor.Status{Limit: 1, Used: 1, Now: now, Holders: holders(8 * time.Second), Holds: holds(10 * time.Second)}, 0,
			"~2s (from the last 1 hold)", 2 * time.Second},
		// The same status a second later counts down.
		{"a second later", governor.Status{Limit: 1, Used: 1, Now: now.Add(time.Second), Holders: holders(8 * time.Second), Holds: holds(10 * time.Second)}, 0,
			"~1s (from the last 1 hold)", time.Second},
		// Two holders, 9s and 2s into a 10s mean; the newcomer needs one
		// slot: the older frees first.
		{"the older frees first", governor.Status{Limit: 2, Used: 2, Now: now, Holders: holders(2*time.Second, 9*time.Second), Holds: holds(10 * time.Second)}, 0,
			"~1s (from the last 1 hold)", time.Second},
		// Behind waiter a(1): the 2nd slot, the younger holder's 8s.
		{"behind one", governor.Status{Limit: 2, Used: 2, Now: now, Holders: holders(2*time.Second, 9*time.Second), Waiters: ws[:1], Holds: holds(10 * time.Second)}, 0,
			"~8s (from the last 1 hold)", 8 * time.Second},
		// Behind a, b(2) and c: 5 slots, the 1st of the third round.
		{"rounds", governor.Status{Limit: 2, Used: 2, Now: now, Holders: holders(2*time.Second, 9*time.Second), Waiters: ws, Holds: holds(10 * time.Second)}, 0,
			"~21s (from the last 1 hold)", 21 * time.Second},
		// Held longer than the mean: any moment.
		{"overdue", governor.Status{Limit: 1, Used: 1, Now: now, Holders: holders(time.Minute), Holds: holds(10 * time.Second)}, 0,
			"any moment (holders past the mean hold of 10s, from the last 1 hold)", 0},
		{"never used", governor.Status{}, 0, "unknown (no hold history yet)", 0},
		{"short holds", governor.Status{Limit: 1, Used: 1, Holds: holds(0)}, 0, "~0ms (from the last 1 hold)", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := view.ExpectedWait(tt.st, tt.place)
			if e.String() != tt.want || e.Wait != tt.wait {
				t.Fatalf("ExpectedWait = %q (%v), want %q (%v)", e, e.Wait, tt.want, tt.wait)
			}
		})
	}
}

// A resource of 2 slots, both held (for 25s and for 5s), with one waiter
// of weight 1 queued; the last holds took 20s and 40s, 30s on average.
// The waiter needs one slot freed: the older holder's, in about 5s; a
// newcomer two: the younger one's too, in about 25s.
func ExampleExpectedWait() {
	now := time.Now()
	st := governor.Status{Limit: 2, Used: 2, Now: now,
		Holders: []governor.Holder{{Weight: 1, AcquiredAt: now.Add(-25 * time.Second)}, {Weight: 1, AcquiredAt: now.Add(-5 * time.Second)}},
		Waiters: []governor.Waiter{{ID: "w1", Weight: 1}},
		Holds:   []time.Duration{20 * time.Second, 40 * time.Second}}
	fmt.Println("waiter 1:", view.ExpectedWait(st, 1))
	fmt.Println("newcomer:", view.ExpectedWait(st, 0))
	fmt.Println("no history:", view.ExpectedWait(governor.Status{Limit: 1, Used: 1}, 0))
	// Output:
	// waiter 1: ~5s (from the last 2 holds)
	// newcomer: ~25s (from the last 2 holds)
	// no history: unknown (no hold history yet)
}
