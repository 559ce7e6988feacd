package redisbackend_test

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/leasetiming"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/internal/redistest"
)

// Run side by side in one process, against one server:
//
//	go test -run '^$' -bench . -benchtime 3s ./governor/redisbackend/
//
// BenchmarkUncontended/raw-evalsha is the ceiling: one trivial script per
// op. BenchmarkUncontended/governor does one acquire and one release per
// op (two scripts); the README reports pairs/s as a share of raw ops/s.

var trivial = redis.NewScript("return 1")

func newClient(b testing.TB, addr string, pool int) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: pool})
	b.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func benchGovernor(b testing.TB, rdb *redis.Client, project string) *governor.Governor {
	be, err := redisbackend.New(context.Background(), rdb)
	if err != nil {
		b.Fatal(err)
	}
	g, err := governor.New(be, governor.Options{Project: project})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = g.Close() })
	return g
}

func BenchmarkUncontended(b *testing.B) {
	s := redistest.Start(b)
	for _, par := range []int{1, 64} {
		rdb := newClient(b, s.Addr, par+8)
		b.Run(fmt.Sprintf("raw-evalsha/p%d", par), func(b *testing.B) {
			ctx := context.Background()
			trivial.Load(ctx, rdb)
			runParallel(b, par, func(i int) {
				if err := trivial.Run(ctx, rdb, []string{"k{" + strconv.Itoa(i) + "}"}).Err(); err != nil {
					b.Fatal(err)
				}
			})
		})
		// Two raw scripts per op: the ceiling of any design that takes two
		// round trips per acquire+release (50% of raw ops/s, less what
		// the machine's noise takes from the ratio).
		b.Run(fmt.Sprintf("two-raw-evalsha/p%d", par), func(b *testing.B) {
			ctx := context.Background()
			runParallel(b, par, func(i int) {
				for range 2 {
					if err := trivial.Run(ctx, rdb, []string{"k{" + strconv.Itoa(i) + "}"}).Err(); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
		// The backend alone, without the Lease machinery (heartbeat
		// goroutine, timers) of governor.Acquire: what the scripts and the
		// client cost.
		b.Run(fmt.Sprintf("backend/p%d", par), func(b *testing.B) { benchBackend(b, rdb, "backend-", par) })
		// The backend with a machine's witness (Witness), as the CLI and
		// the bridge open it: the file is read and written only when a
		// resource's incarnation is new to the process.
		b.Run(fmt.Sprintf("backend-witness/p%d", par), func(b *testing.B) {
			benchBackend(b, rdb, "witness-", par, redisbackend.Witness(b.TempDir(), s.Addr))
		})
		b.Run(fmt.Sprintf("governor/p%d", par), func(b *testing.B) {
			g := benchGovernor(b, rdb, "bench-"+strconv.Itoa(par))
			ctx := context.Background()
			runParallel(b, par, func(i int) {
				// Each goroutine its own resource: uncontended.
				l, err := g.Acquire(ctx, "r"+strconv.Itoa(i), governor.AcquireOptions{Limit: 1})
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Release(); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// benchBackend acquires and releases, par goroutines each on its own
// resource of project prefix+par, on a backend opened with opts.
func benchBackend(b *testing.B, rdb *redis.Client, prefix string, par int, opts ...redisbackend.Option) {
	be, err := redisbackend.New(context.Background(), rdb, opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = be.Close() })
	ctx := context.Background()
	var n atomic.Int64
	runParallel(b, par, func(i int) {
		key := governor.Key{Project: prefix + strconv.Itoa(par), Resource: "r" + strconv.Itoa(i)}
		id := "l" + strconv.FormatInt(n.Add(1), 10)
		res, err := be.Acquire(ctx, governor.Request{Key: key, ID: id, Limit: 1, Weight: 1, TTL: leasetiming.DefaultTTL,
			QueueTTL: 10 * time.Second, New: true, Declaration: benchDecl})
		if err != nil || res.Outcome != governor.Granted {
			b.Fatal(err, res.Outcome)
		}
		if err := be.Release(ctx, key, id, ""); err != nil {
			b.Fatal(err)
		}
	})
}

// benchDecl is a declaration of a typical size.
var benchDecl = governor.Declaration{Session: "host-1:12345", Host: "host-1", HostID: "0123456789abcdef0123456789abcdef",
	PID: 12345, StartTime: 987654, Command: "make test"}

// runParallel runs b.N calls of fn spread over par goroutines; fn gets
// its goroutine's index.
func runParallel(b *testing.B, par int, fn func(i int)) {
	var wg sync.WaitGroup
	per := b.N / par
	extra := b.N % par
	b.ResetTimer()
	for i := 0; i < par; i++ {
		n := per
		if i < extra {
			n++
		}
		wg.Add(1)
		go func(i, n int) {
			defer wg.Done()
			for j := 0; j < n; j++ {
				fn(i)
			}
		}(i, n)
	}
	wg.Wait()
}

// BenchmarkHandOff measures release-to-grant latency: a holder releases,
// the next waiter returns from Acquire. Reported as p50/p99 in ms, in two
// shapes side by side: processes (holder and waiter alternate between two
// backends, as two processes) and one-process (two goroutines sharing one
// Governor, the common agent shape).
func BenchmarkHandOff(b *testing.B) {
	for _, shape := range []string{"processes", "one-process"} {
		b.Run(shape, func(b *testing.B) {
			handOff(b, governor.AcquireOptions{Limit: 1, Mode: governor.Wait}, shape == "one-process")
		})
	}
}

// BenchmarkHandOffPolicy is BenchmarkHandOff under a queue policy with
// three classes (a reserve and a cap), fairness and fair_cap (issue 15:
// p50/p99 within 1.5x of plain FIFO).
func BenchmarkHandOffPolicy(b *testing.B) {
	handOff(b, governor.AcquireOptions{Limit: 1, Mode: governor.Wait, Policy: benchPolicy, Priority: "default", FairKey: "tenant-1"}, false)
}

var benchPolicy = governor.Policy{Classes: []governor.Class{{Name: "critical"}, {Name: "default"}, {Name: "batch", Cap: 1}},
	Fair: true, FairCap: 1, MaxQueue: 1000}

// handOff hands a slot between two Governors, or, when shared, between
// goroutines of one.
func handOff(b *testing.B, opts governor.AcquireOptions, shared bool) {
	s := redistest.Start(b)
	g1 := benchGovernor(b, newClient(b, s.Addr, 4), "handoff")
	g2 := g1
	if !shared {
		g2 = benchGovernor(b, newClient(b, s.Addr, 4), "handoff")
	}
	ctx := context.Background()
	lats := make([]time.Duration, 0, b.N)
	held, err := g1.Acquire(ctx, "baton", opts)
	if err != nil {
		b.Fatal(err)
	}
	gs := [2]*governor.Governor{g1, g2}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		next := gs[(i+1)%2]
		queued := make(chan struct{})
		type res struct {
			l  *governor.Lease
			at time.Time
		}
		got := make(chan res, 1)
		var once sync.Once
		go func() {
			o := opts
			o.OnQueued = func(governor.Result) { once.Do(func() { close(queued) }) }
			l, err := next.Acquire(ctx, "baton", o)
			if err != nil {
				panic(err)
			}
			got <- res{l, time.Now()}
		}()
		<-queued
		start := time.Now()
		if err := held.Release(); err != nil {
			b.Fatal(err)
		}
		r := <-got
		lats = append(lats, r.at.Sub(start))
		held = r.l
	}
	b.StopTimer()
	_ = held.Release()
	reportQuantiles(b, lats)
}

func reportQuantiles(b *testing.B, lats []time.Duration) {
	if len(lats) == 0 {
		return
	}
	sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
	q := func(p float64) float64 {
		return float64(lats[int(p*float64(len(lats)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}

// BenchmarkAcquireWithHolders: acquire+release latency on a resource that
// already has N live holders; p99 at 10,000 must stay within 2x of 10.
func BenchmarkAcquireWithHolders(b *testing.B) {
	s := redistest.Start(b)
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprintf("holders-%d", n), func(b *testing.B) {
			rdb := newClient(b, s.Addr, 16)
			project := "many-" + strconv.Itoa(n)
			be, err := redisbackend.New(context.Background(), rdb)
			if err != nil {
				b.Fatal(err)
			}
			defer be.Close()
			key := governor.Key{Project: project, Resource: "wide"}
			limit := n + 1
			for i := 0; i < n; i++ {
				_, err := be.Acquire(context.Background(), governor.Request{Key: key, ID: "h" + strconv.Itoa(i), Limit: limit,
					Weight: 1, TTL: time.Hour, QueueTTL: time.Minute, Declaration: governor.Declaration{Session: "filler"}})
				if err != nil {
					b.Fatal(err)
				}
			}
			lats := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				id := "x" + strconv.Itoa(i)
				res, err := be.Acquire(context.Background(), governor.Request{Key: key, ID: id, Limit: limit,
					Weight: 1, TTL: time.Minute, QueueTTL: time.Minute})
				if err != nil || res.Outcome != governor.Granted {
					b.Fatal(err, res.Outcome)
				}
				if err := be.Release(context.Background(), key, id, ""); err != nil {
					b.Fatal(err)
				}
				lats = append(lats, time.Since(start))
			}
			b.StopTimer()
			reportQuantiles(b, lats)
		})
	}
}

// TestReleaseCommandsIndependentOfWaiters counts the Redis commands a
// release runs (INFO commandstats) with 1 and with 200 waiters queued: a
// release must touch only the head, never the whole queue.
func TestReleaseCommandsIndependentOfWaiters(t *testing.T) {
	s := redistest.Start(t)
	rdb := newClient(t, s.Addr, 4)
	be := open(t, s.Addr)
	round := 0
	count := func(waiters int) int64 {
		round++
		key := governor.Key{Project: "cmds", Resource: "q" + strconv.Itoa(waiters) + "-" + strconv.Itoa(round)}
		req := func(id string, mode governor.Mode) governor.Request {
			return governor.Request{Key: key, ID: id, Limit: 1, Weight: 1, TTL: time.Minute, Mode: mode, QueueTTL: time.Minute}
		}
		if _, err := be.Acquire(context.Background(), req("holder", governor.Fail)); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < waiters; i++ {
			if _, err := be.Acquire(context.Background(), req("w"+strconv.Itoa(i), governor.Wait)); err != nil {
				t.Fatal(err)
			}
		}
		if err := rdb.ConfigResetStat(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		if err := be.Release(context.Background(), key, "holder", ""); err != nil {
			t.Fatal(err)
		}
		info, err := rdb.Info(context.Background(), "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		return commandCalls(info)
	}
	// The first release on a fresh server is EVALSHA, NOSCRIPT, then EVAL:
	// run one before counting, so that both counts are of EVALSHA alone.
	count(1)
	one, many := count(1), count(200)
	t.Logf("redis commands for one release: %d with 1 waiter, %d with 200 waiters", one, many)
	if many != one {
		t.Fatalf("a release ran %d commands with 200 waiters and %d with 1: it grows with the queue", many, one)
	}
}

// TestReleaseCommandsUnderPolicy: under a queue policy too, a release
// that hands the slot on runs as many Redis commands with 1 waiter as
// with 200 in one fair key, and as with 200 across 50 keys and 3
// classes (the bound is in the README, "Queue policies").
func TestReleaseCommandsUnderPolicy(t *testing.T) {
	s := redistest.Start(t)
	rdb := newClient(t, s.Addr, 4)
	be := open(t, s.Addr)
	classes := []string{"critical", "default", "batch"}
	round := 0
	count := func(waiters, keys, nclasses int) int64 {
		round++
		key := governor.Key{Project: "cmds", Resource: "p" + strconv.Itoa(round)}
		req := func(id string, mode governor.Mode, class, fair string) governor.Request {
			return governor.Request{Key: key, ID: id, Limit: 1, Weight: 1, TTL: time.Minute, Mode: mode, QueueTTL: time.Minute,
				Policy: benchPolicy.Encode(), Priority: class, FairKey: fair}
		}
		if _, err := be.Acquire(context.Background(), req("holder", governor.Fail, "critical", "k0")); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < waiters; i++ {
			// The lowest class first, so that the head is the last queued.
			class := classes[len(classes)-1-(i*nclasses/waiters)]
			res, err := be.Acquire(context.Background(), req("w"+strconv.Itoa(i), governor.Wait, class, "k"+strconv.Itoa(1+i%keys)))
			if err != nil || res.Outcome != governor.Queued {
				t.Fatal(err, res.Outcome)
			}
		}
		if err := rdb.ConfigResetStat(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		if err := be.Release(context.Background(), key, "holder", ""); err != nil {
			t.Fatal(err)
		}
		info, err := rdb.Info(context.Background(), "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		st, err := be.Status(context.Background(), key)
		if err != nil || len(st.Holders) != 1 {
			t.Fatalf("after the release: %v, holders %+v", err, st.Holders)
		}
		return commandCalls(info)
	}
	count(1, 1, 1) // loads the scripts (see above)
	one, oneKey, spread := count(1, 1, 1), count(200, 1, 1), count(200, 50, 3)
	t.Logf("redis commands for one release under a policy: %d with 1 waiter, %d with 200 in one key, %d with 200 in 50 keys and 3 classes",
		one, oneKey, spread)
	if oneKey != one || spread != one {
		t.Fatalf("a release ran %d, %d and %d commands: it grows with the queue, the keys or the classes", one, oneKey, spread)
	}
}

// commandCalls sums calls= over INFO commandstats, leaving out INFO and
// CONFIG themselves.
func commandCalls(info string) int64 {
	var total int64
	for _, line := range strings.Split(info, "\n") {
		if !strings.HasPrefix(line, "cmdstat_") || strings.HasPrefix(line, "cmdstat_info") || strings.HasPrefix(line, "cmdstat_config") {
			continue
		}
		i := strings.Index(line, "calls=")
		if i < 0 {
			continue
		}
		rest := line[i+6:]
		if j := strings.IndexByte(rest, ','); j >= 0 {
			rest = rest[:j]
		}
		n, _ := strconv.ParseInt(rest, 10, 64)
		total += n
	}
	return total
}
