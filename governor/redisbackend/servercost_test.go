package redisbackend_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/internal/redistest"
)

// BenchmarkServerCost reports the server's side of each uncontended
// path, from INFO commandstats over b.N calls on b.N warmed-up resources:
// <path>-us is the evalsha usec_per_call (the whole script, the Redis
// commands it runs included) and <path>-calls the commands it runs. raw
// is a trivial script, for scale.
//
//	go test -run '^$' -bench ServerCost ./governor/redisbackend/
func BenchmarkServerCost(b *testing.B) {
	s := redistest.Start(b)
	rdb := newClient(b, s.Addr, 4)
	ctx := context.Background()
	be, err := redisbackend.New(ctx, rdb)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = be.Close() })
	key := func(i int) governor.Key { return governor.Key{Project: "cost", Resource: "r" + strconv.Itoa(i)} }
	id := func(i int) string { return "lease-" + strconv.Itoa(i) }
	acquire := func(i int) {
		res, err := be.Acquire(ctx, governor.Request{Key: key(i), ID: id(i), Limit: 1, Weight: 1, TTL: time.Minute,
			QueueTTL: time.Minute, New: true, Declaration: benchDecl})
		if err != nil || res.Outcome != governor.Granted {
			b.Fatal(err, res.Outcome)
		}
	}
	release := func(i int) {
		if err := be.Release(ctx, key(i), id(i), ""); err != nil {
			b.Fatal(err)
		}
	}
	renew := func(i int) {
		if _, err := be.Renew(ctx, governor.Renewal{Key: key(i), ID: id(i), Secret: "", Token: 0, TTL: time.Minute}); err != nil {
			b.Fatal(err)
		}
	}
	raw := func(i int) {
		if err := trivial.Run(ctx, rdb, []string{"k"}).Err(); err != nil {
			b.Fatal(err)
		}
	}
	// Warm up: every resource has been used once, every script is loaded.
	for i := 0; i < b.N; i++ {
		acquire(i)
		renew(i)
		release(i)
	}
	raw(0)
	b.ResetTimer()
	for _, p := range []struct {
		name string
		op   func(int)
	}{{"raw", raw}, {"acquire", acquire}, {"renew", renew}, {"release", release}} {
		if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		for i := 0; i < b.N; i++ {
			p.op(i)
		}
		info, err := rdb.Info(ctx, "commandstats").Result()
		if err != nil {
			b.Fatal(err)
		}
		usec, evals, calls := scriptStats(info)
		b.ReportMetric(usec/float64(evals), p.name+"-us")
		b.ReportMetric(float64(calls)/float64(evals), p.name+"-calls")
	}
}

// scriptStats reads INFO commandstats: the total usec of evalsha and eval,
// their calls, and the calls of every other command but INFO and CONFIG.
func scriptStats(info string) (usec float64, evals, calls int64) {
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
		if !ok || !strings.HasPrefix(line, "cmdstat_") || name == "info" || strings.HasPrefix(name, "config") {
			continue
		}
		var n int64
		var u float64
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "calls":
				n, _ = strconv.ParseInt(v, 10, 64)
			case "usec":
				u, _ = strconv.ParseFloat(v, 64)
			}
		}
		if name == "evalsha" || name == "eval" {
			usec += u
			evals += n
		} else {
			calls += n
		}
	}
	return usec, evals, calls
}
