// Command peers runs governor and two peer Redis lock libraries,
// bsm/redislock and go-redsync/redsync, side by side against one
// redis-server it starts itself (127.0.0.1, a free port, no persistence),
// in rotating turns so that the shared machine's noise falls on all of
// them alike:
//
//	cd bench/peers && go run .
//
// It reports uncontended acquire+release pairs/s at 1 and 64 goroutines
// (each goroutine its own lock), as a share of raw EVALSHA ops/s of
// `return 1` measured in the same round, and the hand-off latency from a
// release to the next waiter's grant (p50/p99).
//
// It is a module of its own (go.mod beside this file, with a replace to
// the repository root) so that governor's module does not depend on the
// peers; `go test ./...` at the root does not enter it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/leasetiming"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/internal/redistest"
)

func main() {
	var c config
	flag.DurationVar(&c.turn, "turn", time.Second, "how long each contender runs per turn")
	flag.IntVar(&c.rounds, "rounds", 5, "rounds of turns (the order rotates every round)")
	flag.IntVar(&c.handoffs, "handoffs", 200, "hand-offs measured per contender (redsync: a tenth, its retry delay is ~100 ms)")
	flag.StringVar(&c.only, "only", "", "comma-separated contenders to run (default all): "+strings.Join(names(), ","))
	flag.Parse()
	if err := run(os.Stdout, c); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

type config struct {
	turn     time.Duration
	rounds   int
	handoffs int
	only     string
}

// A contender takes and frees one lock per pair; waitFor blocks until it
// holds the lock (retrying as the library does).
type contender struct {
	name string
	// pairs returns a function that takes and frees lock key once.
	pair func(ctx context.Context, key string) error
	// acquire takes key (wait: until free), returning its release.
	acquire func(ctx context.Context, key string, wait bool) (func() error, error)
	// queued, when set, reports that the waiter is known to be waiting
	// (governor's OnQueued); otherwise the hand-off waits a moment after
	// starting the waiter.
	hasQueued bool
	// handOffOnly: a shape of the hand-off alone (no pairs of its own).
	handOffOnly bool
	rdb         *redis.Client // the client it uses, for INFO
}

func names() []string {
	return []string{"raw-evalsha", "governor", "governor-1proc", "redislock", "redsync"}
}

var trivial = redis.NewScript("return 1")

func run(out io.Writer, c config) error {
	if c.rounds < 1 || c.turn <= 0 || c.handoffs < 1 {
		return fmt.Errorf("-rounds %d, -turn %s, -handoffs %d: each must be positive", c.rounds, c.turn, c.handoffs)
	}
	want := map[string]bool{}
	for _, n := range strings.Split(c.only, ",") {
		if n = strings.TrimSpace(n); n != "" {
			if !slices.Contains(names(), n) {
				return fmt.Errorf("-only %q: unknown contender %q; want some of %s", c.only, n, strings.Join(names(), ","))
			}
			want[n] = true
		}
	}
	if ok, err := redistest.Available(); err != nil || !ok {
		return fmt.Errorf("redis-server is needed (apt-get install -y redis-server): %v", err)
	}
	dir, err := os.MkdirTemp("", "governor-peers-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	srv, err := redistest.StartServer(dir)
	if err != nil {
		return err
	}
	defer srv.Stop()
	ctx := context.Background()
	fmt.Fprintf(out, "redis-server on %s; %d rounds, %s per turn\n", srv.Addr, c.rounds, c.turn)

	type level struct {
		par int
		rdb *redis.Client
		cs  []*contender
	}
	var levels []level
	for _, par := range []int{1, 64} {
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: par + 8})
		defer rdb.Close()
		cs, closeAll, err := contenders(ctx, rdb, "p"+strconv.Itoa(par))
		if err != nil {
			return err
		}
		defer closeAll()
		var chosen []*contender
		for _, x := range cs {
			if len(want) == 0 || want[x.name] || x.name == "raw-evalsha" {
				chosen = append(chosen, x)
			}
		}
		levels = append(levels, level{par, rdb, chosen})
	}
	var pairing []*contender // those that run pairs
	for _, x := range levels[0].cs {
		if !x.handOffOnly {
			pairing = append(pairing, x)
		}
	}

	// Pairs/s, rotating turns: per round, each contender runs once at
	// each level, raw first and last of its level's turns in turn.
	share := map[string]map[int][]float64{} // name -> par -> share of raw, per round
	rate := map[string]map[int][]float64{}
	clientCPU, serverCPU := map[string]map[int][]float64{}, map[string]map[int][]float64{}
	for r := 0; r < c.rounds; r++ {
		for _, lv := range levels {
			// rotate the order each round
			order := slices.Clone(lv.cs)
			k := r % len(order)
			order = append(order[k:], order[:k]...)
			got := map[string]turnResult{}
			for _, x := range order {
				if x.handOffOnly {
					continue
				}
				t, err := measure(ctx, x, lv.par, c.turn, fmt.Sprintf("r%d", r))
				if err != nil {
					return fmt.Errorf("%s at %d goroutines: %w", x.name, lv.par, err)
				}
				got[x.name] = t
			}
			for name, t := range got {
				if share[name] == nil {
					share[name], rate[name] = map[int][]float64{}, map[int][]float64{}
					clientCPU[name], serverCPU[name] = map[int][]float64{}, map[int][]float64{}
				}
				share[name][lv.par] = append(share[name][lv.par], t.perSec/got["raw-evalsha"].perSec)
				rate[name][lv.par] = append(rate[name][lv.par], t.perSec)
				clientCPU[name][lv.par] = append(clientCPU[name][lv.par], t.clientUS)
				serverCPU[name][lv.par] = append(serverCPU[name][lv.par], t.serverUS)
			}
		}
	}
	fmt.Fprintf(out, "\nuncontended acquire+release pairs/s, as a share of raw EVALSHA ops/s in the same round (median [min–max] over %d rounds)\n", c.rounds)
	fmt.Fprintf(out, "%-14s %28s %28s\n", "", "1 goroutine", "64 goroutines")
	for _, x := range pairing {
		fmt.Fprintf(out, "%-14s", x.name)
		for _, lv := range levels {
			s, n := share[x.name][lv.par], rate[x.name][lv.par]
			fmt.Fprintf(out, " %6.0f/s %.2f [%.2f–%.2f]", median(n), median(s), slices.Min(s), slices.Max(s))
		}
		fmt.Fprintln(out)
	}
	// guard collects the ratios printed last, one `RATIO name=value` a
	// line, for CI to keep (never asserted on: this machine is shared).
	var guard []string
	ratio := func(name string, v float64) { guard = append(guard, fmt.Sprintf("RATIO %s=%.3f", name, v)) }
	both := share["redislock"] != nil && share["governor"] != nil
	if ref := share["redislock"]; both {
		fmt.Fprintf(out, "governor / redislock pairs/s:")
		for _, lv := range levels {
			var ratios []float64
			for i := range ref[lv.par] {
				ratios = append(ratios, share["governor"][lv.par][i]/ref[lv.par][i])
			}
			fmt.Fprintf(out, "  %d goroutines %.2f× [%.2f–%.2f]", lv.par, median(ratios), slices.Min(ratios), slices.Max(ratios))
			ratio(fmt.Sprintf("governor/redislock.pairs.%d", lv.par), median(ratios))
		}
		fmt.Fprintln(out)
	}

	// What bounds pairs/s on this machine: the CPU each pair costs the
	// client process and redis-server (all of it, whatever core).
	fmt.Fprintf(out, "\nCPU per pair, µs (median over rounds): client process + redis-server\n")
	fmt.Fprintf(out, "%-14s %22s %22s\n", "", "1 goroutine", "64 goroutines")
	for _, x := range pairing {
		fmt.Fprintf(out, "%-14s", x.name)
		for _, lv := range levels {
			fmt.Fprintf(out, "   %6.1f + %6.1f     ", median(clientCPU[x.name][lv.par]), median(serverCPU[x.name][lv.par]))
		}
		fmt.Fprintln(out)
	}
	for _, lv := range levels {
		if both {
			ratio(fmt.Sprintf("governor/redislock.client-cpu.%d", lv.par), median(clientCPU["governor"][lv.par])/median(clientCPU["redislock"][lv.par]))
			ratio(fmt.Sprintf("governor/redislock.server-cpu.%d", lv.par), median(serverCPU["governor"][lv.par])/median(serverCPU["redislock"][lv.par]))
		}
	}

	fmt.Fprintf(out, "\nhand-off, release -> next waiter (another client) holds the lock\n")
	p50 := map[string]float64{}
	for _, x := range levels[0].cs {
		if x.acquire == nil {
			continue
		}
		n := c.handoffs
		if x.name == "redsync" {
			n = max(1, n/10)
		}
		lats, err := handOffs(ctx, x, n)
		if err != nil {
			return fmt.Errorf("%s hand-off: %w", x.name, err)
		}
		slices.Sort(lats)
		fmt.Fprintf(out, "%-14s p50 %7.2f ms  p99 %7.2f ms  (%d hand-offs)\n", x.name, ms(quantile(lats, 0.5)), ms(quantile(lats, 0.99)), len(lats))
		p50[x.name] = ms(quantile(lats, 0.5))
	}
	for _, r := range [][2]string{{"governor-1proc", "governor"}, {"governor", "redislock"}, {"governor-1proc", "redislock"}} {
		if a, b := p50[r[0]], p50[r[1]]; a > 0 && b > 0 {
			ratio(r[0]+"/"+r[1]+".handoff-p50", a/b)
		}
	}
	fmt.Fprintln(out)
	for _, line := range guard {
		fmt.Fprintln(out, line)
	}
	return nil
}

// contenders builds each contender on rdb; locks are named under prefix.
func contenders(ctx context.Context, rdb *redis.Client, prefix string) ([]*contender, func(), error) {
	if err := trivial.Load(ctx, rdb).Err(); err != nil {
		return nil, nil, err
	}
	raw := &contender{name: "raw-evalsha", pair: func(ctx context.Context, key string) error {
		return trivial.Run(ctx, rdb, []string{key}).Err()
	}}

	// governor: through the Governor, as a user takes a lease (heartbeat
	// armed, declaration, fencing token, queue). Two governors, as two
	// processes, for the hand-off.
	var gs [2]*governor.Governor
	var closers []func()
	closeAll := func() {
		for _, f := range closers {
			f()
		}
	}
	for i := range gs {
		be, err := redisbackend.New(ctx, rdb)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		g, err := governor.New(be, governor.Options{Project: "peers-" + prefix})
		if err != nil {
			_ = be.Close()
			closeAll()
			return nil, nil, err
		}
		gs[i] = g
		closers = append(closers, func() { _ = g.Close() })
	}
	var turn atomic.Int64
	// govAcquire takes key through the Governor pick returns.
	govAcquire := func(pick func() *governor.Governor) func(ctx context.Context, key string, wait bool) (func() error, error) {
		return func(ctx context.Context, key string, wait bool) (func() error, error) {
			o := governor.AcquireOptions{Limit: 1}
			if wait {
				o.Mode = governor.Wait
				if q, ok := ctx.Value(queuedKey{}).(func()); ok {
					o.OnQueued = func(governor.Result) { q() }
				}
			}
			l, err := pick().Acquire(ctx, key, o)
			if err != nil {
				return nil, err
			}
			return l.Release, nil
		}
	}
	gov := &contender{name: "governor", hasQueued: true,
		pair: func(ctx context.Context, key string) error {
			l, err := gs[0].Acquire(ctx, key, governor.AcquireOptions{Limit: 1})
			if err != nil {
				return err
			}
			return l.Release()
		},
		// The hand-off across processes: holder and waiter alternate
		// between the two Governors.
		acquire: govAcquire(func() *governor.Governor { return gs[turn.Add(1)%2] })}
	// The hand-off in one process: two goroutines sharing one Governor
	// (the common agent shape). Hand-off only: its pairs are governor's.
	gov1 := &contender{name: "governor-1proc", hasQueued: true, handOffOnly: true,
		acquire: govAcquire(func() *governor.Governor { return gs[0] })}

	// redislock: Obtain (a script: SET NX, or refresh when the token is
	// ours) and Release (a script: GET, compare, DEL); a waiter retries
	// every 10 ms (LinearBackoff, as its README's example).
	rl := redislock.New(rdb)
	ttl := leasetiming.DefaultTTL
	lock := &contender{name: "redislock",
		pair: func(ctx context.Context, key string) error {
			l, err := rl.Obtain(ctx, key, ttl, nil)
			if err != nil {
				return err
			}
			return l.Release(ctx)
		},
		acquire: func(ctx context.Context, key string, wait bool) (func() error, error) {
			var o *redislock.Options
			if wait {
				o = &redislock.Options{RetryStrategy: redislock.LinearBackoff(10 * time.Millisecond)}
			}
			l, err := rl.Obtain(ctx, key, ttl, o)
			if err != nil {
				return nil, err
			}
			return func() error { return l.Release(context.Background()) }, nil
		}}

	// redsync: SET NX PX to lock, a script to unlock; a waiter retries
	// after its default delay (50–250 ms, random).
	rs := redsync.New(goredis.NewPool(rdb))
	rsync := &contender{name: "redsync",
		pair: func(ctx context.Context, key string) error {
			m := rs.NewMutex(key, redsync.WithExpiry(ttl), redsync.WithTries(1))
			if err := m.LockContext(ctx); err != nil {
				return err
			}
			ok, err := m.UnlockContext(ctx)
			if err == nil && !ok {
				err = errors.New("unlock: not held")
			}
			return err
		},
		acquire: func(ctx context.Context, key string, wait bool) (func() error, error) {
			opts := []redsync.Option{redsync.WithExpiry(ttl)}
			if !wait {
				opts = append(opts, redsync.WithTries(1))
			} else {
				opts = append(opts, redsync.WithTries(1000))
			}
			m := rs.NewMutex(key, opts...)
			if err := m.LockContext(ctx); err != nil {
				return nil, err
			}
			return func() error { _, err := m.UnlockContext(context.Background()); return err }, nil
		}}
	all := []*contender{raw, gov, gov1, lock, rsync}
	for _, x := range all {
		x.rdb = rdb
	}
	return all, closeAll, nil
}

type queuedKey struct{}

// turnResult is one turn's figures: pairs per second, and the CPU time
// per pair of this process (the client) and of redis-server.
type turnResult struct {
	perSec, clientUS, serverUS float64
}

// measure runs x's pairs on par goroutines, each on its own key, for d.
func measure(ctx context.Context, x *contender, par int, d time.Duration, tag string) (turnResult, error) {
	c0, s0, err := cpuNow(ctx, x.rdb)
	if err != nil {
		return turnResult{}, err
	}
	var n atomic.Int64
	var wg sync.WaitGroup
	var first atomic.Pointer[error]
	stop := make(chan struct{})
	start := time.Now()
	for i := 0; i < par; i++ {
		key := fmt.Sprintf("peers-%s-%s-%d-%d", x.name, tag, par, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := x.pair(ctx, key); err != nil {
					first.CompareAndSwap(nil, &err)
					return
				}
				n.Add(1)
			}
		}()
	}
	time.Sleep(d)
	close(stop)
	wg.Wait()
	el := time.Since(start)
	if e := first.Load(); e != nil {
		return turnResult{}, *e
	}
	c1, s1, err := cpuNow(ctx, x.rdb)
	if err != nil {
		return turnResult{}, err
	}
	pairs := float64(max(n.Load(), 1))
	return turnResult{perSec: float64(n.Load()) / el.Seconds(),
		clientUS: (c1 - c0).Seconds() * 1e6 / pairs, serverUS: (s1 - s0).Seconds() * 1e6 / pairs}, nil
}

// cpuNow returns the CPU time (user and system) used so far by this
// process and by the redis-server behind rdb (INFO cpu).
func cpuNow(ctx context.Context, rdb *redis.Client) (client, server time.Duration, err error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, err
	}
	client = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	info, err := rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("INFO cpu: %s=%q: %w", k, v, err)
			}
			server += time.Duration(f * float64(time.Second))
		}
	}
	return client, server, nil
}

// handOffs measures n hand-offs of one lock between two holders: the
// holder releases once the next waiter waits; the latency runs from the
// release's start to the waiter's return.
func handOffs(ctx context.Context, x *contender, n int) ([]time.Duration, error) {
	key := "peers-handoff-" + x.name
	release, err := x.acquire(ctx, key, false)
	if err != nil {
		return nil, err
	}
	var lats []time.Duration
	for i := 0; i < n; i++ {
		queued := make(chan struct{})
		var once sync.Once
		wctx := context.WithValue(ctx, queuedKey{}, func() { once.Do(func() { close(queued) }) })
		type res struct {
			release func() error
			at      time.Time
			err     error
		}
		got := make(chan res, 1)
		go func() {
			rel, err := x.acquire(wctx, key, true)
			got <- res{rel, time.Now(), err}
		}()
		if x.hasQueued {
			<-queued
		} else {
			// The waiter has tried once and is in its retry sleep; a
			// random extra 0–20 ms samples every phase of its retries.
			time.Sleep(20*time.Millisecond + rand.N(20*time.Millisecond))
		}
		start := time.Now()
		if err := release(); err != nil {
			return nil, err
		}
		r := <-got
		if r.err != nil {
			return nil, r.err
		}
		lats = append(lats, r.at.Sub(start))
		release = r.release
	}
	return lats, release()
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	return sorted[int(q*float64(len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
