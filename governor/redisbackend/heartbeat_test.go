package redisbackend_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/internal/redistest"
)

// perLease hides the backend's RenewBatch: a Governor on it renews each
// lease with its own call, as before batched heartbeats.
type perLease struct{ governor.Backend }

// heartbeatLoad holds n leases (one per resource) in one Governor on
// addr with ttl (heartbeat ttl/3), lets the heartbeats settle, and
// returns the script calls (EVALSHA) per second and redis-server's CPU
// per second over window.
func heartbeatLoad(tb testing.TB, addr string, n int, ttl, window time.Duration, batched bool) (calls, cpu float64) {
	return heartbeatLoadOn(tb, []string{addr}, redis.NewClient(&redis.Options{Addr: addr, PoolSize: 16}), n, ttl, window, batched)
}

// heartbeatLoadOn is heartbeatLoad on client rdb (closed at return),
// counting over the masters at addrs.
func heartbeatLoadOn(tb testing.TB, addrs []string, rdb redis.UniversalClient, n int, ttl, window time.Duration, batched bool) (calls, cpu float64) {
	tb.Helper()
	ctx := context.Background()
	defer rdb.Close()
	var masters []*redis.Client
	for _, a := range addrs {
		m := redis.NewClient(&redis.Options{Addr: a})
		defer m.Close()
		masters = append(masters, m)
	}
	be, err := redisbackend.New(ctx, rdb)
	if err != nil {
		tb.Fatal(err)
	}
	var b governor.Backend = be
	if !batched {
		b = perLease{be}
	}
	g, err := governor.New(b, governor.Options{Project: "hb-" + strconv.FormatBool(batched) + strconv.Itoa(n), TTL: ttl})
	if err != nil {
		tb.Fatal(err)
	}
	defer g.Close()
	for i := 0; i < n; i++ {
		if _, err := g.Acquire(ctx, "r"+strconv.Itoa(i), governor.AcquireOptions{Limit: 1}); err != nil {
			tb.Fatal(err)
		}
	}
	// Every lease's first renewal comes on its own timer; from then on
	// renewals due close together go together.
	time.Sleep(3 * ttl)
	cpu0 := 0.0
	for _, m := range masters {
		if err := m.ConfigResetStat(ctx).Err(); err != nil {
			tb.Fatal(err)
		}
		cpu0 += serverCPU(tb, m)
	}
	start := time.Now()
	time.Sleep(window)
	el := time.Since(start).Seconds()
	for _, m := range masters {
		info, err := m.Info(ctx, "commandstats").Result()
		if err != nil {
			tb.Fatal(err)
		}
		cpu += serverCPU(tb, m)
		for _, line := range strings.Split(info, "\n") {
			if strings.HasPrefix(line, "cmdstat_evalsha:") || strings.HasPrefix(line, "cmdstat_eval:") {
				i := strings.Index(line, "calls=")
				v, _, _ := strings.Cut(line[i+6:], ",")
				c, _ := strconv.ParseFloat(v, 64)
				calls += c
			}
		}
	}
	cpu = (cpu - cpu0) / el
	return calls / el, cpu
}

// serverCPU is redis-server's CPU time so far, in seconds (INFO cpu).
func serverCPU(tb testing.TB, rdb *redis.Client) float64 {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		tb.Fatal(err)
	}
	var sum float64
	for _, line := range strings.Split(info, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		if k == "used_cpu_user" || k == "used_cpu_sys" {
			f, _ := strconv.ParseFloat(v, 64)
			sum += f
		}
	}
	return sum
}

// TestHeartbeatsBatched: a process holding 200 leases renews them in a
// few calls per heartbeat, not one call per lease: over two seconds of
// 500 ms heartbeats, per-lease renewals would be about 800 calls; batched
// they must be under a quarter of that (a tenth failed at 45/s under load
// 25, where late renewals are retried: the test tells batching from
// per-lease renewal, not how few calls a loaded machine makes).
func TestHeartbeatsBatched(t *testing.T) {
	s := redistest.Start(t)
	perSec, _ := heartbeatLoad(t, s.Addr, 200, 1500*time.Millisecond, 2*time.Second, true)
	t.Logf("200 leases, heartbeat 500ms: %.1f script calls/s", perSec)
	if perLeaseRate := 200 / 0.5; perSec > perLeaseRate/4 {
		t.Fatalf("%.1f script calls/s for 200 leases heartbeating every 500ms; per-lease renewals make %.0f/s, batched must stay under %.0f/s",
			perSec, perLeaseRate, perLeaseRate/4)
	}
}

// BenchmarkHeartbeats: renewal calls per second for one process holding
// 1,000 leases (one per resource, TTL 3s, heartbeat 1s), each lease
// renewed with its own call (per-lease, as before) and batched; and what
// they cost redis-server in CPU.
//
//	go test -run '^$' -bench Heartbeats -benchtime 1x ./governor/redisbackend/
func BenchmarkHeartbeats(b *testing.B) {
	s := redistest.Start(b)
	c := redistest.StartCluster(b, 3)
	for _, cluster := range []bool{false, true} {
		for _, batched := range []bool{false, true} {
			name := "per-lease"
			if batched {
				name = "batched"
			}
			if cluster {
				name = "cluster-3-" + name
			}
			b.Run(name, func(b *testing.B) {
				var calls, cpu float64
				for i := 0; i < b.N; i++ {
					addrs := []string{s.Addr}
					var rdb redis.UniversalClient = redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: 16})
					if cluster {
						addrs = c.Addrs()
						rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, PoolSize: 16})
					}
					n, u := heartbeatLoadOn(b, addrs, rdb, 1000, 3*time.Second, 5*time.Second, batched)
					calls += n
					cpu += u
				}
				b.ReportMetric(calls/float64(b.N), "calls/s")
				b.ReportMetric(cpu/float64(b.N)*100, "server-cpu-%")
			})
		}
	}
}
