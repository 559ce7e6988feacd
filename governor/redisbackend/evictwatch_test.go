package redisbackend_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/internal/redistest"
)

// heldBackAfter holds a lease on a fresh resource of a backend on addr,
// runs change (the server's configuration, at run time), and renews the
// lease (the heartbeat batch) until a newcomer is refused; it fails after
// a generous deadline, or when no quarantine event names want.
func heldBackAfter(t *testing.T, addr, want string, change func(ctx context.Context, admin *redis.Client)) {
	t.Helper()
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer admin.Close()
	b := open(t, addr).(*redisbackend.Backend)
	key := governor.Key{Project: fmt.Sprintf("evict-%d", time.Now().UnixNano()), Resource: "r"}
	holder := governor.Request{Key: key, ID: "holder", Limit: 2, Weight: 1, TTL: 5 * time.Second, New: true}
	if res, err := b.Acquire(ctx, holder); err != nil || res.Outcome != governor.Granted {
		t.Fatalf("acquire: %v %v", res.Outcome, err)
	}
	other := open(t, addr) // opened before: New refuses an evicting policy
	change(ctx, admin)
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; ; i++ {
		// A renewal may find its lease evicted: lost, as it should be.
		b.RenewBatch(ctx, []governor.Renewal{{Key: key, ID: holder.ID, TTL: holder.TTL}})
		n := governor.Request{Key: key, ID: fmt.Sprintf("newcomer-%d", i), Limit: 2, Weight: 1, TTL: time.Second, New: true}
		res, err := other.Acquire(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != governor.Granted {
			break
		}
		if err := b.Release(ctx, key, n.ID, ""); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("newcomers are still granted beside the holder after the change")
		}
		time.Sleep(100 * time.Millisecond) // the watch reads at most every EvictionCheckEvery
	}
	evs, err := b.Events(ctx, key, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Kind == eventkind.Quarantine && strings.Contains(e.Detail, want) {
			return
		}
	}
	t.Fatalf("events = %+v; want a quarantine naming %q", evs, want)
}

// An eviction policy set at run time (CONFIG SET, after New checked it)
// is seen by the heartbeat batch: grants on the resources held are held
// back (a quarantine naming the policy).
func TestEvictionPolicyChangedAtRunTime(t *testing.T) {
	s := redistest.Start(t)
	heldBackAfter(t, s.Addr, "maxmemory-policy allkeys-lru", func(ctx context.Context, admin *redis.Client) {
		if err := admin.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err != nil {
			t.Fatal(err)
		}
	})
}

// Keys evicted between two heartbeats (an evicting policy set and reset
// in between) are evidence too: evicted_keys grew.
func TestEvictedKeysSeenAtRunTime(t *testing.T) {
	s := redistest.Start(t)
	heldBackAfter(t, s.Addr, "evicted", func(ctx context.Context, admin *redis.Client) {
		for _, kv := range [][2]string{{"maxmemory-policy", "allkeys-random"}, {"maxmemory", "1"}} {
			if err := admin.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
				t.Fatal(err)
			}
		}
		_ = admin.Set(ctx, "junk", strings.Repeat("x", 1<<16), 0).Err() // evicts
		for _, kv := range [][2]string{{"maxmemory", "0"}, {"maxmemory-policy", "noeviction"}} {
			if err := admin.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if n, _ := admin.Info(ctx, "stats").Result(); !strings.Contains(n, "evicted_keys:") || strings.Contains(n, "evicted_keys:0\r") {
			t.Fatalf("nothing was evicted: %s", n)
		}
	})
}
