package governor

import (
	"context"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor/histogram"
)

// observeOnly is a Backend that only takes observations.
type observeOnly struct {
	Backend
	got chan int64
}

func (o observeOnly) Observe(_ context.Context, _ Key, _ string, counts []int64, _ time.Duration) error {
	var n int64
	for _, c := range counts {
		n += c
	}
	o.got <- n
	return nil
}

// A recorder's first observation reaches the backend at once, in the
// background, not after the flush interval nor only at close: a process
// that acquires, runs a short command and releases (governor run) does not
// write it after its release. Later ones wait for the interval; close sends
// them.
func TestRecorderSendsFirstObservationAtOnce(t *testing.T) {
	b := observeOnly{got: make(chan int64, 4)}
	r := newRecorder(b)
	r.every = time.Hour
	key := Key{Project: "p", Resource: "r"}
	r.observe(key, histogram.Wait, time.Millisecond)
	select {
	case n := <-b.got:
		if n != 1 {
			t.Fatalf("first flush carried %d observations, want 1", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the first observation did not reach the backend before the flush interval")
	}
	r.observe(key, histogram.Wait, time.Millisecond)
	r.observe(key, histogram.Wait, time.Millisecond)
	select {
	case n := <-b.got:
		t.Fatalf("a second flush of %d observations came before the interval", n)
	case <-time.After(50 * time.Millisecond):
	}
	r.close()
	select {
	case n := <-b.got:
		if n != 2 {
			t.Fatalf("close sent %d observations, want the 2 pending", n)
		}
	default:
		t.Fatal("close did not send the pending observations")
	}
}
