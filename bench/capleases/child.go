package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/capacity"
	"github.com/governor-dev/governor/governor/capacity/gate"
	"github.com/governor-dev/governor/governor/redisbackend"
)

// mono is the machine's monotonic clock (ns), the same in every process.
func mono() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// peakInUse merges the intervals of files and returns the most in use
// at once. An end and a start at the same nanosecond count the end
// first: the release was logged before the grant it made room for.
func peakInUse(files []string) (int, error) {
	type ev struct {
		at int64
		d  int
	}
	var evs []ev
	for _, f := range files {
		ivs, err := readIntervals(f)
		if err != nil {
			return 0, err
		}
		for _, iv := range ivs {
			if iv.end < iv.start {
				return 0, fmt.Errorf("%s: an interval ends before it starts: %+v", f, iv)
			}
			evs = append(evs, ev{iv.start, 1}, ev{iv.end, -1})
		}
	}
	slices.SortFunc(evs, func(a, b ev) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.d, b.d)
	})
	cur, peak := 0, 0
	for _, e := range evs {
		cur += e.d
		peak = max(peak, cur)
	}
	return peak, nil
}

// busiestWindow is the most grants (intervals) of files started in any
// window of length w, each window starting at a grant: every sliding
// window is checked. A file ending in .tokens holds uses instead (an
// interval's end is its tokens): their tokens are counted.
func busiestWindow(files []string, w time.Duration) (int64, error) {
	var starts []interval // start, and what it counts
	for _, f := range files {
		ivs, err := readIntervals(f)
		if err != nil {
			return 0, err
		}
		for _, iv := range ivs {
			n := int64(1)
			if strings.HasSuffix(f, ".tokens") {
				n = iv.end
			}
			starts = append(starts, interval{iv.start, n})
		}
	}
	slices.SortFunc(starts, func(a, b interval) int { return cmp.Compare(a.start, b.start) })
	var most, sum int64
	for i, j := 0, 0; i < len(starts); i++ {
		sum += starts[i].end
		for starts[i].start-starts[j].start >= w.Nanoseconds() {
			sum -= starts[j].end
			j++
		}
		most = max(most, sum)
	}
	return most, nil
}

// counter counts the client's round trips.
type counter struct{ n atomic.Int64 }

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.n.Add(1); return next(ctx, cmd) }
}
func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { c.n.Add(1); return next(ctx, cmds) }
}

// taker takes one slot of the provider and returns its release, which
// returns the tokens the grant used (0 without -tpm).
type taker struct {
	take    func(ctx context.Context) (func() int64, error)
	inUse   func() (share, inUse int) // the gate's; nil centrally
	closeFn func() error
}

func newTaker(ctx context.Context, mode string, c config, b governor.Backend) (taker, error) {
	project, res := os.Getenv("CAPLEASES_PROJECT"), "provider:hot"
	if c.rpm > 0 {
		return holdTaker(mode, c, project, res, b)
	}
	switch mode {
	case "central":
		g, err := governor.New(b, governor.Options{Project: project, Session: "bench-" + os.Getenv("CAPLEASES_WHO")})
		if err != nil {
			return taker{}, err
		}
		return taker{closeFn: g.Close, take: func(ctx context.Context) (func() int64, error) {
			l, err := g.Acquire(ctx, res, governor.AcquireOptions{Limit: c.slots, Mode: governor.Wait})
			if err != nil {
				return nil, err
			}
			return func() int64 { _ = l.Release(); return 0 }, nil
		}}, nil
	case "leases":
		lease := max(gate.DefaultLease, 3*c.refresh)
		gt, err := gate.New(ctx, b, gate.Options{Key: governor.Key{Project: project, Resource: res}, Limit: c.slots,
			Refresh: c.refresh, Lease: lease})
		if err != nil {
			return taker{}, err
		}
		return taker{closeFn: gt.Close, inUse: gt.Share, take: func(ctx context.Context) (func() int64, error) {
			gr, err := gt.Acquire(ctx)
			if err != nil {
				return nil, err
			}
			return func() int64 { gr.Release(); return 0 }, nil
		}}, nil
	}
	return taker{}, fmt.Errorf("mode %q", mode)
}

// holdTaker takes a slot and a request of the provider's RPM (and with
// -tpm its token estimate) in one Governor.Hold, as Provider.Do does,
// and settles the tokens used at release: centrally, or (leases) from
// the process's capacity shares of each (Options.Capacity).
func holdTaker(mode string, c config, project, res string, b governor.Backend) (taker, error) {
	o := governor.Options{Project: project, Session: "bench-" + os.Getenv("CAPLEASES_WHO")}
	if mode == "leases" {
		o.Capacity = map[string]capacity.Config{res: {Lease: max(capacity.DefaultLease, 3*c.refresh), Refresh: c.refresh}}
	}
	g, err := governor.New(b, o)
	if err != nil {
		return taker{}, err
	}
	ask := governor.Ask{Mode: governor.Wait,
		Wants: []governor.Want{{Resource: res, AcquireOptions: governor.AcquireOptions{Limit: c.slots, Mode: governor.Wait}}},
		Rates: []governor.RateRequest{{Key: governor.Key{Project: project, Resource: res}, Requests: c.requests(), Tokens: c.tokensLimit(),
			NRequests: 1}}}
	if c.tpm > 0 {
		ask.Rates[0].NTokens = c.tokens
	}
	p := g.Provider(strings.TrimPrefix(res, "provider:"), governor.ProviderLimits{Requests: c.requests(), Tokens: c.tokensLimit()})
	var calls atomic.Int64
	return taker{closeFn: g.Close, take: func(ctx context.Context) (func() int64, error) {
		h, err := g.Hold(ctx, ask)
		if err != nil {
			return nil, err
		}
		return func() int64 {
			var used int64
			if c.tpm > 0 {
				used = c.used(int(calls.Add(1)))
				_ = p.SettleTokens(context.Background(), c.tokens, used)
			}
			h.ReleaseWith(nil)
			return used
		}, nil
	}}, nil
}

// child takes grants in mode from the start instant for c.warmup and
// then c.duration, writes every grant's interval to CAPLEASES_OUT, and
// prints "GRANTS TRIPS WORK_NS GATE_IN_USE SHARE" for the measured span
// (the gate's means sampled every 5ms; 0 centrally).
func child(mode string, c config) error {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("CAPLEASES_ADDR"), PoolSize: 4 * c.goroutines})
	var cnt counter
	rdb.AddHook(&cnt)
	b, err := redisbackend.New(ctx, rdb)
	if err != nil {
		return err
	}
	tk, err := newTaker(ctx, mode, c, b)
	if err != nil {
		return err
	}
	ns, _ := strconv.ParseInt(os.Getenv("CAPLEASES_START"), 10, 64)
	time.Sleep(time.Until(time.Unix(0, ns)))
	// The measured span, on the monotonic clock the intervals use.
	from := mono() + c.warmup.Nanoseconds()
	to := from + c.duration.Nanoseconds()
	var grants, trips0, tokens atomic.Int64
	ivs := make([][]interval, c.goroutines)
	uses := make([][]interval, c.goroutines) // start, and the tokens used
	var wg sync.WaitGroup
	for i := range c.goroutines {
		wg.Go(func() {
			for mono() < to {
				wctx, cancel := context.WithDeadline(ctx, time.Now().Add(time.Duration(to-mono())))
				release, err := tk.take(wctx)
				cancel()
				if err != nil {
					continue
				}
				t0 := mono()
				if t0 >= from && t0 < to {
					grants.Add(1)
				}
				if c.hold > 0 {
					time.Sleep(c.hold)
				}
				ivs[i] = append(ivs[i], interval{t0, mono()})
				used := release()
				uses[i] = append(uses[i], interval{t0, used})
				if t0 >= from && t0 < to {
					tokens.Add(used)
				}
			}
		})
	}
	time.Sleep(time.Duration(from - mono()))
	trips0.Store(cnt.n.Load())
	var samples int64
	var inUse, share float64
	for t := time.NewTicker(5 * time.Millisecond); mono() < to; <-t.C {
		if tk.inUse != nil {
			s, u := tk.inUse()
			samples, share, inUse = samples+1, share+float64(s), inUse+float64(u)
		}
	}
	trips := cnt.n.Load() - trips0.Load()
	wg.Wait()
	var all []interval
	var work int64
	for _, g := range ivs {
		for _, iv := range g {
			work += max(0, min(iv.end, to)-max(iv.start, from)) // the part inside the measured span
		}
		all = append(all, g...)
	}
	if err := writeIntervals(os.Getenv("CAPLEASES_OUT"), all); err != nil {
		return err
	}
	if err := writeIntervals(os.Getenv("CAPLEASES_OUT")+".tokens", slices.Concat(uses...)); err != nil {
		return err
	}
	n := float64(max(samples, 1))
	fmt.Printf("%d %d %d %g %g %d\n", grants.Load(), trips, work, inUse/n, share/n, tokens.Load())
	return tk.closeFn()
}
