package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/redisbackend"
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
	code, _, errs = cli(t, append(g, "--allow-eviction", "--loss-quarantine=maybe", "slots")...)
	if code != 125 || !strings.Contains(errs, `"maybe" is not true or false`) || !strings.Contains(errs, "--loss-quarantine") {
		t.Fatalf("--loss-quarantine=maybe: exit %d %q; want 125 naming the value and flag", code, errs)
	}
	if code, _, errs = cli(t, append(g, "--allow-eviction", "--loss-quarantine=false", "slots")...); code != 0 {
		t.Fatalf("--loss-quarantine=false: exit %d %q", code, errs)
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

// One resource whose events key holds something else does not break
// `events` for the project: the others are listed, the bad one is named,
// and the exit is 125.
func TestCLIEventsOneBadKey(t *testing.T) {
	s := redistest.Start(t)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer rdb.Close()
	b, err := redisbackend.New(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, res := range []string{"good", "bad"} {
		key := governor.Key{Project: "clitest", Resource: res}
		r, err := b.Acquire(ctx, governor.Request{Key: key, ID: "l-" + res, Limit: 1, Weight: 1, TTL: time.Minute, New: true})
		if err != nil || r.Outcome != governor.Granted {
			t.Fatalf("acquire %s: %v %v", res, r.Outcome, err)
		}
		if err := b.Record(ctx, key, governor.Event{Kind: eventkind.Lost, LeaseID: "l-" + res, Token: r.Token, Detail: "a test"}); err != nil {
			t.Fatal(err)
		}
	}
	bad := redisbackend.Keys(governor.Key{Project: "clitest", Resource: "bad"})
	if err := rdb.Del(ctx, bad[len(bad)-1]).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, bad[len(bad)-1], "not a stream", 0).Err(); err != nil {
		t.Fatal(err)
	}
	code, out, errs := cli(t, "--backend", "redis", "--redis-url", s.URL(), "--config", emptyConfig(t), "events")
	if code != 125 || !strings.Contains(out, "good") || !strings.Contains(out, "lost") || !strings.Contains(errs, "events of bad") {
		t.Fatalf("events with one bad key: exit %d, stdout %q, stderr %q; want 125, the good resource listed, the bad one named", code, out, errs)
	}
}
