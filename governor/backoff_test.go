package governor

import (
	"testing"
	"time"
)

// TestBackoffBounds: every pause lies between the base and the cap, the
// upper bound grows with each failure as far as the cap, and reset starts
// over. The random source is pinned to its extremes to see the bounds.
func TestBackoffBounds(t *testing.T) {
	for _, tc := range []struct {
		name string
		rnd  func(n int64) int64
	}{
		{"lowest", func(n int64) int64 { return 0 }},
		{"highest", func(n int64) int64 { return n - 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &backoff{rnd: tc.rnd}
			prev := time.Duration(0)
			for i := 0; i < 20; i++ {
				d := b.next()
				if d < backoffBase || d > backoffMax {
					t.Fatalf("pause %d = %v, outside [%v, %v]", i, d, backoffBase, backoffMax)
				}
				if hi := min(3*max(prev, backoffBase), backoffMax); d > hi {
					t.Fatalf("pause %d = %v after %v; want at most %v", i, d, prev, hi)
				}
				prev = d
			}
			if tc.name == "highest" && prev != backoffMax {
				t.Fatalf("the highest schedule never reached the cap: last pause %v", prev)
			}
			b.reset()
			if d := b.next(); d > 3*backoffBase {
				t.Fatalf("first pause after reset = %v; want at most %v", d, 3*backoffBase)
			}
		})
	}
}

// TestBackoffJitter: two retriers that fail together do not retry
// together: their schedules, drawn from the real random source, differ.
func TestBackoffJitter(t *testing.T) {
	a, b := newBackoff(), newBackoff()
	same := 0
	for i := 0; i < 20; i++ {
		da, db := a.next(), b.next()
		if da < backoffBase || da > backoffMax || db < backoffBase || db > backoffMax {
			t.Fatalf("pause %d = %v and %v, outside [%v, %v]", i, da, db, backoffBase, backoffMax)
		}
		if da == db {
			same++
		}
	}
	// Equal nanosecond draws are all but impossible; allow a few.
	if same > 2 {
		t.Fatalf("two independent retriers paused alike %d times in 20: no jitter", same)
	}
}
