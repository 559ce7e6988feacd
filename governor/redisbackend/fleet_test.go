package redisbackend_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/internal/redistest"
)

// The fleet ceiling: simulated agents (P processes, each its own client,
// backend and Governor, × G goroutines) taking and freeing R resources
// of one slot each (a goroutine that finds its resource held queues and
// is handed it), against one redis-server and a three-master Cluster:
//
//	go test -run '^$' -bench Fleet -benchtime 1x ./governor/redisbackend/
//
// It reports grants/s at saturation (closed loop: every goroutine takes
// and frees without pause), per shard, and the CPU each grant costs the
// servers; acquire p50/p99 under an open-loop load of 50% and 90% of
// that; and Redis memory per holder and per waiter (100,000 queued).
// FLEET_P, FLEET_G, FLEET_R and FLEET_SECONDS change the load.

func fleetEnv(name string, def int) int {
	if v, err := strconv.Atoi(strings.TrimSpace(os.Getenv(name))); err == nil && v > 0 {
		return v
	}
	return def
}

type fleetTopology struct {
	name   string
	addrs  []string // every master, for INFO
	client func() redis.UniversalClient
}

func BenchmarkFleet(b *testing.B) {
	p, g, r := fleetEnv("FLEET_P", 4), fleetEnv("FLEET_G", 16), fleetEnv("FLEET_R", 1000)
	d := time.Duration(fleetEnv("FLEET_SECONDS", 3)) * time.Second
	s := redistest.Start(b)
	c := redistest.StartCluster(b, 3)
	for _, tp := range []fleetTopology{
		{"redis-1", []string{s.Addr}, func() redis.UniversalClient {
			return redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: g + 8})
		}},
		{"cluster-3", c.Addrs(), func() redis.UniversalClient {
			return redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), PoolSize: g + 8})
		}},
	} {
		b.Run(tp.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				f := newFleet(b, tp, p, r)
				sat, cpu, waited := f.closedLoop(b, g, d)
				b.ReportMetric(sat, "grants/s")
				b.ReportMetric(sat/float64(len(tp.addrs)), "grants/s/shard")
				b.ReportMetric(cpu, "server-cpu-us/grant")
				b.ReportMetric(waited*100, "handed-off-%")
				for _, load := range []float64{0.5, 0.9} {
					lats, got := f.openLoop(b, load*sat, d)
					b.ReportMetric(got, fmt.Sprintf("grants/s@%.0f%%", load*100))
					b.ReportMetric(quantileMS(lats, 0.5), fmt.Sprintf("p50-ms@%.0f%%", load*100))
					b.ReportMetric(quantileMS(lats, 0.99), fmt.Sprintf("p99-ms@%.0f%%", load*100))
				}
				f.close()
			}
		})
	}
	b.Run("memory", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			holder, waiter := fleetMemory(b, s.Addr, 10_000, fleetEnv("FLEET_WAITERS", 100_000))
			b.ReportMetric(holder, "bytes/holder")
			b.ReportMetric(waiter, "bytes/waiter")
		}
	})
}

type fleet struct {
	tp      fleetTopology
	r       int
	project string
	gs      []*governor.Governor
	rdbs    []redis.UniversalClient
	info    []*redis.Client // one per master
}

func newFleet(b *testing.B, tp fleetTopology, p, r int) *fleet {
	f := &fleet{tp: tp, r: r, project: "fleet-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	for i := 0; i < p; i++ {
		rdb := tp.client()
		be, err := redisbackend.New(context.Background(), rdb)
		if err != nil {
			b.Fatal(err)
		}
		g, err := governor.New(be, governor.Options{Project: f.project})
		if err != nil {
			b.Fatal(err)
		}
		f.gs, f.rdbs = append(f.gs, g), append(f.rdbs, rdb)
	}
	for _, a := range tp.addrs {
		f.info = append(f.info, redis.NewClient(&redis.Options{Addr: a}))
	}
	return f
}

func (f *fleet) close() {
	for i, g := range f.gs {
		_ = g.Close()
		_ = f.rdbs[i].Close()
	}
	for _, c := range f.info {
		_ = c.Close()
	}
}

// cpu is the CPU time all masters used so far, in seconds.
func (f *fleet) cpu(b *testing.B) float64 {
	var sum float64
	for _, c := range f.info {
		sum += serverCPU(b, c)
	}
	return sum
}

// one takes a random resource (waiting for it if held) and frees it,
// returning how long the acquire took and whether it queued.
func (f *fleet) one(b *testing.B, g *governor.Governor) (time.Duration, bool) {
	queued := false
	start := time.Now()
	l, err := g.Acquire(context.Background(), "f"+strconv.Itoa(rand.IntN(f.r)),
		governor.AcquireOptions{Limit: 1, Mode: governor.Wait, OnQueued: func(governor.Result) { queued = true }})
	took := time.Since(start)
	if err != nil {
		b.Fatal(err)
	}
	if err := l.Release(); err != nil {
		b.Fatal(err)
	}
	return took, queued
}

// closedLoop runs g goroutines per process, each taking and freeing
// without pause, for d: grants/s, server CPU µs per grant, and the share
// of grants that queued first (handed off by a release).
func (f *fleet) closedLoop(b *testing.B, g int, d time.Duration) (perSec, cpuUS, waited float64) {
	var n, q atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	cpu0, start := f.cpu(b), time.Now()
	for _, gov := range f.gs {
		for range g {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, queued := f.one(b, gov); queued {
						q.Add(1)
					}
					n.Add(1)
				}
			}()
		}
	}
	time.Sleep(d)
	close(stop)
	wg.Wait()
	el := time.Since(start).Seconds()
	grants := float64(max(n.Load(), 1))
	return float64(n.Load()) / el, (f.cpu(b) - cpu0) * 1e6 / grants, float64(q.Load()) / grants
}

// openLoop starts acquires at rate per second for d (each in its own
// goroutine, spread over the processes, whatever the ones before are
// doing), and returns each acquire's latency and the grants/s achieved.
func (f *fleet) openLoop(b *testing.B, rate float64, d time.Duration) ([]time.Duration, float64) {
	const tick = 10 * time.Millisecond
	var mu sync.Mutex
	var lats []time.Duration
	var wg sync.WaitGroup
	start := time.Now()
	due := 0.0
	k := 0
	for t := time.NewTicker(tick); time.Since(start) < d; <-t.C {
		due += rate * tick.Seconds()
		for ; due >= 1; due-- {
			k++
			wg.Add(1)
			go func(k int) {
				defer wg.Done()
				took, _ := f.one(b, f.gs[k%len(f.gs)])
				mu.Lock()
				lats = append(lats, took)
				mu.Unlock()
			}(k)
		}
	}
	wg.Wait()
	return lats, float64(len(lats)) / time.Since(start).Seconds()
}

func quantileMS(lats []time.Duration, q float64) float64 {
	if len(lats) == 0 {
		return 0
	}
	s := slices.Clone(lats)
	slices.Sort(s)
	return float64(s[int(q*float64(len(s)-1))].Microseconds()) / 1000
}

// fleetMemory returns Redis's used_memory per holder (holders on one
// resource, one slot each) and per waiter (waiters queued on one held
// resource), from INFO memory before and after.
func fleetMemory(b *testing.B, addr string, holders, waiters int) (perHolder, perWaiter float64) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 32})
	defer rdb.Close()
	be, err := redisbackend.New(ctx, rdb)
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	used := func() float64 {
		info, err := rdb.Info(ctx, "memory").Result()
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
				f, _ := strconv.ParseFloat(v, 64)
				return f
			}
		}
		b.Fatal("INFO memory has no used_memory")
		return 0
	}
	project := "mem-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	// Many at once, as a fleet would; ids prefix-1 to prefix-n.
	fill := func(key governor.Key, limit int, prefix string, n int, mode governor.Mode, want governor.Outcome) {
		var wg sync.WaitGroup
		var next atomic.Int64
		for w := 0; w < 32; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := next.Add(1)
					if i > int64(n) {
						return
					}
					res, err := be.Acquire(ctx, governor.Request{Key: key, ID: prefix + "-" + strconv.FormatInt(i, 10), Limit: limit,
						Weight: 1, TTL: time.Hour, Mode: mode, QueueTTL: time.Hour, New: true, Declaration: benchDecl})
					if err != nil || res.Outcome != want {
						b.Error(err, res.Outcome)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	// The resources' own state (limit, counters) comes first, uncounted.
	hk := governor.Key{Project: project, Resource: "holders"}
	fill(hk, holders+1, "first", 1, governor.Fail, governor.Granted)
	before := used()
	fill(hk, holders+1, "h", holders, governor.Fail, governor.Granted)
	perHolder = (used() - before) / float64(holders)
	wk := governor.Key{Project: project, Resource: "waiters"}
	fill(wk, 1, "holder", 1, governor.Fail, governor.Granted)
	fill(wk, 1, "first", 1, governor.Wait, governor.Queued)
	before = used()
	fill(wk, 1, "w", waiters, governor.Wait, governor.Queued)
	perWaiter = (used() - before) / float64(waiters)
	// What an enqueue costs behind the queue just built, against one
	// behind an empty queue (timed as 1,000 enqueues each).
	enqueue := func(key governor.Key, prefix string) float64 {
		start := time.Now()
		fill(key, 1, prefix, 1000, governor.Wait, governor.Queued)
		return float64(time.Since(start).Microseconds()) / 1000
	}
	short := governor.Key{Project: project, Resource: "short-queue"}
	fill(short, 1, "holder", 1, governor.Fail, governor.Granted)
	b.ReportMetric(enqueue(short, "x"), "enqueue-us@1k")
	b.ReportMetric(enqueue(wk, "x"), fmt.Sprintf("enqueue-us@%dk", waiters/1000))
	return perHolder, perWaiter
}
