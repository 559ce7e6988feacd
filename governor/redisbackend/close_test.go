package redisbackend_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/redisbackend"
)

// TestCloseEndsWaitOwnClient: with OwnClient, Governor.Close ends a
// waiting acquire with ErrClosed and withdraws its waiter before the
// client closes (the wait used to retry on the closed client for ever).
func TestCloseEndsWaitOwnClient(t *testing.T) {
	m := miniredis.RunT(t)
	b, err := redisbackend.New(context.Background(), redis.NewClient(&redis.Options{Addr: m.Addr()}), redisbackend.OwnClient())
	if err != nil {
		t.Fatal(err)
	}
	raw := open(t, m.Addr())
	key := governor.Key{Project: "p", Resource: "heavy"}
	holder := governor.Request{Key: key, ID: "holder", Limit: 1, Weight: 1, TTL: time.Minute, QueueTTL: time.Minute}
	if res, err := raw.Acquire(context.Background(), holder); err != nil || res.Outcome != governor.Granted {
		t.Fatalf("Acquire = %+v, %v", res, err)
	}
	g, err := governor.New(b, governor.Options{Project: "p"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := g.Acquire(context.Background(), "heavy", governor.AcquireOptions{Limit: 1, Mode: governor.Wait,
			OnQueued: func(governor.Result) {}})
		done <- err
	}()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		st, err := raw.Status(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Waiters) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the waiter never queued")
		}
	}
	if err := g.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, governor.ErrClosed) {
			t.Fatalf("wait ended by Close = %v, want ErrClosed", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not end the wait")
	}
	if st, err := raw.Status(context.Background(), key); err != nil || len(st.Waiters) != 0 {
		t.Fatalf("after Close: %+v, %v; want no waiter", st, err)
	}
}
