package faults_test

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/governor-dev/governor/governor"
)

// Scenario 7: the client's clock far from the server's changes nothing,
// since every expiry and token comes from the server (TIME in the
// scripts). miniredis's clock is set to 2100, then 1990, while this
// process's clock reads today: grants, expiries and refusals follow the
// server's clock alone, tokens keep increasing when it jumps back, and a
// Governor's lease is neither lost nor kept on the client's clock.
func TestClientClockIrrelevant(t *testing.T) {
	m := miniredis.RunT(t)
	b := backend(t, client(t, m.Addr()))
	ctx := context.Background()
	key := governor.Key{Project: uniq("clock"), Resource: "heavy"}
	req := func(id string) governor.Request {
		return governor.Request{Key: key, ID: id, Limit: 1, Weight: 1, TTL: 10 * time.Second, Mode: governor.Fail, QueueTTL: time.Minute, New: true}
	}
	acquire := func(id string) governor.Result {
		t.Helper()
		r, err := b.Acquire(ctx, req(id))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	future := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	m.SetTime(future)
	r := acquire("a")
	if r.Outcome != governor.Granted || !r.Expires.Equal(future.Add(10*time.Second)) {
		t.Fatalf("in 2100: %v expires %v, want granted, expiring at server time + TTL", r.Outcome, r.Expires)
	}
	if r.Token < future.UnixMicro() {
		t.Fatalf("token %d below the server time in microseconds %d", r.Token, future.UnixMicro())
	}
	tokA := r.Token
	st := status(t, b, key)
	if !st.Now.Equal(future) || len(st.Holders) != 1 || !st.Holders[0].AcquiredAt.Equal(future) {
		t.Fatalf("status now %v holders %+v: not the server's clock", st.Now, st.Holders)
	}

	m.SetTime(future.Add(9900 * time.Millisecond))
	if r := acquire("b"); r.Outcome != governor.Refused {
		t.Fatalf("before the server-time expiry: %v", r.Outcome)
	}
	m.SetTime(future.Add(10100 * time.Millisecond))
	r = acquire("b")
	if r.Outcome != governor.Granted || r.Token <= tokA {
		t.Fatalf("after the server-time expiry: %v token %d (previous %d)", r.Outcome, r.Token, tokA)
	}
	tokB := r.Token

	// The server's clock jumps back 110 years: b's lease does not expire
	// by it, and tokens still increase.
	past := time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC)
	m.SetTime(past)
	if r := acquire("c"); r.Outcome != governor.Refused {
		t.Fatalf("after the server's clock went back: %v", r.Outcome)
	}
	if err := b.Release(ctx, key, "b", ""); err != nil {
		t.Fatal(err)
	}
	r = acquire("c")
	if r.Outcome != governor.Granted || r.Token <= tokB || !r.Expires.Equal(past.Add(10*time.Second)) {
		t.Fatalf("in 1990: %v token %d (previous %d) expires %v", r.Outcome, r.Token, tokB, r.Expires)
	}
	if err := b.Release(ctx, key, "c", ""); err != nil {
		t.Fatal(err)
	}

	// A Governor whose server lives in 1990: its lease is held and
	// renewed on its own monotonic clock, neither lost at once (the
	// server's expiry is "decades ago" by the client's clock) nor kept
	// past what the server says. The TTL is not what is tested: the test
	// waits for two renewals (the server's clock stands still, so the
	// expiry does not move: they are counted) with a deadline 12 s after
	// each, which no load starves; a 5 s TTL watched for 4 s lost the
	// lease at load 18-25.
	rb := &renewCounter{Backend: b, renewed: make(chan struct{}, 16)}
	g, err := governor.New(rb, governor.Options{Project: key.Project, TTL: 15 * time.Second, Heartbeat: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close() // its suspend watch runs until then (noLeaks of later tests)
	l, err := g.Acquire(ctx, "heavy", governor.AcquireOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if l.Expires().After(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("lease expiry %v is not the server's", l.Expires())
	}
	for i := range 2 {
		select {
		case <-l.Done():
			t.Fatalf("lease lost with the server's clock in 1990, after %d renewals: %v", i, l.Err())
		case <-rb.renewed:
		case <-time.After(time.Minute):
			t.Fatalf("renewal %d: none within a minute", i+1)
		}
	}
	// The server's clock passes the lease's expiry: the next renewal
	// finds it gone and the lease is lost, whatever the client's clock.
	m.SetTime(past.Add(time.Hour))
	select {
	case <-l.Done():
	case <-time.After(time.Minute):
		t.Fatal("the lease outlived its expiry on the server's clock")
	}
	_ = l.Release()
}

// renewCounter is a backend that tells each successful renewal on
// renewed (dropped when it is full), batched or not.
type renewCounter struct {
	governor.Backend
	renewed chan struct{}
}

func (r *renewCounter) tell(err error) {
	if err != nil {
		return
	}
	select {
	case r.renewed <- struct{}{}:
	default:
	}
}

func (r *renewCounter) Renew(ctx context.Context, rn governor.Renewal) (time.Time, error) {
	exp, err := r.Backend.Renew(ctx, rn)
	r.tell(err)
	return exp, err
}

func (r *renewCounter) RenewBatch(ctx context.Context, rs []governor.Renewal) []governor.RenewalResult {
	res := r.Backend.(governor.BatchRenewer).RenewBatch(ctx, rs)
	for _, x := range res {
		r.tell(x.Err)
	}
	return res
}
