package redisbackend_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/conformance"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/internal/redistest"
)

func open(t *testing.T, addr string, opts ...redisbackend.Option) governor.Backend {
	t.Helper()
	return openClient(t, redistest.Client(addr), opts...)
}

// openClient returns a backend on rdb; both are closed at t's cleanup.
func openClient(t *testing.T, rdb redis.UniversalClient, opts ...redisbackend.Option) governor.Backend {
	t.Helper()
	b, err := redisbackend.New(context.Background(), rdb, opts...)
	if err != nil {
		t.Fatalf("redisbackend.New: %v", err)
	}
	t.Cleanup(func() {
		_ = b.Close()
		_ = rdb.Close()
	})
	return b
}

// miniClock moves miniredis's TIME and its key TTLs together.
type miniClock struct {
	mu  sync.Mutex
	m   *miniredis.Miniredis
	now time.Time
}

func (c *miniClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.m.SetTime(c.now)
	c.m.FastForward(d)
}

// corrupter returns a Harness.Corrupt that overwrites a holder record
// through a client made by dial.
func corrupter(dial func() redis.UniversalClient) func(t *testing.T, key governor.Key, id string) {
	return func(t *testing.T, key governor.Key, id string) {
		rdb := dial()
		defer rdb.Close()
		if err := rdb.HSet(context.Background(), redisbackend.Keys(key)[1], "#"+id, "garbage").Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// damager returns a Harness.Damage that writes through a client made by
// dial.
func damager(dial func() redis.UniversalClient) func(t *testing.T, key governor.Key, lease string, d conformance.Damage) bool {
	return func(t *testing.T, key governor.Key, lease string, d conformance.Damage) bool {
		rdb := dial()
		defer rdb.Close()
		ctx := context.Background()
		ks := redisbackend.Keys(key)
		var err error
		switch d {
		case conformance.DamageUsed:
			err = rdb.HSet(ctx, ks[1], "used", "-5").Err()
		case conformance.DamageNoState:
			err = rdb.Del(ctx, ks[1]).Err()
		case conformance.DamageNoHolders:
			err = rdb.Del(ctx, ks[0]).Err()
		case conformance.DamageQueueEntry:
			err = rdb.HSet(ctx, ks[4], lease, "garbage").Err()
		case conformance.DamageEvent:
			err = rdb.XAdd(ctx, &redis.XAddArgs{Stream: ks[5], Values: []string{"foo", "bar"}}).Err()
		case conformance.DamageOverLimit:
			exp, rec := rdb.ZScore(ctx, ks[0], lease).Val(), rdb.HGet(ctx, ks[1], "#"+lease).Val()
			for i := range 5 {
				id := fmt.Sprintf("copy%d", i)
				if err = rdb.ZAdd(ctx, ks[0], redis.Z{Score: exp, Member: id}).Err(); err == nil {
					err = rdb.HSet(ctx, ks[1], "#"+id, rec).Err()
				}
				if err != nil {
					break
				}
			}
			if err == nil {
				err = rdb.HIncrBy(ctx, ks[1], "used", 5).Err()
			}
		default:
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		return true
	}
}

// loser returns a Harness.Lose that flushes every master through a
// client made by dial.
func loser(dial func() redis.UniversalClient) func(t *testing.T) {
	return func(t *testing.T) {
		rdb := dial()
		defer rdb.Close()
		ctx := context.Background()
		var err error
		if c, ok := rdb.(*redis.ClusterClient); ok {
			err = c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return n.FlushAll(ctx).Err() })
		} else {
			err = rdb.FlushAll(ctx).Err()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// The three conformance runs (miniredis, a server, a Cluster) each have
// their own servers, so they run beside each other: the real ones mostly
// sleep (RealTime), and one after the other they were the longest part
// of the Go suite's critical path in CI (99 + 91 + 60 s). Each also runs
// in lanes side by side, each lane on servers of its own
// (conformance.RunParallel): one test after another, the real ones took
// 115 and 134 s. Miniredis's, on its own clock, stays on one store.
func TestConformanceMiniredis(t *testing.T) {
	t.Parallel()
	// One store, not lanes: the store's clock moves only by Advance, and
	// some cases check an expiry against the real clock, which a lane
	// that did not run RateWindowBound's hour fell behind (CapacityExpiry
	// in a suite at load 20). Mostly CPU, it gained little in lanes.
	m := miniredis.RunT(t)
	clock := &miniClock{m: m, now: time.Now()}
	m.SetTime(clock.now)
	machine := t.TempDir() // the witness of the processes of this machine
	conformance.Run(t, conformance.Harness{
		Open: func(t *testing.T) governor.Backend { return open(t, m.Addr(), redisbackend.Witness(machine, m.Addr())) },
		OpenElsewhere: func(t *testing.T) governor.Backend {
			return open(t, m.Addr(), redisbackend.Witness(t.TempDir(), m.Addr()))
		},
		Advance: func(t *testing.T, d time.Duration) { clock.advance(d) },
		Corrupt: func(t *testing.T, key governor.Key, id string) { m.HSet(redisbackend.Keys(key)[1], "#"+id, "garbage") },
		Damage:  damager(func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: m.Addr()}) }),
		Lose:    func(t *testing.T) { m.FlushAll() },
	})
}

// realLanes is how many servers (or Clusters) each real conformance run
// uses at once: their tests mostly sleep, and in three lanes they take
// about as long as miniredis's on one store (mostly CPU).
const realLanes = 3

func TestConformanceRealRedis(t *testing.T) {
	t.Parallel()
	conformance.RunParallel(t, realLanes, func(t *testing.T) conformance.Harness {
		s := redistest.Start(t)
		machine := t.TempDir()
		return conformance.Harness{
			Open:          func(t *testing.T) governor.Backend { return open(t, s.Addr, redisbackend.Witness(machine, s.Addr)) },
			OpenElsewhere: func(t *testing.T) governor.Backend { return open(t, s.Addr, redisbackend.Witness(t.TempDir(), s.Addr)) },
			Advance:       func(t *testing.T, d time.Duration) { time.Sleep(d) },
			RealTime:      true,
			Corrupt:       corrupter(func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: s.Addr}) }),
			Damage:        damager(func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: s.Addr}) }),
			Lose:          loser(func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: s.Addr}) }),
		}
	})
}

// TestConformanceRealCluster runs the suite against a three-master Redis
// Cluster through go-redis's ClusterClient: every key of a resource shares
// a hash tag, so each script runs on the one node that owns the resource,
// and grants published there reach subscribers connected to any node.
func TestConformanceRealCluster(t *testing.T) {
	t.Parallel()
	conformance.RunParallel(t, realLanes, func(t *testing.T) conformance.Harness {
		c := redistest.StartCluster(t, 3)
		machine := t.TempDir()
		cluster := func() redis.UniversalClient {
			return redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), ReadTimeout: redistest.Patient, WriteTimeout: redistest.Patient})
		}
		// After the lane's tests (a cleanup runs after the subtests),
		// before its Cluster stops (an earlier cleanup).
		t.Cleanup(func() { usedNodes(t, c) })
		return conformance.Harness{
			Open: func(t *testing.T) governor.Backend {
				return openClient(t, cluster(), redisbackend.Witness(machine, "cluster"))
			},
			OpenElsewhere: func(t *testing.T) governor.Backend {
				return openClient(t, cluster(), redisbackend.Witness(t.TempDir(), "cluster"))
			},
			Advance:  func(t *testing.T, d time.Duration) { time.Sleep(d) },
			RealTime: true,
			Corrupt:  corrupter(cluster),
			Damage:   damager(cluster),
			Lose:     loser(cluster),
		}
	})
}

// usedNodes fails t unless the lane's scripts ran on more than one node
// of c, or this was a single-node test in disguise. Counted from each
// node's command statistics (a script runs on the node that owns its
// keys), not from the keys left at the end: the suite deletes, expires
// and wipes (its data-loss cases) most of them, and the few left once sat
// on a single node. A lane that ran no script (a -run that picked
// none of its tests) is not counted.
func usedNodes(t *testing.T, c *redistest.Cluster) {
	used := 0
	for _, s := range c.Nodes {
		rc := redis.NewClient(&redis.Options{Addr: s.Addr})
		info, err := rc.Info(context.Background(), "commandstats").Result()
		_ = rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(info, "cmdstat_evalsha:calls=") || strings.Contains(info, "cmdstat_eval:calls=") {
			used++
		}
	}
	if used == 1 {
		t.Fatalf("the lane's scripts ran on 1 of %d nodes; want at least 2", len(c.Nodes))
	}
}
