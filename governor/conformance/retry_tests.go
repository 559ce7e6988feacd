package conformance

import (
	"testing"

	"github.com/governor-dev/governor/governor"
)

// retriedNewAcquire: a request marked New whose reply was lost is sent
// again as it was (a Redis client retries a command after a broken
// connection with the same arguments): the repeat finds the grant or
// the queue entry the first made, and takes no more room. The Redis
// backend's fast path trusted New and counted the holder twice: a slot
// leaked on every retry (the linearizability check found it).
func (s *suite) retriedNewAcquire(t *testing.T) {
	b, key := s.open(t, "retried")
	r := req(key, 2, 1, governor.Fail)
	r.New = true
	first := mustAcquire(t, b, r, governor.Granted)
	again := mustAcquire(t, b, r, governor.Granted)
	if again.Token != first.Token {
		t.Fatalf("the repeated acquire got token %d, want the first grant's %d", again.Token, first.Token)
	}
	st := mustStatus(t, b, key)
	if st.Used != 1 || len(st.Holders) != 1 {
		t.Fatalf("after the repeat: used %d, %d holders; want 1 and 1", st.Used, len(st.Holders))
	}
	other := req(key, 2, 1, governor.Fail)
	other.New = true
	mustAcquire(t, b, other, governor.Granted) // the second slot is free
	third := req(key, 2, 1, governor.Fail)
	third.New = true
	mustAcquire(t, b, third, governor.Refused)
	release(t, b, key, r.ID)
	release(t, b, key, other.ID)

	// A waiter: the repeat is still one entry of the queue.
	hold := req(key, 1, 1, governor.Fail)
	hold.New = true
	w := req(key, 1, 1, governor.Wait)
	w.New = true
	b2, key2 := s.open(t, "retried-queue")
	hold.Key, w.Key = key2, key2
	mustAcquire(t, b2, hold, governor.Granted)
	mustAcquire(t, b2, w, governor.Queued)
	mustAcquire(t, b2, w, governor.Queued)
	if st := mustStatus(t, b2, key2); st.QueueLen() != 1 {
		t.Fatalf("after the repeated wait: queue length %d, want 1", st.QueueLen())
	}
	release(t, b2, key2, hold.ID)
	w.New = false
	mustAcquire(t, b2, w, governor.Granted)
	if st := mustStatus(t, b2, key2); st.Used != 1 || st.QueueLen() != 0 {
		t.Fatalf("after the waiter's grant: used %d, queue %d; want 1 and 0", st.Used, st.QueueLen())
	}
}
