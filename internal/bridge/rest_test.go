package bridge

import (
	"testing"
	"time"
)

// TestRestMemoryFreesOncePerPause: the memory is returned once the count
// of requests has stood still for restAfter, once per pause, and never
// while requests keep coming.
func TestRestMemoryFreesOncePerPause(t *testing.T) {
	frees := 0
	old := freeOSMemory
	freeOSMemory = func() { frees++ }
	defer func() { freeOSMemory = old }()

	t0 := time.Unix(1000, 0)
	tick := DefaultOwnerPoll
	var r restMemory
	steps := []struct {
		at       time.Duration
		requests uint64
		frees    int
	}{
		{0, 0, 0},                    // started: not yet at rest
		{restAfter - tick, 0, 0},     // quiet, not long enough
		{restAfter, 0, 1},            // at rest: freed (the start's garbage)
		{restAfter + tick, 0, 1},     // still at rest: not again
		{restAfter + 2*tick, 5, 1},   // requests came
		{2*restAfter + tick, 9, 1},   // and keep coming: never freed
		{3 * restAfter, 9, 1},        // quiet, not yet for restAfter
		{3*restAfter + tick, 9, 2},   // quiet for restAfter since the last change: freed once
		{10 * restAfter, 9, 2},       // a long rest: once only
		{10*restAfter + tick, 10, 2}, // a request
		{11*restAfter + tick, 10, 3}, // the next pause frees again
	}
	for i, s := range steps {
		r.tick(t0.Add(s.at), s.requests)
		if frees != s.frees {
			t.Fatalf("step %d (at %v, %d requests): %d frees, want %d", i, s.at, s.requests, frees, s.frees)
		}
	}
}
