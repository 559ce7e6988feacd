//go:build linux

package main

import (
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
)

// TestCheckOrder: a waiter granted past one queued ahead of it that
// still waits is a violation; the head granted, or one passed by a
// waiter that was dropped and queued again, or within the window after
// a loss of Redis's data, is not.
func TestCheckOrder(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	waiter := func(id string, at int) governor.Waiter {
		return governor.Waiter{ID: id, Weight: 1, EnqueuedAt: t0.Add(time.Duration(at) * time.Millisecond)}
	}
	queue := []governor.Waiter{waiter("a", 1), waiter("b", 2), waiter("c", 3)}
	cases := []struct {
		name    string
		holders []string
		waiters []governor.Waiter
		lost    bool
		bad     int
	}{
		{"the head granted", []string{"a"}, []governor.Waiter{waiter("b", 2), waiter("c", 3)}, false, 0},
		{"the second granted, the head waits", []string{"b"}, []governor.Waiter{waiter("a", 1), waiter("c", 3)}, false, 1},
		{"the head queued again", []string{"b"}, []governor.Waiter{waiter("c", 3), waiter("a", 9)}, false, 0},
		{"after a loss", []string{"c"}, []governor.Waiter{waiter("a", 1), waiter("b", 2)}, true, 0},
	}
	for _, c := range cases {
		s := &soak{}
		if c.lost {
			s.losses = []int64{mono()}
		}
		w := &watch{queues: map[string][]governor.Waiter{}}
		s.checkOrder(w, "r", governor.Status{Waiters: queue})
		st := governor.Status{Waiters: c.waiters}
		for _, h := range c.holders {
			st.Holders = append(st.Holders, governor.Holder{LeaseID: h})
		}
		s.checkOrder(w, "r", st)
		if n := s.violationCount(); n != c.bad {
			t.Errorf("%s: %d violations %v, want %d", c.name, n, s.violations, c.bad)
		}
	}
}
