package main

import (
	"context"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/internal/redistest"
)

// A Redis that can evict governor's keys is refused with exit 125 naming
// the way out; --allow-eviction (or redis.allow_eviction) runs anyway. A
// server whose policy cannot be read gets one warning line.
func TestCLIEvictionPolicy(t *testing.T) {
	s := redistest.Start(t)
	admin := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer admin.Close()
	if err := admin.ConfigSet(context.Background(), "maxmemory-policy", "volatile-lru").Err(); err != nil {
		t.Fatal(err)
	}
	g := []string{"--backend", "redis", "--redis-url", s.URL(), "--config", emptyConfig(t)}
	code, _, errs := cli(t, append(g, "acquire", "heavy", "--limit", "1")...)
	if code != 125 || !strings.Contains(errs, "volatile-lru") || !strings.Contains(errs, "--allow-eviction") {
		t.Fatalf("acquire on volatile-lru: exit %d %q; want 125 naming the policy and --allow-eviction", code, errs)
	}
	if code, _, errs = cli(t, append(g, "--allow-eviction", "acquire", "heavy", "--limit", "1")...); code != 0 {
		t.Fatalf("acquire --allow-eviction: exit %d %q", code, errs)
	}
	t.Setenv("GOVERNOR_REDIS_ALLOW_EVICTION", "true")
	if code, _, errs = cli(t, append(g, "slots")...); code != 0 {
		t.Fatalf("slots with GOVERNOR_REDIS_ALLOW_EVICTION=true: exit %d %q", code, errs)
	}

	m := miniredis.RunT(t)
	code, _, errs = cli(t, "--backend", "redis", "--redis-url", "redis://"+m.Addr()+"/0", "--config", emptyConfig(t), "slots")
	if code != 0 || strings.Count(errs, "could not be checked") != 1 || strings.Count(errs, "\n") != 1 {
		t.Fatalf("slots on miniredis: exit %d %q; want 0 and one warning line", code, errs)
	}
}
