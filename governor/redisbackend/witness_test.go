package redisbackend_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/internal/backendkit"
	"github.com/governor-dev/governor/governor/redisbackend"
)

// A forgotten resource leaves a tombstone that expires (backendkit.Tombstone)
// and says every state born before it was forgotten (known); the state
// born on it again keeps known and never expires.
func TestTombstoneRebornNoExpiry(t *testing.T) {
	m := miniredis.RunT(t)
	clock := &miniClock{m: m, now: time.Now()}
	m.SetTime(clock.now)
	b := open(t, m.Addr(), redisbackend.Witness(t.TempDir(), m.Addr()))
	ctx := context.Background()
	key := governor.Key{Project: "p", Resource: "r"}
	state := redisbackend.Keys(key)[1]
	n := 0
	acquire := func() {
		t.Helper()
		n++
		id := "l" + strconv.Itoa(n)
		res, err := b.Acquire(ctx, governor.Request{Key: key, ID: id, Limit: 1, Weight: 1, TTL: time.Minute, QueueTTL: time.Minute, New: true})
		if err != nil || res.Outcome != governor.Granted {
			t.Fatalf("acquire: %v %v", res.Outcome, err)
		}
		if err := b.Release(ctx, key, id, ""); err != nil {
			t.Fatal(err)
		}
	}
	acquire()
	for i := 0; ; i++ {
		gone, err := b.Forget(ctx, key, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if gone {
			break
		}
		if i == 2 {
			t.Fatal("not forgotten")
		}
		clock.advance(2 * time.Second)
	}
	if ttl := m.TTL(state); ttl <= 0 || ttl > backendkit.Tombstone {
		t.Fatalf("the tombstone's TTL %v; want up to %v", ttl, backendkit.Tombstone)
	}
	known := m.HGet(state, "known")
	if known == "" {
		t.Fatal("no known in the tombstone")
	}
	acquire()
	if ttl := m.TTL(state); ttl != 0 {
		t.Fatalf("the state born on a tombstone expires in %v", ttl)
	}
	if got := m.HGet(state, "known"); got != known {
		t.Fatalf("known after the birth %q; want %q", got, known)
	}
}
