// Command capleases measures one hot provider's grants with and without
// capacity leases, side by side in one run, on one redis-server it
// starts: PROCS processes (real ones: this binary, re-run) of
// GOROUTINES goroutines each take a slot of the provider (limit SLOTS),
// hold it HOLD, release it, again, for WARMUP and then DURATION; once
// through Governor.Acquire and Lease.Release (two round trips a grant),
// once through a gate (governor/capacity/gate, refreshed every REFRESH)
// granting from its process's capacity lease.
//
//	go run ./bench/capleases                      # 16 × 32, 512 slots, 1ms held, 5s each after 10s
//	go run ./bench/capleases -procs 4 -slots 64   # fairness: 25% of grants each
//	go run ./bench/capleases -rpm 100000 -duration 50s  # and a request of 100,000 RPM each
//	go run ./bench/capleases -rpm 100000 -tpm 2000000 -refresh 2s -duration 45s  # and 100 tokens of 2M TPM each
//
// With -rpm, each grant is a Governor.Hold of a slot and a request (as
// Provider.Do takes them), centrally or from the process's shares of
// both (Options.Capacity), and every sliding 60 s window of grants over
// the whole run is counted: the bench fails if one holds more than the
// rate and its burst (-burst, default a second of the rate), the central
// limiter's own bound.
//
// With -tpm, each grant also takes -tokens tokens (the estimate) of the
// provider's tokens per minute (burst -tburst, default a second of it),
// and its release settles what it used (Provider.SettleTokens): the
// estimate and a half more or less, cycling, the estimate on average.
// Every sliding 60 s window of the tokens used (each grant's actual, at
// its start) is counted: the bench fails if one holds more than the
// rate and its burst and the overshoot of the grants in flight at
// either end.
//
// Over the measured DURATION it prints fleet grants/s, Redis round trips
// per grant (counted by a client hook in each process, a pipeline as
// one), each process's part of the grants (least and most), and three
// utilisations of the limit: the slots the gates hold in use (granted
// and not yet released, sampled every 5ms in each process), the shares
// the gates hold, and the work: the time the goroutines spent inside
// their grants, from the intervals each grant's work logged. The same
// intervals, merged across every process over the whole run, give the
// most slots ever in use at once, which must never pass the limit.
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/capacity/gate"
	"github.com/governor-dev/governor/internal/redistest"
)

const childEnv = "CAPLEASES_CHILD"

type config struct {
	procs, goroutines, slots        int
	hold, warmup, duration, refresh time.Duration
	rpm, burst                      int64
	tpm, tburst, tokens             int64
}

// tokensLimit is the provider's tokens limit (-tpm, -tburst).
func (c config) tokensLimit() governor.RateLimit {
	return governor.RateLimit{Rate: c.tpm, Period: time.Minute, Burst: c.tburst}
}

// used is what grant i used of its estimate c.tokens: half of it more
// or less, cycling, the estimate on average.
func (c config) used(i int) int64 {
	return c.tokens + (int64(i%21)-10)*c.tokens/20
}

// requests is the provider's requests limit (-rpm, -burst).
func (c config) requests() governor.RateLimit {
	return governor.RateLimit{Rate: c.rpm, Period: time.Minute, Burst: c.burst}
}

func main() {
	var c config
	flag.IntVar(&c.procs, "procs", 16, "processes")
	flag.IntVar(&c.goroutines, "goroutines", 32, "goroutines per process")
	flag.IntVar(&c.slots, "slots", 512, "the provider's max_concurrency")
	flag.DurationVar(&c.hold, "hold", time.Millisecond, "how long each grant is held")
	flag.DurationVar(&c.refresh, "refresh", gate.DefaultRefresh, "the gates' refresh interval")
	flag.DurationVar(&c.warmup, "warmup", 0, "how long each way runs before it is measured (default two refresh intervals)")
	flag.DurationVar(&c.duration, "duration", 5*time.Second, "how long each way is measured")
	flag.Int64Var(&c.rpm, "rpm", 0, "the provider's requests_per_minute (0: none); with it each grant is a Governor.Hold of a slot and a request")
	flag.Int64Var(&c.burst, "burst", 0, "the requests limit's burst (default a second of -rpm)")
	flag.Int64Var(&c.tpm, "tpm", 0, "the provider's tokens_per_minute (0: none); with it each grant also takes -tokens tokens and settles its use")
	flag.Int64Var(&c.tburst, "tburst", 0, "the tokens limit's burst (default a second of -tpm)")
	flag.Int64Var(&c.tokens, "tokens", 100, "each grant's token estimate (with -tpm)")
	flag.Parse()
	if c.tpm > 0 && c.rpm == 0 {
		fmt.Fprintln(os.Stderr, "capleases: -tpm needs -rpm (a grant is a Hold of a slot and a request)")
		os.Exit(2)
	}
	if c.tburst == 0 {
		c.tburst = max(c.tpm/60, 1)
	}
	if c.warmup == 0 {
		c.warmup = 2 * c.refresh
	}
	if c.burst == 0 {
		c.burst = max(c.rpm/60, 1)
	}
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
	fmt.Printf("%d processes × %d goroutines, %d slots, each grant held %v, refresh %v, measured %v after %v, one redis-server\n",
		c.procs, c.goroutines, c.slots, c.hold, c.refresh, c.duration, c.warmup)
	if c.rpm > 0 {
		fmt.Printf("each grant a slot and a request of %d per minute (burst %d), through Governor.Hold\n", c.rpm, c.burst)
	}
	if c.tpm > 0 {
		fmt.Printf("and %d tokens of %d per minute (burst %d), each grant's use settled at its release\n", c.tokens, c.tpm, c.tburst)
	}
	fmt.Println()
	fmt.Println("| way | fleet grants/s | round trips per grant | grants per process (least–most) | most in use at once | " +
		"gates' slots in use / limit | shares / limit | work in grants / limit |")
	fmt.Println("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	var base float64
	var windows []result
	for _, mode := range []string{"central", "leases"} {
		r, err := fleet(c, s.Addr, mode, dir)
		if err != nil {
			return err
		}
		ratio := ""
		if mode == "central" {
			base = r.grantsPerSec
		} else if base > 0 {
			ratio = fmt.Sprintf(" (%.1f×)", r.grantsPerSec/base)
		}
		gates, shares := "–", "–"
		if mode == "leases" && c.rpm == 0 { // a Hold's slots are not sampled
			gates, shares = pct(r.gateInUse/float64(c.slots)), pct(r.share/float64(c.slots))
		}
		fmt.Printf("| %s | %.0f%s | %.5f | %s–%s | %d of %d | %s | %s | %s |\n", mode, r.grantsPerSec, ratio, r.tripsPerGrant,
			pct(r.least), pct(r.most), r.peak, c.slots, gates, shares, pct(r.work/float64(c.slots)))
		if r.peak > c.slots {
			return fmt.Errorf("%s: %d slots in use at once, over the limit %d", mode, r.peak, c.slots)
		}
		windows = append(windows, r)
	}
	if c.rpm > 0 {
		fmt.Printf("\n| way | requests/s measured | utilisation of the RPM | busiest 60 s window (whole run) | of the RPM |\n| --- | ---: | ---: | ---: | ---: |\n")
		for i, r := range windows {
			fmt.Printf("| %s | %.0f | %s | %d | %.3f× |\n", []string{"central", "leases"}[i], r.grantsPerSec,
				pct(r.grantsPerSec*60/float64(c.rpm)), r.busiest, float64(r.busiest)/float64(c.rpm))
			// The central limiter's own bound: a minute's rate and its burst.
			if r.busiest > c.rpm+c.burst {
				return fmt.Errorf("%d requests in 60 s, over the rate and burst %d", r.busiest, c.rpm+c.burst)
			}
		}
	}
	if c.tpm > 0 {
		fmt.Printf("\n| way | tokens/s measured | utilisation of the TPM | busiest 60 s window of tokens (whole run) | of the TPM |\n| --- | ---: | ---: | ---: | ---: |\n")
		// The central limiter's bound, and the overshoot (half an
		// estimate) of the grants in flight at either end of the window.
		bound := c.tpm + c.tburst + int64(2*c.procs*c.goroutines)*c.tokens/2
		for i, r := range windows {
			fmt.Printf("| %s | %.0f | %s | %d | %.3f× |\n", []string{"central", "leases"}[i], r.tokensPerSec,
				pct(r.tokensPerSec*60/float64(c.tpm)), r.busiestTokens, float64(r.busiestTokens)/float64(c.tpm))
			if r.busiestTokens > bound {
				return fmt.Errorf("%d tokens in 60 s, over the rate, burst and grants in flight %d", r.busiestTokens, bound)
			}
		}
	}
	return nil
}

func pct(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

// result is one way's figures, over the measured span but peak (the
// whole run).
type result struct {
	grantsPerSec, tripsPerGrant float64
	least, most                 float64 // a process's part of the grants
	gateInUse, share, work      float64 // mean slots
	peak                        int
	busiest                     int64 // the most grants started in any 60 s
	tokensPerSec                float64
	busiestTokens               int64 // the most tokens used by grants started in any 60 s
}

// report is one child's line: "GRANTS TRIPS WORK_NS GATE_IN_USE SHARE
// TOKENS".
type report struct {
	grants, trips, workNS int64
	gateInUse, share      float64
	tokens                int64
}

// fleet runs c.procs children in mode and adds up what they report.
func fleet(c config, addr, mode, dir string) (result, error) {
	start := time.Now().Add(2 * time.Second) // every child ready by then
	var cmds []*exec.Cmd
	var outs []*bufio.Scanner
	var files []string
	for i := range c.procs {
		file := filepath.Join(dir, fmt.Sprintf("%s-%d.intervals", mode, i))
		cmd := exec.Command(os.Args[0], os.Args[1:]...)
		cmd.Env = append(os.Environ(), childEnv+"="+mode, "CAPLEASES_ADDR="+addr, "CAPLEASES_PROJECT=bench-"+mode,
			"CAPLEASES_START="+strconv.FormatInt(start.UnixNano(), 10), "CAPLEASES_WHO="+strconv.Itoa(i), "CAPLEASES_OUT="+file)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			return result{}, err
		}
		if err := cmd.Start(); err != nil {
			return result{}, err
		}
		cmds, outs, files = append(cmds, cmd), append(outs, bufio.NewScanner(out)), append(files, file)
	}
	var sum report
	var parts []int64
	for i, cmd := range cmds {
		var r report
		for outs[i].Scan() {
			if _, err := fmt.Sscanf(outs[i].Text(), "%d %d %d %g %g %d", &r.grants, &r.trips, &r.workNS, &r.gateInUse, &r.share, &r.tokens); err != nil {
				return result{}, fmt.Errorf("child %d said %q: %w", i, outs[i].Text(), err)
			}
		}
		if err := cmd.Wait(); err != nil {
			return result{}, fmt.Errorf("child %d: %w", i, err)
		}
		sum = report{sum.grants + r.grants, sum.trips + r.trips, sum.workNS + r.workNS, sum.gateInUse + r.gateInUse, sum.share + r.share,
			sum.tokens + r.tokens}
		parts = append(parts, r.grants)
	}
	if sum.grants == 0 {
		return result{}, fmt.Errorf("%s: no grants", mode)
	}
	peak, err := peakInUse(files)
	if err != nil {
		return result{}, err
	}
	busiest, err := busiestWindow(files, time.Minute)
	if err != nil {
		return result{}, err
	}
	var uses []string
	for _, f := range files {
		uses = append(uses, f+".tokens")
	}
	busiestTokens, err := busiestWindow(uses, time.Minute)
	if err != nil {
		return result{}, err
	}
	least, most := sum.grants, int64(0)
	for _, p := range parts {
		least, most = min(least, p), max(most, p)
	}
	g := float64(sum.grants)
	return result{grantsPerSec: g / c.duration.Seconds(), tripsPerGrant: float64(sum.trips) / g,
		least: float64(least) / g, most: float64(most) / g, gateInUse: sum.gateInUse, share: sum.share,
		work: float64(sum.workNS) / float64(c.duration.Nanoseconds()), peak: peak, busiest: busiest,
		tokensPerSec: float64(sum.tokens) / c.duration.Seconds(), busiestTokens: busiestTokens}, nil
}

// An interval is one grant's work, on the machine's monotonic clock
// (ns): from after its grant to before its release.
type interval struct{ start, end int64 }

// writeIntervals writes ivs to path, each as two little-endian int64.
func writeIntervals(path string, ivs []interval) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	if err := binary.Write(w, binary.LittleEndian, ivs); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readIntervals reads what writeIntervals wrote.
func readIntervals(path string) ([]interval, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b)%16 != 0 {
		return nil, fmt.Errorf("%s: %d bytes, not whole intervals", path, len(b))
	}
	ivs := make([]interval, len(b)/16)
	for i := range ivs {
		ivs[i] = interval{int64(binary.LittleEndian.Uint64(b[16*i:])), int64(binary.LittleEndian.Uint64(b[16*i+8:]))}
	}
	return ivs, nil
}
