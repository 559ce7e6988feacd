// Command capleases measures one hot provider's grants with and without
// capacity leases, side by side in one run, on one redis-server it
// starts: PROCS processes of GOROUTINES goroutines each take a slot of
// the provider (limit SLOTS), hold it HOLD, release it, again, for
// DURATION; once through Governor.Acquire and Lease.Release (two round
// trips a grant), once through a gate (governor/capacity/gate) granting
// from its process's capacity lease.
//
//	go run ./bench/capleases                      # 16 × 32, 512 slots, 1ms held, 5s each
//	go run ./bench/capleases -hold 0 -duration 10s
//
// It prints fleet grants/s, Redis round trips per grant (counted by a
// client hook in each process, a pipeline as one) and the slots in use
// on average over the limit (sampled every 5ms in each process).
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/capacity/gate"
	"github.com/governor-dev/governor/governor/redisbackend"
	"github.com/governor-dev/governor/internal/redistest"
)

const childEnv = "CAPLEASES_CHILD"

type config struct {
	procs, goroutines, slots int
	hold, duration           time.Duration
}

func main() {
	var c config
	flag.IntVar(&c.procs, "procs", 16, "processes")
	flag.IntVar(&c.goroutines, "goroutines", 32, "goroutines per process")
	flag.IntVar(&c.slots, "slots", 512, "the provider's max_concurrency")
	flag.DurationVar(&c.hold, "hold", time.Millisecond, "how long each grant is held")
	flag.DurationVar(&c.duration, "duration", 5*time.Second, "how long each way runs")
	flag.Parse()
	if mode := os.Getenv(childEnv); mode != "" {
		if err := child(mode, c); err != nil {
			fmt.Fprintln(os.Stderr, "capleases child:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "capleases:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	dir, err := os.MkdirTemp("", "capleases")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	s, err := redistest.StartServer(dir)
	if err != nil {
		return err
	}
	defer s.Stop()
	fmt.Printf("%d processes × %d goroutines, %d slots, each grant held %v, %v per way, one redis-server\n\n", c.procs, c.goroutines,
		c.slots, c.hold, c.duration)
	fmt.Println("| way | fleet grants/s | round trips per grant | slots in use / limit |")
	fmt.Println("| --- | ---: | ---: | ---: |")
	var base float64
	for _, mode := range []string{"central", "leases"} {
		r, err := fleet(c, s.Addr, mode)
		if err != nil {
			return err
		}
		ratio := ""
		if mode == "central" {
			base = r.grantsPerSec
		} else if base > 0 {
			ratio = fmt.Sprintf(" (%.1f×)", r.grantsPerSec/base)
		}
		fmt.Printf("| %s | %.0f%s | %.4f | %.1f%% |\n", mode, r.grantsPerSec, ratio, r.tripsPerGrant, 100*r.inUse/float64(c.slots))
	}
	return nil
}

type result struct{ grantsPerSec, tripsPerGrant, inUse float64 }

// fleet runs c.procs children in mode and adds up what they report.
func fleet(c config, addr, mode string) (result, error) {
	start := time.Now().Add(2 * time.Second) // every child ready by then
	var cmds []*exec.Cmd
	var outs []*bufio.Scanner
	for i := range c.procs {
		cmd := exec.Command(os.Args[0], os.Args[1:]...)
		cmd.Env = append(os.Environ(), childEnv+"="+mode, "CAPLEASES_ADDR="+addr, "CAPLEASES_PROJECT=bench-"+mode,
			"CAPLEASES_START="+strconv.FormatInt(start.UnixNano(), 10), "CAPLEASES_WHO="+strconv.Itoa(i))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			return result{}, err
		}
		if err := cmd.Start(); err != nil {
			return result{}, err
		}
		cmds = append(cmds, cmd)
		outs = append(outs, bufio.NewScanner(out))
	}
	var grants, trips int64
	var inUse float64
	for i, cmd := range cmds {
		for outs[i].Scan() {
			var g, t int64
			var u float64
			if _, err := fmt.Sscanf(outs[i].Text(), "%d %d %g", &g, &t, &u); err == nil {
				grants, trips, inUse = grants+g, trips+t, inUse+u
			}
		}
		if err := cmd.Wait(); err != nil {
			return result{}, fmt.Errorf("child %d: %w", i, err)
		}
	}
	if grants == 0 {
		return result{}, fmt.Errorf("%s: no grants", mode)
	}
	return result{float64(grants) / c.duration.Seconds(), float64(trips) / float64(grants), inUse}, nil
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

// child takes grants in mode for c.duration from the start instant, and
// prints "GRANTS TRIPS MEAN_IN_USE" for the measured span.
func child(mode string, c config) error {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("CAPLEASES_ADDR"), PoolSize: 4 * c.goroutines})
	var cnt counter
	rdb.AddHook(&cnt)
	b, err := redisbackend.New(ctx, rdb)
	if err != nil {
		return err
	}
	project, res := os.Getenv("CAPLEASES_PROJECT"), "provider:hot"
	ns, _ := strconv.ParseInt(os.Getenv("CAPLEASES_START"), 10, 64)
	start := time.Unix(0, ns)
	var take func(ctx context.Context) (func(), error)
	var closeFn func() error
	switch mode {
	case "central":
		g, err := governor.New(b, governor.Options{Project: project, Session: "bench-" + os.Getenv("CAPLEASES_WHO")})
		if err != nil {
			return err
		}
		closeFn = g.Close
		take = func(ctx context.Context) (func(), error) {
			l, err := g.Acquire(ctx, res, governor.AcquireOptions{Limit: c.slots, Mode: governor.Wait})
			if err != nil {
				return nil, err
			}
			return func() { _ = l.Release() }, nil
		}
	case "leases":
		gt, err := gate.New(ctx, b, gate.Options{Key: governor.Key{Project: project, Resource: res}, Limit: c.slots})
		if err != nil {
			return err
		}
		closeFn = gt.Close
		take = func(ctx context.Context) (func(), error) {
			gr, err := gt.Acquire(ctx)
			if err != nil {
				return nil, err
			}
			return gr.Release, nil
		}
	default:
		return fmt.Errorf("mode %q", mode)
	}
	time.Sleep(time.Until(start))
	end := start.Add(c.duration)
	var grants, inUse atomic.Int64
	var wg sync.WaitGroup
	trips0 := cnt.n.Load()
	for range c.goroutines {
		wg.Go(func() {
			for time.Now().Before(end) {
				wctx, cancel := context.WithDeadline(ctx, end)
				release, err := take(wctx)
				cancel()
				if err != nil {
					continue
				}
				inUse.Add(1)
				grants.Add(1)
				if c.hold > 0 {
					time.Sleep(c.hold)
				}
				inUse.Add(-1)
				release()
			}
		})
	}
	var samples, sum int64
	for t := time.NewTicker(5 * time.Millisecond); time.Now().Before(end); <-t.C {
		samples++
		sum += inUse.Load()
	}
	wg.Wait()
	trips := cnt.n.Load() - trips0
	fmt.Printf("%d %d %g\n", grants.Load(), trips, float64(sum)/float64(max(samples, 1)))
	return closeFn()
}
