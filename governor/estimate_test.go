package governor_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
)

func TestExpectedWait(t *testing.T) {
	holds := func(ds ...time.Duration) []time.Duration { return ds }
	ws := []governor.Waiter{{ID: "a", Weight: 1}, {ID: "b", Weight: 2}, {ID: "c", Weight: 1}}
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
		// limit 2, used 2, waiters a(1), b(2): b needs 2+1+2-2 = 3 slots freed at 2 per 10s.
		{"weight ahead", governor.Status{Limit: 2, Used: 2, Waiters: ws, Holds: holds(10 * time.Second)}, 2,
			"~15s (from the last 1 hold)", 15 * time.Second},
		// The resource's own: a newcomer behind everyone: 2+4+1-2 = 5 slots.
		{"newcomer", governor.Status{Limit: 2, Used: 2, Waiters: ws, Holds: holds(10 * time.Second)}, 0,
			"~25s (from the last 1 hold)", 25 * time.Second},
		{"never used", governor.Status{}, 0, "unknown (no hold history yet)", 0},
		{"short holds", governor.Status{Limit: 1, Used: 1, Holds: holds(0)}, 0, "~0ms (from the last 1 hold)", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := governor.ExpectedWait(tt.st, tt.place)
			if e.String() != tt.want || e.Wait != tt.wait {
				t.Fatalf("ExpectedWait = %q (%v), want %q (%v)", e, e.Wait, tt.want, tt.wait)
			}
		})
	}
}

// A resource of 2 slots, both held, with one waiter of weight 1 queued:
// the waiter needs one slot freed, a newcomer two; the last holds took
// 20s and 40s, so 2 slots free every 30s on average.
func ExampleExpectedWait() {
	st := governor.Status{Limit: 2, Used: 2,
		Waiters: []governor.Waiter{{ID: "w1", Weight: 1}},
		Holds:   []time.Duration{20 * time.Second, 40 * time.Second}}
	fmt.Println("waiter 1:", governor.ExpectedWait(st, 1))
	fmt.Println("newcomer:", governor.ExpectedWait(st, 0))
	fmt.Println("no history:", governor.ExpectedWait(governor.Status{Limit: 1, Used: 1}, 0))
	// Output:
	// waiter 1: ~15s (from the last 2 holds)
	// newcomer: ~30s (from the last 2 holds)
	// no history: unknown (no hold history yet)
}
