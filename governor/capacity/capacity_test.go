package capacity

import (
	"math/rand/v2"
	"testing"
)

// TestFairShare: max-min in whole slots; parts never sum above the
// capacity, and a wanter gets less than it wants only when it gets at
// least as much as every other wanter (what max-min means).
func TestFairShare(t *testing.T) {
	got := FairShare(10, []Wanter{{"a", 2}, {"b", 100}, {"c", 100}})
	if got["a"] != 2 || got["b"] != 4 || got["c"] != 4 {
		t.Fatalf("FairShare(10, 2/100/100) = %v, want 2 4 4", got)
	}
	got = FairShare(10, []Wanter{{"a", 100}, {"b", 100}, {"c", 100}})
	if got["a"]+got["b"]+got["c"] != 10 || got["a"] != 3 || got["c"] != 4 {
		t.Fatalf("FairShare(10, three wanting all) = %v, want 3 3 4", got)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		c := rng.IntN(20)
		ws := make([]Wanter, 1+rng.IntN(6))
		for i := range ws {
			ws[i] = Wanter{ID: string(rune('a' + i)), Want: rng.IntN(12)}
		}
		parts, sum := FairShare(c, ws), 0
		for _, w := range ws {
			p := parts[w.ID]
			sum += p
			if p < 0 || p > w.Want {
				t.Fatalf("FairShare(%d, %v) = %v: %s gets %d", c, ws, parts, w.ID, p)
			}
		}
		if sum > c || sum < min(c, sumWants(ws)) {
			t.Fatalf("FairShare(%d, %v) = %v: sum %d", c, ws, parts, sum)
		}
		for _, w := range ws {
			if parts[w.ID] < w.Want {
				for _, o := range ws {
					if parts[o.ID] > parts[w.ID]+1 {
						t.Fatalf("FairShare(%d, %v) = %v: %s short at %d while %s has %d", c, ws, parts, w.ID, parts[w.ID], o.ID, parts[o.ID])
					}
				}
			}
		}
	}
}

func sumWants(ws []Wanter) int {
	n := 0
	for _, w := range ws {
		n += w.Want
	}
	return n
}

// TestNext: a share shrinks to its entitlement at once, keeping what is
// in use as weight; grows only by the room free and not when blocked;
// in the learning mode comes back up to what it held.
func TestNext(t *testing.T) {
	for _, c := range []struct {
		a           Ask
		s           State
		share, held int
	}{
		{Ask{Want: 10, InUse: 10}, State{Entitled: 5, Held: 10}, 5, 10},
		{Ask{Want: 10, InUse: 3}, State{Entitled: 5, Held: 10}, 5, 5},
		{Ask{Want: 10}, State{Entitled: 5, Held: 2, Free: 1}, 3, 3},
		{Ask{Want: 10}, State{Entitled: 5, Held: 2, Free: 9, Blocked: true}, 2, 2},
		{Ask{Want: 10, Held: 4}, State{Entitled: 8, Free: 9, Blocked: true, Learning: true}, 4, 4},
		{Ask{Want: 10, Held: 4}, State{Entitled: 8, Free: 2, Blocked: true, Learning: true}, 2, 2},
		{Ask{}, State{Held: 3}, 0, 0},
	} {
		if share, held := c.a.Next(c.s); share != c.share || held != c.held {
			t.Errorf("%+v.Next(%+v) = %d, %d; want %d, %d", c.a, c.s, share, held, c.share, c.held)
		}
	}
}

// TestTally: a refresh adds the grants above the count kept, which never
// goes down; a lease with no count kept adds nothing and starts one.
func TestTally(t *testing.T) {
	for _, c := range []struct {
		granted, last int64
		kept          bool
		add, keep     int64
	}{
		{granted: 5, last: 2, kept: true, add: 3, keep: 5},
		{granted: 5, last: 5, kept: true, add: 0, keep: 5}, // sent twice
		{granted: 3, last: 5, kept: true, add: 0, keep: 5}, // late
		{granted: 7, kept: false, add: 0, keep: 7},         // new, or its count lost
	} {
		add, keep := Ask{Granted: c.granted}.Tally(c.last, c.kept)
		if add != c.add || keep != c.keep {
			t.Errorf("Ask{Granted: %d}.Tally(%d, %v) = %d, %d; want %d, %d", c.granted, c.last, c.kept, add, keep, c.add, c.keep)
		}
	}
}
