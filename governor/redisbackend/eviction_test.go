package redisbackend_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/internal/redistest"
)

// warnings collects the lines of redisbackend.Warn.
type warnings struct {
	mu    sync.Mutex
	lines []string
}

func (w *warnings) add(msg string) { w.mu.Lock(); w.lines = append(w.lines, msg); w.mu.Unlock() }

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.lines...)
}

// openWith opens a backend on a fresh client of addr, closing both at t's
// cleanup; it returns New's error.
func openWith(t *testing.T, rdb redis.UniversalClient, opts ...redisbackend.Option) error {
	t.Helper()
	t.Cleanup(func() { _ = rdb.Close() })
	b, err := redisbackend.New(context.Background(), rdb, opts...)
	if err == nil {
		t.Cleanup(func() { _ = b.Close() })
	}
	return err
}

// A server whose maxmemory-policy can evict governor's keys is refused
// (naming the policy and the way out), unless AllowEviction; noeviction
// opens without a warning.
func TestEvictionPolicyRefused(t *testing.T) {
	s := redistest.Start(t)
	admin := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer admin.Close()
	ctx := context.Background()
	var w warnings
	if err := openWith(t, redis.NewClient(&redis.Options{Addr: s.Addr}), redisbackend.Warn(w.add)); err != nil {
		t.Fatalf("New on noeviction: %v", err)
	}
	if got := w.all(); len(got) != 0 {
		t.Fatalf("warnings on noeviction: %q", got)
	}
	for _, policy := range []string{"allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"} {
		if err := admin.ConfigSet(ctx, "maxmemory-policy", policy).Err(); err != nil {
			t.Fatal(err)
		}
		err := openWith(t, redis.NewClient(&redis.Options{Addr: s.Addr}))
		if !errors.Is(err, governor.ErrBackend) || !strings.Contains(err.Error(), policy) || !strings.Contains(err.Error(), "--allow-eviction") {
			t.Fatalf("New on %s = %v; want ErrBackend naming the policy and --allow-eviction", policy, err)
		}
		if err := openWith(t, redis.NewClient(&redis.Options{Addr: s.Addr}), redisbackend.AllowEviction()); err != nil {
			t.Fatalf("New on %s with AllowEviction: %v", policy, err)
		}
	}
}

// On a Cluster every master's policy counts: one evicting node is enough
// to refuse.
func TestEvictionPolicyClusterEveryMaster(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	last := redis.NewClient(&redis.Options{Addr: c.Nodes[2].Addr})
	defer last.Close()
	if err := last.ConfigSet(context.Background(), "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	err := openWith(t, redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()}))
	if !errors.Is(err, governor.ErrBackend) || !strings.Contains(err.Error(), c.Nodes[2].Addr+" has maxmemory-policy allkeys-lru") {
		t.Fatalf("New on a Cluster with one allkeys-lru master = %v; want ErrBackend naming that node", err)
	}
}

// A server that refuses INFO memory (miniredis has no such section; an
// ACL without +info refuses it all) cannot be checked: one warning line,
// and the backend opens.
func TestEvictionPolicyUncheckable(t *testing.T) {
	m := miniredis.RunT(t)
	var w warnings
	if err := openWith(t, redis.NewClient(&redis.Options{Addr: m.Addr()}), redisbackend.Warn(w.add)); err != nil {
		t.Fatalf("New on miniredis: %v", err)
	}
	got := w.all()
	if len(got) != 1 || !strings.Contains(got[0], "could not be checked") || strings.Contains(got[0], "\n") {
		t.Fatalf("warnings = %q; want one line saying the policy could not be checked", got)
	}

	s := redistest.Start(t)
	admin := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer admin.Close()
	ctx := context.Background()
	if err := admin.Do(ctx, "ACL", "SETUSER", "noinfo", "on", ">pw", "~*", "&*", "+@all", "-info").Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	w = warnings{}
	if err := openWith(t, redis.NewClient(&redis.Options{Addr: s.Addr, Username: "noinfo", Password: "pw"}), redisbackend.Warn(w.add)); err != nil {
		t.Fatalf("New as a user without +info: %v", err)
	}
	if got := w.all(); len(got) != 1 || !strings.Contains(got[0], "NOPERM") {
		t.Fatalf("warnings = %q; want one naming the refusal", got)
	}
}
